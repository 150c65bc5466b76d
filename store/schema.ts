/**
 * The service database schema (drizzle). Migrations under store/migrations are generated from this file
 * with `npm run db:generate` and committed; they are applied at boot.
 */
import { sql } from 'drizzle-orm';
import { blob, index, integer, primaryKey, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core';
import { APPROVAL_DECISIONS, STORED_CASE_STATUSES, STORED_REVIEW_STATUSES } from '../chains/domain/approvals.ts';
import { EVENT_TYPES, SIGNATURE_FORMATS } from '../chains/domain/events.ts';
import {
  FAILURE_STAGES,
  INTENT_KINDS,
  PAYMENT_FAMILIES,
  SOLANA_NETWORKS,
  TRANSACTION_STATUSES,
} from '../chains/domain/payments.ts';
import { POLICY_LAYERS, POLICY_STATUSES, PRODUCTION_REVIEW_STATUSES } from '../chains/domain/policies.ts';
import { KEY_ENVIRONMENTS, PLANS } from '../chains/domain/projects.ts';
import {
  CUSTODY_KINDS,
  SCHEMES,
  USER_IDENTIFIER_TYPES,
  WALLET_STATUSES,
  WALLET_TYPES,
} from '../chains/domain/wallets.ts';
import { YIELD_ACTIONS, YIELD_STATUSES } from '../chains/domain/yield.ts';

/** A partner. Deleting one sets `deletedAt`: its keys stop working, its wallets stay. */
export const projects = sqliteTable('projects', {
  id: text('id').primaryKey(),
  name: text('name').notNull(),
  plan: text('plan', { enum: PLANS }).notNull(),
  /** The project's own per-key limit; used by scale and enterprise plans. */
  rateLimitPerMinute: integer('rate_limit_per_minute'),
  /** JSON array of CIDR strings; empty means no restriction. */
  ipAllowlist: text('ip_allowlist').notNull().default('[]'),
  createdAt: text('created_at').notNull(),
  deletedAt: text('deleted_at'),
});

/** API keys are stored as the SHA-256 of the secret; the secret itself is shown once. */
export const apiKeys = sqliteTable(
  'api_keys',
  {
    id: text('id').primaryKey(),
    projectId: text('project_id')
      .notNull()
      .references(() => projects.id),
    environment: text('environment', { enum: KEY_ENVIRONMENTS }).notNull(),
    secretHash: text('secret_hash').notNull(),
    createdAt: text('created_at').notNull(),
    rotatedAt: text('rotated_at'),
  },
  (t) => [uniqueIndex('api_keys_secret_hash').on(t.secretHash), index('api_keys_project').on(t.projectId)],
);

export const wallets = sqliteTable(
  'wallets',
  {
    id: text('id').primaryKey(),
    projectId: text('project_id')
      .notNull()
      .references(() => projects.id),
    type: text('type', { enum: WALLET_TYPES }).notNull(),
    scheme: text('scheme', { enum: SCHEMES }).notNull(),
    status: text('status', { enum: WALLET_STATUSES }).notNull(),
    address: text('address'),
    publicKey: text('public_key'),
    userIdentifier: text('user_identifier').notNull(),
    userIdentifierType: text('user_identifier_type', { enum: USER_IDENTIFIER_TYPES }).notNull(),
    cosmosPrefix: text('cosmos_prefix'),
    /** `managed`: both shares in the enclave. `pregen`: only the service share (legacy flow). */
    custody: text('custody', { enum: CUSTODY_KINDS }).notNull().default('managed'),
    /** Set when a user claimed the wallet: REST signing and share migration refuse it from then on. */
    claimedAt: text('claimed_at'),
    /** The user the wallet was claimed into (`wallet.pregen_claimed` carries it). */
    claimedByUserId: text('claimed_by_user_id'),
    /** Set when a pre-generated wallet's user share was migrated into the enclave: it signs over REST. */
    shareMigratedAt: text('share_migrated_at'),
    createdAt: text('created_at').notNull(),
    updatedAt: text('updated_at').notNull(),
    /** Monotonic insertion order across the table: list order and cursor position. */
    seq: integer('seq').notNull(),
  },
  (t) => [
    uniqueIndex('wallets_identity').on(t.projectId, t.userIdentifierType, t.userIdentifier, t.type, t.scheme),
    uniqueIndex('wallets_seq').on(t.seq),
    index('wallets_project_seq').on(t.projectId, t.seq),
    index('wallets_project_address').on(t.projectId, t.address),
    index('wallets_project_user').on(t.projectId, t.userIdentifier, t.seq),
  ],
);

/**
 * One row per actor: its state in a format this project owns (`{value, context}` JSON, see actors/README.md),
 * the machine and the machine version that wrote it, written in the same transaction as the row it describes.
 */
export const actorSnapshots = sqliteTable(
  'actor_snapshots',
  {
    actorId: text('actor_id').primaryKey(),
    machine: text('machine').notNull(),
    machineVersion: integer('machine_version').notNull(),
    snapshot: text('snapshot').notNull(),
    /** The state value as text (`creating`, `a.b`): what the operator lists actors by. */
    state: text('state'),
    /** 1 when the actor reached a final state (or was abandoned): nothing runs it again. */
    done: integer('done').notNull().default(0),
    /** Epoch milliseconds at which the host sends the actor a WAKE event; null when nothing is due. */
    wakeAt: integer('wake_at'),
    /**
     * Committed steps so far. Every write is conditional on the step it read (optimistic concurrency), so two
     * writers of one actor (two processes, later) can never both commit a step.
     */
    step: integer('step').notNull().default(0),
    /** Set when the actor's steps kept failing: it is not run until the operator retries or abandons it. */
    faultedAt: text('faulted_at'),
    /** Why (an error message, never a cause chain). */
    faultReason: text('fault_reason'),
    /** Set when the operator abandoned the actor (then `done` is 1). */
    abandonedAt: text('abandoned_at'),
    updatedAt: text('updated_at').notNull(),
  },
  (t) => [
    index('actor_snapshots_live').on(t.done).where(sql`done = 0`),
    index('actor_snapshots_due').on(t.wakeAt).where(sql`wake_at is not null and done = 0 and faulted_at is null`),
    index('actor_snapshots_faulted').on(t.faultedAt).where(sql`faulted_at is not null`),
    index('actor_snapshots_machine_state').on(t.machine, t.state, t.actorId).where(sql`done = 0`),
  ],
);

/**
 * The actors' durable inbox. An external event is recorded here in the transaction that applies it (`applied`),
 * so a duplicate event id is ignored; an event for an actor that cannot run now (faulted) is stored `pending` and
 * applied, in `seq` order, when the actor runs again. Rows of a finished actor are deleted with it.
 */
export const actorInbox = sqliteTable(
  'actor_inbox',
  {
    seq: integer('seq').primaryKey({ autoIncrement: true }),
    actorId: text('actor_id').notNull(),
    eventId: text('event_id').notNull(),
    /** The event's JSON while pending; null once applied (only the id is kept, for deduplication). */
    event: text('event'),
    status: text('status', { enum: ['pending', 'applied'] }).notNull(),
    createdAt: text('created_at').notNull(),
  },
  (t) => [
    uniqueIndex('actor_inbox_event').on(t.actorId, t.eventId),
    index('actor_inbox_pending').on(t.actorId, t.seq).where(sql`status = 'pending'`),
  ],
);

/**
 * Effect intents: what an actor's committed state asked the host to do (an invoked source with its input).
 * Written in the transaction that entered the state, dispatched only after it commits, deleted in the
 * transaction that applies the effect's outcome (or leaves the state). A row found at start is an effect that
 * may have been interrupted by a crash.
 */
export const actorEffects = sqliteTable(
  'actor_effects',
  {
    /** `<actorId>:<step>:<n>`: the effect's idempotency key, handed to the effect. */
    key: text('key').primaryKey(),
    actorId: text('actor_id').notNull(),
    /** The XState invoke id: the outcome comes back as `xstate.done.actor.<invokeId>` / `xstate.error.actor.<invokeId>`. */
    invokeId: text('invoke_id').notNull(),
    src: text('src').notNull(),
    input: text('input').notNull(),
    createdAt: text('created_at').notNull(),
  },
  (t) => [index('actor_effects_actor').on(t.actorId)],
);

/**
 * Transactional outbox: events written in the same transaction as the state change they describe, each with one
 * `webhook_deliveries` row per endpoint that selected it. Kept for a retention period after that.
 */
export const outbox = sqliteTable('outbox', {
  seq: integer('seq').primaryKey({ autoIncrement: true }),
  /** `evt_<uuid>`: the webhook envelope id. */
  id: text('id').notNull().unique(),
  projectId: text('project_id').notNull(),
  apiKeyId: text('api_key_id'),
  type: text('type', { enum: EVENT_TYPES }).notNull(),
  data: text('data').notNull(),
  createdAt: text('created_at').notNull(),
  /** Unused since deliveries have their own rows (`webhook_deliveries`); kept to avoid rebuilding the table. */
  deliveredAt: text('delivered_at'),
});

/**
 * Transaction records (the spec's transaction history): one per broadcasting `transfer`, `sign-transaction` with
 * `broadcast: true`, or yield step. Written with its payment actor's snapshot in one transaction (the actor's id
 * is the record's id).
 */
export const transactions = sqliteTable(
  'transactions',
  {
    id: text('id').primaryKey(),
    projectId: text('project_id').notNull(),
    apiKeyId: text('api_key_id'),
    walletId: text('wallet_id').notNull(),
    intentKind: text('intent_kind', { enum: INTENT_KINDS }).notNull(),
    /** The wallet type (`EVM`, `SOLANA`). */
    type: text('type', { enum: PAYMENT_FAMILIES }).notNull(),
    /** `evm:<chainId>` or `solana:<network>`: the chain the hold and the poller are keyed by. */
    chainKey: text('chain_key').notNull(),
    chainId: text('chain_id'),
    network: text('network', { enum: SOLANA_NETWORKS }),
    status: text('status', { enum: TRANSACTION_STATUSES }).notNull(),
    hash: text('hash'),
    blockNumber: text('block_number'),
    blockHash: text('block_hash'),
    failureStage: text('failure_stage', { enum: FAILURE_STAGES }),
    failureCode: text('failure_code'),
    failureMessage: text('failure_message'),
    /** JSON object (`winningHash`, `reason`, outcome detail) or null. */
    monitoring: text('monitoring'),
    toAddress: text('to_address'),
    value: text('value'),
    tokenAddress: text('token_address'),
    /** EVM: the nonce the payment uses, allocated with the record. */
    nonce: integer('nonce'),
    /** Solana: the transaction's blockhash and, when the service built it, its last valid block height. */
    recentBlockhash: text('recent_blockhash'),
    lastValidBlockHeight: integer('last_valid_block_height'),
    /** The signed bytes the poller resends: the payment's, or an auto-retry payment's latest signed attempt. */
    signedTransaction: text('signed_transaction'),
    /** 1 while the payment holds its wallet and chain (its row in `holds`); its stored bytes are resent meanwhile. */
    unresolved: integer('unresolved').notNull().default(1),
    /**
     * 1 while the chain poller looks the payment up: as long as its signed bytes may still execute, which outlasts
     * the hold of a payment failed after signing (its bytes are in the partner's hands).
     */
    watched: integer('watched').notNull().default(0),
    /**
     * The payment's attempts as the record shows them (JSON: ordinal, stage, preparedAt, hash, lastBroadcastAt), from
     * its actor's state, written with each step. Null on records older than attempts.
     */
    attempts: text('attempts'),
    /** An auto-retry payment's retrying (JSON: state, reason, ceiling, deadline, nonce, bumpCount); null otherwise. */
    autoRetry: text('auto_retry'),
    /**
     * A manual cancellation: the record of the stopped auto-retry payment whose nonce it competes for. It holds nothing
     * (the payment keeps the hold) and its hash is one of that payment's candidates.
     */
    cancels: text('cancels'),
    createdAt: text('created_at').notNull(),
    updatedAt: text('updated_at').notNull(),
    resolvedAt: text('resolved_at'),
    /** Monotonic insertion order: list order and cursor position. */
    seq: integer('seq').notNull(),
  },
  (t) => [
    uniqueIndex('transactions_seq').on(t.seq),
    index('transactions_wallet_seq').on(t.walletId, t.seq),
    index('transactions_watch').on(t.chainKey, t.seq).where(sql`watched = 1 and hash is not null`),
    index('transactions_wallet_chain_nonce').on(t.walletId, t.chainKey, t.nonce).where(sql`nonce is not null`),
    index('transactions_cancels').on(t.cancels).where(sql`cancels is not null`),
  ],
);

/**
 * A webhook endpoint: at most one per API key. `secret` signs every delivery; after a rotation `previousSecret`
 * signs too until `previousSecretExpiresAt`. `failures` and `retryAt` are the endpoint's breaker: set while a run of
 * attempts has failed (the endpoint is then probed with one delivery at a time), cleared by the next success.
 */
export const webhookEndpoints = sqliteTable(
  'webhook_endpoints',
  {
    apiKeyId: text('api_key_id')
      .primaryKey()
      .references(() => apiKeys.id),
    projectId: text('project_id').notNull(),
    url: text('url').notNull(),
    /** JSON array of event types. */
    events: text('events').notNull(),
    enabled: integer('enabled', { mode: 'boolean' }).notNull(),
    signatureFormat: text('signature_format', { enum: SIGNATURE_FORMATS }).notNull(),
    secret: text('secret').notNull(),
    previousSecret: text('previous_secret'),
    /** Unix milliseconds. */
    previousSecretExpiresAt: integer('previous_secret_expires_at'),
    failures: integer('failures').notNull().default(0),
    /** Unix milliseconds: the next probe while the endpoint is failing; null while it is healthy. */
    retryAt: integer('retry_at'),
    createdAt: text('created_at').notNull(),
    updatedAt: text('updated_at').notNull(),
  },
  (t) => [index('webhook_endpoints_project').on(t.projectId)],
);

/**
 * One event to deliver to one endpoint. Written in the transaction that appends the event to the outbox, so a state
 * change, its event and its deliveries are never separated. Times are Unix milliseconds.
 */
export const webhookDeliveries = sqliteTable(
  'webhook_deliveries',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    eventId: text('event_id').notNull(),
    apiKeyId: text('api_key_id').notNull(),
    status: text('status', { enum: ['pending', 'delivered', 'dead'] }).notNull(),
    attempts: integer('attempts').notNull().default(0),
    nextAttemptAt: integer('next_attempt_at').notNull(),
    createdAt: integer('created_at').notNull(),
    lastAttemptAt: integer('last_attempt_at'),
    lastStatusCode: integer('last_status_code'),
    lastLatencyMs: integer('last_latency_ms'),
    lastError: text('last_error'),
    finishedAt: integer('finished_at'),
  },
  (t) => [
    uniqueIndex('webhook_deliveries_event').on(t.apiKeyId, t.eventId),
    index('webhook_deliveries_due').on(t.apiKeyId, t.nextAttemptAt).where(sql`status = 'pending'`),
    index('webhook_deliveries_finished').on(t.status, t.finishedAt).where(sql`status != 'pending'`),
  ],
);

