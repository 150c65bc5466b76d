/**
 * Every error code an answer of this service can carry: its HTTP status (or statuses), what it means, and the
 * context fields its body adds beside `code`, `message` and `requestId`. The one declaration: errors are raised
 * with these codes, the OpenAPI documents and the API guide's error table are built from this list, and the error
 * handler logs (and counts) any answer whose code or status is not here.
 */
import { CHAIN_ERROR_CODES, type ChainErrorCode } from './payments.ts';

export interface CatalogueEntry {
  /** The status answered; a list when the same code can come at more than one step (the first is the usual one). */
  status: number | readonly number[];
  meaning: string;
  /** Fields the error body adds (beside code, message, requestId). */
  context?: readonly string[];
}

/** Refusals of the chain's node, answered when a payment fails at broadcast (400, with the record's fields). */
const CHAIN_MEANINGS = {
  INSUFFICIENT_NATIVE_BALANCE: 'The wallet cannot pay the value plus the fee.',
  INSUFFICIENT_TOKEN_BALANCE: 'The wallet holds too little of the token.',
  EXECUTION_FAILED: 'Estimation or simulation says the call reverts.',
  NONCE_TOO_LOW: 'The node has already seen this nonce from the wallet.',
  BLOCKHASH_EXPIRED: "The Solana transaction's blockhash is no longer valid.",
  TRANSACTION_REJECTED: 'The node refused the transaction for another reason (its message says which).',
  INVALID_TOKEN: 'The token address is not a token on this chain.',
  RPC_UNAVAILABLE: "The chain's node did not answer (503 before anything was signed; 400 for a failed broadcast).",
} as const satisfies Record<ChainErrorCode, string>;

const PAYMENT_FAILURE_CONTEXT = ['transactionId', 'failureStage', 'signedTransaction'] as const;

const chainEntries = Object.fromEntries(
  CHAIN_ERROR_CODES.map((code) => [
    code,
    {
      status: code === 'RPC_UNAVAILABLE' ? ([503, 400] as const) : 400,
      meaning: CHAIN_MEANINGS[code],
      context: PAYMENT_FAILURE_CONTEXT,
    },
  ]),
) as unknown as Record<ChainErrorCode, CatalogueEntry>;

export const ERROR_CATALOGUE = {
  // --- requests and bodies
  INVALID_REQUEST: {
    status: 400,
    meaning: 'A field, parameter or header of the request is invalid; `field` names it when there is one.',
    context: ['field'],
  },
  INVALID_JSON: { status: 400, meaning: 'The body is not valid JSON (or is empty while declared as JSON).' },
  INVALID_CURSOR: { status: 400, meaning: 'The list cursor is not one this service returned.' },
  PAYLOAD_TOO_LARGE: { status: 413, meaning: 'The body, or a field of it, is larger than the limit of the route.' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, meaning: 'The body is not `application/json` in UTF-8.' },
  URI_TOO_LONG: { status: 414, meaning: 'The request URL is longer than the service reads.' },
  HEADERS_TOO_LARGE: { status: 431, meaning: 'The request line and headers exceed 16 KiB.' },
  REQUEST_TIMEOUT: { status: 408, meaning: 'The request did not arrive in time (headers or body).' },
  EXPECTATION_FAILED: { status: 417, meaning: 'An `Expect` header other than `100-continue`.' },
  ROUTE_NOT_FOUND: { status: 404, meaning: 'No such route (or it is not served by this listener).' },
  METHOD_NOT_ALLOWED: { status: 405, meaning: 'The route exists but not with this method.' },
  // --- authentication and limits
  API_KEY_REQUIRED: { status: 401, meaning: 'No `X-API-Key` header.' },
  INVALID_API_KEY: { status: 403, meaning: 'The API key is unknown, rotated, or its project deleted.' },
  IP_NOT_ALLOWED: { status: 401, meaning: "The caller's address is outside the project's IP allowlist." },
  RATE_LIMITED: {
    status: 429,
    meaning: "Over the key's (or the admin listener's) requests per minute; wait `Retry-After` seconds.",
  },
  ADMIN_TOKEN_REQUIRED: { status: 401, meaning: 'Admin API: no `Authorization: Bearer` token.' },
  INVALID_ADMIN_TOKEN: { status: 403, meaning: 'Admin API: the token is not the admin token.' },
  // --- wallets
  WALLET_NOT_FOUND: { status: 404, meaning: "No such wallet in the caller's project." },
  WALLET_ALREADY_EXISTS: {
    status: 409,
    meaning: 'A wallet with the same type, scheme, identifier and identifier type exists.',
    context: ['walletId'],
  },
  WALLET_NOT_READY: {
    status: 400,
    meaning: 'The wallet is still being created; retry shortly.',
    context: ['walletId'],
  },
  KEY_GENERATION_FAILED: {
    status: [500, 503],
    meaning: 'Key generation failed; the wallet was not handed out (503 when the enclave was unreachable).',
  },
  WALLET_CLAIMED: { status: 403, meaning: 'The wallet was claimed by its user: REST signing is refused.' },
  WALLET_ALREADY_CLAIMED: { status: 409, meaning: 'Admin API: the wallet is already claimed.' },
  WALLET_SHARE_NOT_MIGRATED: {
    status: 403,
    meaning: "A pre-generated wallet's user share is not in the service yet: migrate it first.",
    context: ['walletId'],
  },
  SHARE_ALREADY_MIGRATED: { status: 409, meaning: "The wallet's user share was already migrated." },
  INVALID_PAYLOAD: { status: 400, meaning: 'The encrypted share-migration payload cannot be opened or read.' },
  PAYLOAD_WALLET_MISMATCH: { status: 400, meaning: 'The migration payload is for another wallet.' },
  USER_SHARE_UNAVAILABLE: { status: 500, meaning: "A pre-generated wallet's user share could not be handed out." },
  // --- signing
  UNSUPPORTED_OPERATION: { status: 400, meaning: 'The operation is not available for this wallet type.' },
  BROADCAST_NOT_SUPPORTED: {
    status: 400,
    meaning: '`broadcast: true` for a wallet type whose transactions are sign-only.',
  },
  POLICY_DENIED: {
    status: 403,
    meaning: 'A signing policy denied the request: nothing was signed.',
    context: ['deniedBy', 'policyId', 'ruleId', 'caseId', 'reviewId'],
  },
  POLICY_REVIEW_REQUIRED: {
    status: 403,
    meaning: 'A signing policy holds the request for an approval (a case) or a review: nothing was signed.',
    context: ['caseId', 'reviewId', 'status', 'expiresAt', 'policyId', 'ruleId'],
  },
  FORBIDDEN: {
    status: 403,
    meaning: 'A signing policy requires an approval and the wallet is bound to no authorization scope.',
    context: ['policyId', 'ruleId'],
  },
  SIGNER_MISMATCH: { status: 500, meaning: 'The signature did not recover to the wallet (never returned).' },
  SIGNATURE_APPLY_FAILED: { status: 500, meaning: 'The signature could not be attached to the transaction.' },
  SIGNING_FAILED: { status: 500, meaning: 'The enclave could not sign.', context: PAYMENT_FAILURE_CONTEXT },
  SIGNING_INTERRUPTED: {
    status: 503,
    meaning: 'A payment was being signed when the service stopped: it is never signed again automatically.',
    context: PAYMENT_FAILURE_CONTEXT,
  },
  // --- transfers and records
  CHAIN_NOT_CONFIGURED: {
    status: 400,
    meaning: "The chain is not in the service's CHAINS_FILE; `availableChains` lists those this key may use.",
    context: ['field', 'availableChains'],
  },
  CHAIN_NOT_ALLOWED: { status: 403, meaning: "The chain is not open to this key's environment." },
  WALLET_TRANSACTION_UNRESOLVED: {
    status: 409,
    meaning: 'Another payment of the wallet on this chain is not resolved yet; nothing was queued.',
    context: ['blockingTransactionId'],
  },
  TRANSACTION_NOT_FOUND: { status: 404, meaning: 'No such transaction record for the wallet.' },
  // --- Idempotency-Key (every /v1 POST)
  IDEMPOTENCY_CONFLICT: {
    status: 409,
    meaning:
      'The Idempotency-Key was already used with another route, wallet or body within its 24 hours: use a new key for a new operation.',
    context: ['differs'],
  },
  IDEMPOTENCY_KEY_IN_USE: {
    status: 409,
    meaning:
      'A request with this Idempotency-Key is still being processed; retry the identical request shortly and it answers what that one answered.',
  },
  AUTO_RETRY_NOT_SUPPORTED: {
    status: 400,
    meaning:
      '`autoRetry` is not available for this wallet: pre-generated wallets (auto-retry needs a wallet created through the API).',
  },
  ADDRESS_SCREENING_UNAVAILABLE: { status: 400, meaning: '`addressScreening` is not available on this service.' },
  ...chainEntries,
  // --- signing policies (/v1/permissions-v2); the spec names the document's validation codes in lower case
  PERMISSIONS_NOT_ENABLED: {
    status: 403,
    meaning:
      'Signing policies are off for this API key (the operator turns them on: PUT /admin/v1/api-keys/{keyId}/permissions); lists answer empty.',
  },
  PRODUCTION_KEY_READ_ONLY: {
    status: 403,
    meaning:
      "A production key's policies come from the production review: write them with a development key, then POST /v1/permissions-v2/production-review.",
  },
  POLICY_NOT_FOUND: { status: 404, meaning: "No such policy for the calling key (another key's is the same 404)." },
  REVISION_CONFLICT: {
    status: 409,
    meaning:
      "`expectedRevision` is not the record's current revision (a policy, a role assignment): it changed since it was read; read it again and resend.",
    context: ['errors', 'revision'],
  },
  APPROVAL_CASES_AFFECTED: {
    status: 409,
    meaning:
      'The write would end pending approval cases (`affectedCaseIds`): resend with `force: true` to write and invalidate them.',
    context: ['errors', 'affectedCaseIds'],
  },
  POLICY_ACTIVE: {
    status: 409,
    meaning: 'An active policy cannot be deleted: deactivate it first.',
    context: ['errors'],
  },
  POLICY_SELECTOR_ACTIVE: {
    status: 409,
    meaning: 'Another active policy of the key has the same wallet type and network set.',
    context: ['errors', 'policyId'],
  },
  PRODUCTION_REVIEW_INELIGIBLE: {
    status: 409,
    meaning:
      'No development key of the project has an active policy, or the production key is not awaiting review; body `status: ineligible`.',
    context: ['status'],
  },
  PRODUCTION_REVIEW_NOT_REQUESTED: {
    status: 409,
    meaning: 'Admin API: the production key has no requested review to publish or dismiss.',
  },
  partner_policy_schema_invalid: {
    status: 400,
    meaning:
      'A policy field has the wrong type or value, or a required one is missing; `errors[]` has each with a JSON pointer.',
    context: ['errors'],
  },
  policy_schema_field_unknown: {
    status: 400,
    meaning: 'The policy document has a field the schema does not have (or one the service sets).',
    context: ['errors'],
  },
  layer_invalid: { status: 400, meaning: "The policy's `layer` is not `guardrail`.", context: ['errors'] },
  permissions_v2_extension_unavailable: {
    status: 400,
    meaning:
      'A feature of the user-owned layer (delegation policies, delegation consents, user parameters) this service does not have: it has no end-user sessions.',
    context: ['errors'],
  },
  fact_not_available: {
    status: 400,
    meaning: 'A condition reads a fact its rule can never have (a rule on `raw_signature` reads only `wallet.*`).',
    context: ['errors'],
  },
  // --- admin API
  PROJECT_NOT_FOUND: { status: 404, meaning: 'No such project (or it was deleted).' },
  API_KEY_NOT_FOUND: { status: 404, meaning: 'No such API key (or its project was deleted).' },
  ACTOR_NOT_FOUND: { status: 404, meaning: 'No such actor.' },
  ACTOR_NOT_FAULTED: { status: 409, meaning: 'Retry and abandon apply to faulted actors only.' },
  ACTOR_FAULTED: { status: 500, meaning: "The request's actor faulted and waits for the operator." },
  HOLD_NOT_FOUND: { status: 404, meaning: 'The wallet has no unresolved payment holding it on that chain.' },
  HOLD_NOT_RELEASABLE: {
    status: 409,
    meaning:
      'The holding payment cannot be released now: it is being signed (retry in a few seconds) or its actor is faulted (retry or abandon it).',
  },
  NEXT_KEY_MISSING: { status: 409, meaning: 'Master-key rotation: the next key is not there.' },
  NEXT_KEY_MISMATCH: { status: 409, meaning: 'Master-key rotation: the next key is not the one prepared.' },
  WEBHOOK_NOT_CONFIGURED: { status: 404, meaning: 'The API key has no webhook endpoint.' },
  WEBHOOK_DISABLED: { status: 409, meaning: 'The webhook endpoint is disabled.' },
  WEBHOOK_TARGET_NOT_ALLOWED: {
    status: 400,
    meaning: 'The webhook URL is, or resolves to, a non-public address.',
    context: ['field'],
  },
  DELIVERY_NOT_FOUND: { status: 404, meaning: 'The endpoint has no delivery of that event.' },
  // --- approvals: people, authorization scopes, approval cases, reviews (POLICIES.md §2 step 7, §3)
  CONFLICT: {
    status: 409,
    meaning:
      'The Idempotency-Key (or, without one, the identical request) is already bound to an approval case or review of another body: send a new key for a new transaction.',
  },
  APPROVAL_CASE_NOT_FOUND: { status: 404, meaning: "No such approval case of the caller's key (or project)." },
  REVIEW_NOT_FOUND: { status: 404, meaning: "No such review of the caller's key." },
  USER_NOT_FOUND: { status: 404, meaning: "Admin API: no such user in the project (or the scope's project)." },
  AUTHORIZATION_SCOPE_NOT_FOUND: { status: 404, meaning: 'Admin API: no such authorization scope.' },
  INITIATOR_CANNOT_REVIEW: {
    status: 403,
    meaning: 'The user who initiated the request (`X-Initiator-User-Id`) cannot decide its approval case.',
    context: ['reason'],
  },
  APPROVAL_DECISION_NOT_ALLOWED: {
    status: 403,
    meaning:
      "The user cannot decide this case now: not a holder of the current stage's role in the case's scope, already decided, or the case is no longer pending (`reason` says which).",
    context: ['reason'],
  },
  // --- yield (deposits and withdrawals on the lending market)
  YIELD_DISABLED: {
    status: 409,
    meaning:
      'The operator has disabled new yield operations on this chain (an incident switch); positions, operations and cancellation still answer.',
    context: ['chainId'],
  },
  YIELD_OPERATION_IN_PROGRESS: {
    status: 409,
    meaning:
      'Another yield operation of the wallet on this chain is active (`pending` or `submitted`); `operationId` names it.',
    context: ['walletId', 'chainId', 'operationId'],
  },
  YIELD_OPERATION_NOT_FOUND: { status: 404, meaning: 'No such yield operation for the wallet.' },
  YIELD_OPERATION_NOT_CANCELLABLE: {
    status: 409,
    meaning:
      'The operation cannot be cancelled: a transaction of it is signed and unresolved, or it has ended (`status` says which). Only unsigned work is cancelled.',
    context: ['operationId', 'status'],
  },
  // --- the service itself
  ENCLAVE_UNAVAILABLE: { status: 503, meaning: 'The enclave is not reachable; retry after `Retry-After`.' },
  ENCLAVE_TIMEOUT: { status: 503, meaning: 'The enclave did not answer in time; retry.' },
  SERVICE_BUSY: { status: 503, meaning: 'The service is at its limit of work in progress; retry shortly.' },
  SERVICE_STOPPING: { status: 503, meaning: 'The service is shutting down; retry shortly.' },
  SERVICE_UNAVAILABLE: { status: 503, meaning: 'The service cannot take the request now; retry.' },
  STORE_OVERLOADED: { status: 503, meaning: 'The database has more writes queued than it takes; retry shortly.' },
  STORE_BUSY: { status: 503, meaning: 'The database is busy; retry.' },
  STORE_SYNC_FAILED: {
    status: 503,
    meaning: 'The database could not be synced to disk: nothing may be assumed saved.',
  },
  STORE_ERROR: { status: 503, meaning: 'The database failed.' },
  INTERNAL_ERROR: {
    status: 500,
    meaning: 'An unexpected failure; the cause is in the service log under the request id.',
  },
} as const satisfies Record<string, CatalogueEntry>;