/**
 * Who holds a wallet on a chain: one unresolved payment per wallet and chain (the spec's 409
 * WALLET_TRANSACTION_UNRESOLVED), a row written with the record that takes it and deleted when nothing it holds can
 * still execute. A table of its own rather than an index over records, so that a record which is not the holder (a
 * manual cancellation, competing for the holder's nonce) can sit beside it.
 */
export const holds = sqliteTable(
  'holds',
  {
    walletId: text('wallet_id').notNull(),
    chainKey: text('chain_key').notNull(),
    /** The holding transaction record. */
    holderId: text('holder_id').notNull(),
    createdAt: text('created_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.walletId, t.chainKey] }), uniqueIndex('holds_holder').on(t.holderId)],
);

/**
 * `Idempotency-Key`s of `/v1` POSTs, per project. A key names one operation: its route (`operation`, the OpenAPI
 * operationId), wallet and a SHA-256 of the body in canonical JSON (`fingerprint`). A payment's key is written in the
 * transaction that writes its record (`transactionId`), so a retry can never start a second payment; the answer is
 * stored once it is known (`statusCode`, `body`, `headers`) and replayed as is. `expiresAt` (epoch ms) ends the
 * 24-hour answer cache; null is a key that names its operation for good (auto-retry transfers).
 */
export const idempotencyKeys = sqliteTable(
  'idempotency_keys',
  {
    projectId: text('project_id').notNull(),
    key: text('key').notNull(),
    operation: text('operation').notNull(),
    walletId: text('wallet_id'),
    fingerprint: text('fingerprint').notNull(),
    transactionId: text('transaction_id'),
    statusCode: integer('status_code'),
    /** The answer's body as sent (JSON text). */
    body: text('body'),
    /** The answer's headers worth replaying (`x-transaction-id`, `location`), JSON. */
    headers: text('headers'),
    createdAt: integer('created_at').notNull(),
    expiresAt: integer('expires_at'),
  },
  (t) => [
    primaryKey({ columns: [t.projectId, t.key] }),
    index('idempotency_keys_expiry').on(t.expiresAt).where(sql`expires_at is not null`),
  ],
);

/**
 * The people of a project who approve signing requests (POLICIES.md §2: operator-made, since this service has no
 * end-user login). `X-Initiator-User-Id` and approval decisions name them by `id`.
 */
export const projectUsers = sqliteTable(
  'project_users',
  {
    id: text('id').primaryKey(),
    projectId: text('project_id')
      .notNull()
      .references(() => projects.id),
    name: text('name').notNull(),
    createdAt: text('created_at').notNull(),
    /** Insertion order: list order and cursor position. */
    seq: integer('seq').notNull(),
  },
  (t) => [uniqueIndex('project_users_seq').on(t.seq), index('project_users_project_seq').on(t.projectId, t.seq)],
);

/** An authorization scope: the people (and their roles) who approve the cases of the wallets bound to it. */
export const authorizationScopes = sqliteTable(
  'authorization_scopes',
  {
    id: text('id').primaryKey(),
    projectId: text('project_id')
      .notNull()
      .references(() => projects.id),
    name: text('name').notNull(),
    createdAt: text('created_at').notNull(),
    seq: integer('seq').notNull(),
  },
  (t) => [
    uniqueIndex('authorization_scopes_seq').on(t.seq),
    index('authorization_scopes_project_seq').on(t.projectId, t.seq),
  ],
);

/** A user's roles in a scope; `revision` counts the writes (`expectedRevision`; 0 before the first). */
export const scopeAssignments = sqliteTable(
  'scope_assignments',
  {
    scopeId: text('scope_id')
      .notNull()
      .references(() => authorizationScopes.id),
    userId: text('user_id')
      .notNull()
      .references(() => projectUsers.id),
    /** JSON array of role names (may be empty: the user holds nothing in the scope). */
    roles: text('roles').notNull(),
    revision: integer('revision').notNull(),
    updatedAt: text('updated_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.scopeId, t.userId] })],
);

/** Which authorization scope a wallet's approval cases go to; no row: the wallet is bound to none. */
export const walletScopeBindings = sqliteTable(
  'wallet_scope_bindings',
  {
    walletId: text('wallet_id')
      .primaryKey()
      .references(() => wallets.id),
    scopeId: text('scope_id')
      .notNull()
      .references(() => authorizationScopes.id),
    updatedAt: text('updated_at').notNull(),
  },
  (t) => [index('wallet_scope_bindings_scope').on(t.scopeId)],
);

/**
 * An approval case: a request held by a `require_approval` rule with an `approval` block, tied to its reference
 * (`key:<Idempotency-Key>` or `body:<walletId>:<route>:<sha256>`) for good, one case per (key, reference). Written in
 * the decision point's transaction. Times are Unix milliseconds. `expired` is not stored: a `pending` case past
 * `expiresAt` is expired. `scopeId` is the wallet's scope when the case opened: its holders decide the case.
 */
export const approvalCases = sqliteTable(
  'approval_cases',
  {
    id: text('id').primaryKey(),
    projectId: text('project_id').notNull(),
    apiKeyId: text('api_key_id').notNull(),
    walletId: text('wallet_id').notNull(),
    scopeId: text('scope_id').notNull(),
    policyId: text('policy_id').notNull(),
    policyVersion: integer('policy_version').notNull(),
    ruleId: text('rule_id').notNull(),
    reference: text('reference').notNull(),
    bodyHash: text('body_hash').notNull(),
    status: text('status', { enum: STORED_CASE_STATUSES }).notNull(),
    /** JSON `[{role, threshold}]`: the rule's approval stages as they were when the case opened. */
    stages: text('stages').notNull(),
    initiatorUserId: text('initiator_user_id'),
    createdAt: integer('created_at').notNull(),
    expiresAt: integer('expires_at').notNull(),
    /** When the case left `pending` (completed, rejected, invalidated, cancelled). */
    endedAt: integer('ended_at'),
    /** When a completed case let its request through (once). */
    usedAt: integer('used_at'),
    seq: integer('seq').notNull(),
  },
  (t) => [
    uniqueIndex('approval_cases_reference').on(t.apiKeyId, t.reference),
    uniqueIndex('approval_cases_seq').on(t.seq),
    index('approval_cases_key_seq').on(t.apiKeyId, t.seq),
    index('approval_cases_project_seq').on(t.projectId, t.seq),
    index('approval_cases_policy').on(t.policyId).where(sql`status = 'pending'`),
    index('approval_cases_scope').on(t.scopeId).where(sql`status = 'pending'`),
  ],
);

/** One person's decision on a case, at the stage that was current; a user decides once per case. */
export const approvalDecisions = sqliteTable(
  'approval_decisions',
  {
    caseId: text('case_id')
      .notNull()
      .references(() => approvalCases.id),
    userId: text('user_id').notNull(),
    stage: integer('stage').notNull(),
    decision: text('decision', { enum: APPROVAL_DECISIONS }).notNull(),
    decidedAt: integer('decided_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.caseId, t.userId] })],
);

/**
 * A review: a request held by a `require_approval` rule without an `approval` block, which the partner's backend
 * approves or rejects with its key. A reference has a new review each time the last one expired or was consumed.
 * Times are Unix milliseconds; `expiresAt` is the review's lifetime (REVIEW_TTL_MS from its creation); an approved
 * review lets its request through until `decidedAt` + five minutes.
 */
export const reviews = sqliteTable(
  'reviews',
  {
    id: text('id').primaryKey(),
    projectId: text('project_id').notNull(),
    apiKeyId: text('api_key_id').notNull(),
    walletId: text('wallet_id').notNull(),
    policyId: text('policy_id').notNull(),
    policyVersion: integer('policy_version').notNull(),
    ruleId: text('rule_id').notNull(),
    reference: text('reference').notNull(),
    bodyHash: text('body_hash').notNull(),
    status: text('status', { enum: STORED_REVIEW_STATUSES }).notNull(),
    createdAt: integer('created_at').notNull(),
    expiresAt: integer('expires_at').notNull(),
    decidedAt: integer('decided_at'),
    consumedAt: integer('consumed_at'),
    seq: integer('seq').notNull(),
  },
  (t) => [uniqueIndex('reviews_seq').on(t.seq), index('reviews_reference').on(t.apiKeyId, t.reference, t.seq)],
);

/**
 * The signing-policy switch of an API key (`PUT /admin/v1/api-keys/{id}/permissions`): no row is permissions off.
 * `productionReview` is a production key's review state (chains/domain/policies.ts), null for development keys. The
 * operator's last review decision is kept with who made it and why. Times are Unix milliseconds.
 */
export const keyPermissions = sqliteTable('key_permissions', {
  apiKeyId: text('api_key_id')
    .primaryKey()
    .references(() => apiKeys.id),
  enabled: integer('enabled', { mode: 'boolean' }).notNull(),
  approvals: integer('approvals', { mode: 'boolean' }).notNull(),
  productionReview: text('production_review', { enum: PRODUCTION_REVIEW_STATUSES }),
  reviewRequestedAt: integer('review_requested_at'),
  reviewDecidedAt: integer('review_decided_at'),
  reviewDecidedBy: text('review_decided_by'),
  reviewReason: text('review_reason'),
  updatedAt: integer('updated_at').notNull(),
});

/**
 * Signing policies (`/v1/permissions-v2/policies`), one row per policy, owned by the API key that wrote it (or, on a
 * production key, published to it: `sourcePolicyId` names the development key's policy it copies). The content lives
 * in `policy_versions`, immutable per version; `version` is the current one, `revision` counts writes (the
 * `expectedRevision` of every write). `selector` is the scope's network set, sorted and comma-joined; '' when the
 * scope names none (every network: a document's set has at least one). At most one active policy per key, wallet type and selector (`policies_active_selector`). A deleted policy
 * keeps its row and versions (`deletedAt`), so decisions logged against it stay readable; `mergedInto` names the
 * policy whose next version it became when it was activated over it. Times are Unix milliseconds; list order is the
 * rowid (insertion order).
 */
export const policies = sqliteTable(
  'policies',
  {
    id: text('id').primaryKey(),
    apiKeyId: text('api_key_id')
      .notNull()
      .references(() => apiKeys.id),
    projectId: text('project_id').notNull(),
    name: text('name').notNull(),
    layer: text('layer', { enum: POLICY_LAYERS }).notNull(),
    walletType: text('wallet_type', { enum: WALLET_TYPES }).notNull(),
    selector: text('selector').notNull(),
    status: text('status', { enum: POLICY_STATUSES }).notNull(),
    version: integer('version').notNull(),
    revision: integer('revision').notNull(),
    sourcePolicyId: text('source_policy_id'),
    mergedInto: text('merged_into'),
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
    deletedAt: integer('deleted_at'),
  },
  (t) => [
    index('policies_key').on(t.apiKeyId).where(sql`deleted_at is null`),
    index('policies_active').on(t.apiKeyId).where(sql`status = 'active' and deleted_at is null`),
    uniqueIndex('policies_active_selector')
      .on(t.apiKeyId, t.walletType, t.selector)
      .where(sql`status = 'active' and deleted_at is null`),
  ],
);

/** Every version of every policy: the validated document as JSON, never changed once written. */
export const policyVersions = sqliteTable(
  'policy_versions',
  {
    policyId: text('policy_id').notNull(),
    version: integer('version').notNull(),
    document: text('document').notNull(),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.policyId, t.version] })],
);

/**
 * The spend ledger of signing policies (POLICIES.md §4): what each allowed signature moves out of a wallet, per network
 * and asset, keyed by what the signature is for (`spendRef`: a payment's transaction id, or the request's reference),
 * so that a replay or an auto-retry replacement is never counted twice. `amount` is base units as a decimal string
 * (up to 2^256); `countedAt` (epoch ms) is the window it counts in; `releasedAt` is set when no usable signature of it
 * exists (a failure at signing, a stop before signing, a Solana attempt proven expired): it counts no more.
 */
export const policySpend = sqliteTable(
  'policy_spend',
  {
    apiKeyId: text('api_key_id').notNull(),
    spendRef: text('spend_ref').notNull(),
    network: text('network').notNull(),
    asset: text('asset').notNull(),
    walletId: text('wallet_id').notNull(),
    amount: text('amount').notNull(),
    countedAt: integer('counted_at').notNull(),
    releasedAt: integer('released_at'),
  },
  (t) => [
    primaryKey({ columns: [t.apiKeyId, t.spendRef, t.network, t.asset] }),
    index('policy_spend_wallet').on(t.apiKeyId, t.walletId, t.network, t.asset, t.countedAt),
  ],
);

/**
 * The running total of one spend window (key, wallet, network, asset, window length, epoch-aligned start) over
 * `policy_spend`, so a decision reads a window in one row however much it counted. Made from the ledger the first
 * time a window is read, and kept in step with it by every reservation and release in the same transaction.
 */
export const policySpendWindows = sqliteTable(
  'policy_spend_windows',
  {
    apiKeyId: text('api_key_id').notNull(),
    walletId: text('wallet_id').notNull(),
    network: text('network').notNull(),
    asset: text('asset').notNull(),
    windowMs: integer('window_ms').notNull(),
    windowStart: integer('window_start').notNull(),
    /** window_start + window_ms: the windows a moment falls in are those ending after it. */
    windowEnd: integer('window_end').notNull(),
    total: text('total').notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.apiKeyId, t.walletId, t.network, t.asset, t.windowMs, t.windowStart] }),
    index('policy_spend_windows_end').on(t.apiKeyId, t.walletId, t.network, t.asset, t.windowEnd),
  ],
);