export type ErrorCode = keyof typeof ERROR_CATALOGUE;

const entries: Readonly<Record<string, CatalogueEntry>> = ERROR_CATALOGUE;

/** The statuses a code may be answered with; empty for a code outside the catalogue. */
export function statusesOf(code: string): readonly number[] {
  const e = entries[code];
  if (!e) return [];
  return typeof e.status === 'number' ? [e.status] : e.status;
}

/** True when `code` is in the catalogue and may be answered with `status`. */
export function isCatalogued(code: string, status: number): boolean {
  return statusesOf(code).includes(status);
}

/** `code` when it is in the catalogue, else `fallback` (for codes that come from stored records or other processes). */
export function asErrorCode(code: string, fallback: ErrorCode): ErrorCode {
  return code in entries ? (code as ErrorCode) : fallback;
}

/** The catalogue as the API guide's Markdown table (`npm run docs:errors` writes it between its markers). */
export function renderErrorTable(): string {
  const rows = Object.entries(entries).map(([code, e]) => {
    const status = typeof e.status === 'number' ? String(e.status) : e.status.join(', ');
    const context = e.context?.length ? e.context.map((f) => `\`${f}\``).join(', ') : '';
    return `| \`${code}\` | ${status} | ${e.meaning.replace(/\|/g, '\\|')} | ${context} |`;
  });
  return ['| code | status | meaning | context fields |', '|---|---|---|---|', ...rows].join('\n');
}