/**
 * The decision log (shadow mode): every decision taken with permissions on, with the request as the policy engine
 * read it (`request`, JSON: wallet, action, raw signature, chain facts, time) and what it rested on (`trace`, the
 * engine's DecisionTrace), so `POST /v1/permissions-v2/policies/{id}/simulate` can replay a draft over them.
 * `effect` is what the service answered: `allow`, `deny`, `hold` (403 POLICY_REVIEW_REQUIRED), `forbidden`.
 */
export const policyDecisions = sqliteTable(
  'policy_decisions',
  {
    seq: integer('seq').primaryKey({ autoIncrement: true }),
    apiKeyId: text('api_key_id').notNull(),
    walletId: text('wallet_id').notNull(),
    reference: text('reference').notNull(),
    spendRef: text('spend_ref').notNull(),
    action: text('action').notNull(),
    effect: text('effect', { enum: ['allow', 'deny', 'hold', 'forbidden'] }).notNull(),
    reason: text('reason'),
    policyId: text('policy_id'),
    ruleId: text('rule_id'),
    /** The case or review the hold opened or went through, when there was one. */
    holdId: text('hold_id'),
    request: text('request').notNull(),
    trace: text('trace').notNull(),
    decidedAt: integer('decided_at').notNull(),
  },
  (t) => [
    index('policy_decisions_key_time').on(t.apiKeyId, t.decidedAt),
    // Read only for a payment's decisions taken through a hold (approvedHold): the other rows cost no index entry.
    index('policy_decisions_spend_ref').on(t.apiKeyId, t.spendRef).where(sql`hold_id is not null`),
  ],
);

/**
 * The decision log's entries written together: the decisions answered without a write of their own (a message, a
 * denial, a signature that moves nothing; never a hold, a reservation or a payment's admission, which are rows of
 * `policy_decisions` in their own transaction). One row holds a key's decisions of one flush of the queue
 * (store/policy-decisions-repo.ts `appendBatch`): `entries` is a JSON array of them, each as a `policy_decisions` row
 * without the key and the sequence number, `request` and `trace` as JSON values. Their sequence numbers are
 * `first_seq` onward, taken from `policy_decisions`'s own sequence, so a decision has one number whichever table holds
 * it. `first_at` and `last_at` are the earliest and latest `decided_at` of its entries, at most
 * `DECISION_BATCH_MAX_SPAN_MS` apart.
 */
export const policyDecisionBatches = sqliteTable(
  'policy_decision_batches',
  {
    id: integer('id').primaryKey(),
    apiKeyId: text('api_key_id').notNull(),
    firstSeq: integer('first_seq').notNull(),
    count: integer('count').notNull(),
    firstAt: integer('first_at').notNull(),
    lastAt: integer('last_at').notNull(),
    /** UTF-8 JSON, kept as the bytes the decision point wrote (store/policy-decisions-repo.ts DecisionBatch). */
    entries: blob('entries', { mode: 'buffer' }).notNull(),
  },
  (t) => [index('policy_decision_batches_key_time').on(t.apiKeyId, t.firstAt)],
);

/**
 * A yield operation (spec: Yield operation): a deposit or withdrawal of USDC on one chain's lending market, run by its
 * actor (actors/yield/). `active` is 1 while it is `pending` or `submitted`: at most one active operation per wallet and
 * chain (the unique index decides between two admissions, 409 YIELD_OPERATION_IN_PROGRESS). Its `Idempotency-Key` names
 * it for good, per project (yield keys do not use the 24-hour answer cache). `steps` (JSON `[{kind, transactionId}]`)
 * are its transaction records, in order; `error` (JSON `{code, message, reviewId?, caseId?}`) why it stopped or waits.
 */
export const yieldOperations = sqliteTable(
  'yield_operations',
  {
    id: text('id').primaryKey(),
    projectId: text('project_id').notNull(),
    apiKeyId: text('api_key_id'),
    walletId: text('wallet_id').notNull(),
    chainId: integer('chain_id').notNull(),
    action: text('action', { enum: YIELD_ACTIONS }).notNull(),
    /** The amount as normalized from the request (`"1.5"`, or `"all"` for a withdrawal). */
    amount: text('amount').notNull(),
    idempotencyKey: text('idempotency_key').notNull(),
    /** SHA-256 of the normalized request (wallet, chain, action, amount): what a retry under the key must match. */
    fingerprint: text('fingerprint').notNull(),
    status: text('status', { enum: YIELD_STATUSES }).notNull(),
    active: integer('active').notNull(),
    error: text('error'),
    steps: text('steps').notNull(),
    createdAt: text('created_at').notNull(),
    updatedAt: text('updated_at').notNull(),
    /** Monotonic admission order: which of a wallet's operations on several chains goes first. */
    seq: integer('seq').notNull(),
  },
  (t) => [
    uniqueIndex('yield_operations_seq').on(t.seq),
    uniqueIndex('yield_operations_key').on(t.projectId, t.idempotencyKey),
    uniqueIndex('yield_operations_active').on(t.walletId, t.chainId).where(sql`active = 1`),
    index('yield_operations_wallet_active').on(t.walletId, t.seq).where(sql`active = 1`),
  ],
);

/** The operator's incident switch per yield chain: a row with `disabled` = 1 refuses new operations (YIELD_DISABLED). */
export const yieldChainSwitches = sqliteTable('yield_chain_switches', {
  chainId: integer('chain_id').primaryKey(),
  disabled: integer('disabled').notNull(),
  reason: text('reason'),
  updatedAt: text('updated_at').notNull(),
});
