import { assign, fromPromise, setup } from 'xstate';
import type {
  FailureStage,
  IntentKind,
  PaymentFamily,
  SolanaNetwork,
  TransactionStatus,
} from '../../chains/domain/payments.ts';
import type { Observation, TransferIntent } from '../../chains/payment-chain.ts';
import type { PaymentPayload, SignedPayment } from '../../chains/payment-family.ts';

export type { PaymentPayload, SignedPayment };

export interface PaymentInput {
  transactionId: string;
  projectId: string;
  apiKeyId: string | null;
  walletId: string;
  walletAddress: string;
  intentKind: IntentKind;
  family: PaymentFamily;
  chainKey: string;
  /** `send.*` events' `isDevnet`: the chain serves development keys only (Solana devnet, a test EVM chain). */
  isDevnet: boolean;
  /** EVM chain id as a string; null on Solana. */
  chainId: string | null;
  /** Solana network; null on EVM. */
  network: SolanaNetwork | null;
  /**
   * What the payment signs, in its family's format (chains/<family>/<family>-payments.ts): a transfer the service
   * built, a partner's transaction broadcast for it, or a yield step; the machine does not look inside.
   */
  payload: PaymentPayload;
  /** The nonce its record allocated (EVM); null for families without nonces. */
  nonce: number | null;
  /** How long after broadcast the payment is actively monitored (the spec's 30 minutes). */
  monitorWindowMs: number;
  /** When the payment was admitted and its first attempt prepared (epoch ms). */
  preparedAt: number;
  /** Solana: the last block height at which attempt 0's blockhash is accepted, when known (transfers). */
  lastValidBlockHeight?: number | null;
  /** The terms of an auto-retry transfer; absent or null for every other payment. */
  autoRetry?: AutoRetryTerms | null;
  /**
   * A prepared step (a yield step): admitted with its record, nonce and hold like any payment, it is not signed on
   * spawn but waits in `prepared` for a SIGN event (or a CANCEL). Absent or null: signed on spawn, as every transfer
   * and broadcast `sign-transaction`.
   */
  prepared?: PreparedStepTerms | null;
}

/** What a prepared step signs for: the signing policy's operation its SIGN is decided as. */
export interface PreparedStepTerms {
  operation: 'yield_deposit' | 'yield_withdraw';
  /**
   * The yield facts its policy decision reads beside the transaction's (POLICIES.md: `chainId`, `asset`, `value`): the
   * operation's asset (USDC's address) and amount in base units (2^256 − 1 for a withdrawal of everything), the same on
   * every step of the operation. A yield step moves nothing a spend window counts.
   */
  facts?: { asset: string; value: string };
  /**
   * A later step of its operation (the supply after an approval): the record of the operation's first step. A policy
   * hold of the same rule that the first step's signature went through (its approved case or review) lets this one
   * through too; one person's approval covers the operation.
   */
  approvedUnder?: string;
}

/**
 * A prepared step's SIGN as the payment definition decided it, in the step's transaction, at the one decision point
 * (signature-policy.ts): `allow` signs the stored payload; `deny` (a definitive refusal) fails the step with the
 * policy's code; `hold` (a review or case required, an approval rule the wallet cannot meet, a request the policy
 * could not take) signs nothing and leaves the step prepared, the exact payload kept for a later SIGN.
 */
export type StepDecision =
  | { effect: 'allow' }
  | { effect: 'deny' | 'hold'; code: string; httpStatus: number; message: string; details: Record<string, unknown> };

/** The latest SIGN a policy refused (held or denied): what the caller reports (its code, `reviewId`/`caseId`). */
export interface SignRefusal {
  effect: 'deny' | 'hold';
  code: string;
  /** The HTTP status its caller answers (403 for a policy's refusal, 409 CONFLICT). */
  httpStatus: number;
  message: string;
  details: Record<string, unknown>;
  at: number;
}

/** What names a prepared step's signature request for holds (signature-policy.ts `RequestReference`), as sent. */
export interface SignReference {
  idempotencyKey: string | null;
  route: string;
  /** SHA-256 (hex) of the request body in canonical JSON. */
  bodyHash: string;
}

/** What an auto-retry transfer was admitted with (never changed by a replay of its request). */
export interface AutoRetryTerms {
  /**
   * The most one attempt may cost (decimal): EVM `gasLimit × maxFeePerGas` (or `× gasPrice`) in wei; Solana base plus
   * priority fee in lamports.
   */
  ceiling: string;
  /** No new attempt after this (epoch ms). */
  expiresAt: number;
  /**
   * EVM: the least time between an attempt's send and its replacement (EVM_REPLACEMENT_DELAY_MS). Both families: how
   * long a replacement that could not be priced (the node did not answer) waits before it is tried again (Solana: at
   * most SOLANA_REBUILD_RETRY_MS).
   */
  replacementDelayMs: number;
  /**
   * Solana: the transfer as the partner asked it, which each rebuilt attempt builds again with a fresh blockhash (an
   * EVM replacement is the previous attempt with higher fees). Absent on EVM.
   */
  intent?: TransferIntent | null;
}

/** The most replacements an auto-retry payment makes (the spec: the original plus at most three). */
export const MAX_REPLACEMENTS = 3;

/**
 * Where an auto-retry payment's retrying stands (the spec's `autoRetry.state`): `active` (replacements are made when
 * due), `stopped` (no new attempt; the payment is still watched and holds its wallet while an attempt may execute),
 * `resolved` (the chain settled it). `reason`: the latest stop or wait reason.
 */
export interface AutoRetryProgress extends AutoRetryTerms {
  state: 'active' | 'stopped' | 'resolved';
  reason: string | null;
  /** Replacements prepared (exact-byte resends do not count). */
  bumpCount: number;
  /** The replacements' payloads and signed bytes, by ordinal (1…3); attempt 0's are the context's own. */
  replacements: Array<{ ordinal: number; payload: PaymentPayload; signedTransaction: string | null }>;
  /**
   * Solana: the latest attempt proven expired (its blockhash past its last valid height at finalized commitment and
   * its signature absent), and every attempt before it: none of them can ever execute. A rebuilt attempt is made only
   * once every attempt with a hash is covered. Absent or null until the first proof.
   */
  expiredThrough?: number | null;
}

/**
 * What the replacement effect decides (prepare-replacement.ts). `replace`: the next attempt's payload (Solana: with
 * the last block height its fresh blockhash is accepted at). `stop`: with what the partner reads of it, when the
 * reason alone does not say (Solana's funds, for instance).
 */
export type ReplacementPlan =
  | { kind: 'replace'; payload: PaymentPayload; at: number; lastValidBlockHeight?: number }
  | { kind: 'wait'; reason: string; at: number }
  | { kind: 'stop'; reason: string; at: number; message?: string };

/**
 * Where an attempt stands (the spec's attempt stages), each durable before the step it names:
 * `signing`: the signature was asked for; if the service stopped meanwhile it is uncertain and never asked again.
 * `rejected`: proof that no usable signature exists (the signer refused, or what it made could not be used).
 * `signed`: the bytes exist and no node is known to have them. `submission_unknown`: a send got no verdict (the node
 * may have them). `submitted`: a node accepted them, or the chain included them.
 */
export type AttemptStage = 'prepared' | 'signing' | 'rejected' | 'signed' | 'submission_unknown' | 'submitted';

/**
 * One signed version of the payment. Attempt 0 is the payment as admitted (its payload, bytes and hash are the
 * context's own: the record's `hash` stays attempt 0's); replacements and rebuilt attempts follow it. Every attempt
 * with a hash is a candidate: the chain poller watches them as one set, and the first to execute is the payment's.
 */
export interface PaymentAttempt {
  ordinal: number;
  stage: AttemptStage;
  preparedAt: number;
  hash: string | null;
  /** When the service last sent its bytes itself (epoch ms); the poller's resends of unseen bytes do not count. */
  lastBroadcastAt: number | null;
  /** Solana: the last block height at which the attempt's blockhash is accepted (absent where unknown, and on EVM). */
  lastValidBlockHeight?: number | null;
}

export type PaymentFailureStage = FailureStage;

export interface PaymentFailure {
  stage: PaymentFailureStage;
  code: string;
  message: string;
}

export interface PaymentContext extends PaymentInput {
  signedTransaction: string | null;
  hash: string | null;
  failure: PaymentFailure | null;
  blockNumber: string | null;
  blockHash: string | null;
  monitoring: {
    reason?: string;
    winningHash?: string;
    error?: string;
    /** The operator released the hold: why, and when (ISO); the record's outcome is still the chain's to tell. */
    operatorRelease?: { reason: string; releasedAt: string };
  } | null;
  /** Broadcast attempts that got no verdict from the node (timeouts, node down). */
  unansweredBroadcasts: number;
  /** When the node first accepted (or first failed to answer) the broadcast: the monitor window counts from it. */
  broadcastAt: number | null;
  /** When a node first accepted the bytes (null while none has): the payment is known to be on the network. */
  acceptedAt: number | null;
  /** Absolute epoch ms of the next WAKE: a broadcast retry, a rebroadcast, the end of the monitor window. */
  wakeAt: number | null;
  /**
   * The operator released the payment's hold (who, why, when, and the record's status then, which it keeps: a
   * release claims no outcome). Absent in states stored before v3 knew of it.
   */
  operatorRelease?: OperatorRelease | null;
  /** The payment's attempts, attempt 0 first (v4). */
  attempts: PaymentAttempt[];
  /** An auto-retry payment's retrying; absent or null for every other payment. */
  autoRetry?: AutoRetryProgress | null;
  /** A prepared step: the latest SIGN its policy refused (cleared when a SIGN is allowed). Absent for other payments. */
  signRefusal?: SignRefusal | null;
}

export interface OperatorRelease {
  reason: string;
  by: string;
  at: number;
  status: TransactionStatus;
}

/** The broadcast effect's verdict. It never throws for a node's answer: the machine decides what follows. */
export type BroadcastOutcome =
  | { outcome: 'accepted'; at: number }
  | { outcome: 'rejected'; code: string; message: string; at: number }
  | { outcome: 'unanswered'; code: string; message: string; at: number };

/** What the broadcast effect sends, and what it needs to tell a stale-nonce or stale-blockhash verdict apart. */
export interface BroadcastInput {
  chainKey: string;
  signedTransaction: string;
  hash: string;
  from: string;
  /** EVM nonce; null on Solana. */
  nonce: number | null;
}

/** What the replacement effect prices from: the latest attempt's payload and the payment's terms. */
export interface ReplacementInput {
  chainKey: string;
  from: string;
  payload: PaymentPayload;
  ceiling: string;
  /** Solana: the transfer a rebuilt attempt builds again (AutoRetryTerms.intent); absent on EVM. */
  intent?: TransferIntent | null;
  /** Whose authority signed the original: the API key, its project and wallet, and when (epoch ms). */
  apiKeyId: string | null;
  projectId: string;
  walletId: string;
  admittedAt: number;
  /** The chain the payment is for, as the policy sees it (the EVM chain id, the Solana network). */
  chainId: string | null;
  /** The payment: the spend ledger counts its replacements under it once. Absent in intents stored before it was. */
  transactionId?: string;
}

export type PaymentEvent =
  | { type: 'WAKE'; at: number }
  /**
   * What the chain shows of the payment: of the candidate `hash` (absent: attempt 0's). `candidates`: every hash the
   * verdict was reached over (the chain poller's); a verdict that missed one of the payment's attempts (made after the
   * poller read the record) proves nothing of it and is not applied. Absent in events stored before it was sent.
   */
  | { type: 'OBSERVED'; observation: Observation; at: number; hash?: string; candidates?: string[] }
  /** The operator releases the hold (admin API): the payment stops sending and keeps being watched. */
  | { type: 'OPERATOR_RELEASE'; reason: string; by: string; at: number }
  /**
   * A prepared step is to be signed. `decision` is the payment definition's (taken in the step's transaction; one a
   * sender put there is replaced): without it nothing is signed. `reference`: what names the request for holds, the
   * same on every SIGN of the step so that an approval of its hold is found.
   */
  | {
      type: 'SIGN';
      at?: number;
      reference?: SignReference;
      initiatorUserId?: string | null;
      decision?: StepDecision;
    }
  /** A prepared step is abandoned before it is signed (refused once its SIGN was taken). */
  | { type: 'CANCEL'; at?: number; reason?: string };

/**
 * Bumped whenever stored states of the previous version need a migration (payment-definition.ts holds them).
 * v2: the context carries the record's `nonce` beside the payload.
 * v3: `acceptedAt` (when a node first took the bytes), the `released` state (refused on a first send: the
 * wallet is released, the bytes still watched) and `operatorReleased` (the operator released the hold).
 * v4: `preparedAt` and `attempts` (attempt 0, with its stage).
 */
export const PAYMENT_MACHINE_VERSION = 4;

/** Broadcast retries after an unanswered attempt, spaced by this much (then the monitor window decides). */
export const BROADCAST_RETRY_MS = 2_000;

/**
 * Solana: the most a rebuilt attempt that could not be prepared (the node did not answer) waits before it is tried
 * again. Its predecessors are already proven expired, so every second without an attempt in flight is a second the
 * payment cannot land; EVM waits EVM_REPLACEMENT_DELAY_MS, its attempt still being in the pool meanwhile.
 */
export const SOLANA_REBUILD_RETRY_MS = 5_000;

/**
 * Failure stages of the signing effect's error codes; anything else failed the signing itself (`mpc_sign`), as does
 * SIGNING_INTERRUPTED from the wallet signer when the enclave refused a second message under the effect's key.
 */
const SIGN_STAGE: Readonly<Record<string, PaymentFailureStage>> = {
  SIGNER_MISMATCH: 'signer_verify',
  SIGNATURE_APPLY_FAILED: 'signature_apply',
};

function errorOf(e: unknown): { code: string; message: string; at: number | null } {
  const err = e as { code?: unknown; message?: unknown; at?: unknown } | null;
  return {
    code: typeof err?.code === 'string' ? err.code : 'SIGNING_FAILED',
    message: typeof err?.message === 'string' ? err.message : 'signing failed',
    at: typeof err?.at === 'number' ? err.at : null,
  };
}

/** The failure and monitoring of a payment proven unable to execute (`stage`: where it failed). */
function droppedFailure(
  context: PaymentContext,
  event: PaymentEvent,
  stage: 'monitor' | 'broadcast',
): Partial<PaymentContext> {
  if (event.type !== 'OBSERVED' || event.observation.status !== 'dropped') return {};
  const o = event.observation;
  const expired = o.reason === 'expired';
  const winner = o.reason === 'nonce_consumed' ? o.winningHash : 'unknown';
  // The failure code by intent: a yield step's saved nonce consumed without its receipt is the spec's NONCE_CONSUMED
  // (on the step and its operation); a transfer or a broadcast transaction was REPLACED.
  const yieldStep = context.intentKind === 'yield';
  return {
    failure: {
      stage,
      code: expired ? 'TRANSACTION_EXPIRED' : yieldStep ? 'NONCE_CONSUMED' : 'REPLACED',
      message: expired
        ? 'the transaction can no longer execute: its blockhash expired and it is not on the finalized chain'
        : yieldStep
          ? `this step's saved nonce was consumed on the finalized chain by another transaction (${winner}) without a receipt of this step; it can never execute`
          : `another transaction (${winner}) used this nonce on the finalized chain; this one can never execute`,
    },
    monitoring: { reason: o.reason, ...(o.reason === 'nonce_consumed' ? { winningHash: o.winningHash } : {}) },
    wakeAt: null,
  };
}

/** Error codes after which a signature may exist (the signer may have made it): the attempt stays `signing`. */
const UNCERTAIN_SIGNING: ReadonlySet<string> = new Set([
  'EFFECT_INTERRUPTED',
  'SIGNING_INTERRUPTED',
  'ENCLAVE_TIMEOUT',
  'ALREADY_SIGNED',
]);

/** The attempts with attempt `ordinal` changed by `patch`. */
function withAttempt(context: PaymentContext, ordinal: number, patch: Partial<PaymentAttempt>): PaymentAttempt[] {
  return context.attempts.map((a) => (a.ordinal === ordinal ? { ...a, ...patch } : a));
}

/** The latest attempt (attempt 0 until a replacement is prepared). */
function latestAttempt(context: PaymentContext): PaymentAttempt {
  return context.attempts[context.attempts.length - 1]!;
}

/** The latest replacement's payload and bytes (the replacing states have one). */
function latestReplacement(context: PaymentContext) {
  const r = context.autoRetry!.replacements;
  return r[r.length - 1]!;
}

/**
 * When an active auto-retry payment next needs a look: its latest attempt's replacement time, or its deadline if that
 * comes first. Null for any other payment.
 */
function replacementWake(context: PaymentContext, attempts = context.attempts): number | null {
  const retry = context.autoRetry;
  if (retry?.state !== 'active') return null;
  // Solana rebuilds an attempt on a proof of its predecessor's expiry, never on time: the deadline is its one wake.
  if (context.family === 'SOLANA') return retry.expiresAt;
  const last = attempts[attempts.length - 1]!;
  const sent = last.lastBroadcastAt ?? last.preparedAt;
  return Math.min(sent + retry.replacementDelayMs, retry.expiresAt);
}

/**
 * Solana: every attempt with a hash is proven expired (AutoRetryProgress.expiredThrough), so none can ever execute.
 * An attempt without a hash never left the service (refused, or its signing uncertain): nothing of it can land.
 */
function allAttemptsExpired(context: PaymentContext): boolean {
  const through = context.autoRetry?.expiredThrough;
  if (through === undefined || through === null) return false;
  return context.attempts.every((a) => a.hash === null || a.ordinal <= through);
}

/** Whether an OBSERVED verdict was reached over every attempt with a hash (PaymentEvent's `candidates`). */
function coversAttempts(context: PaymentContext, event: PaymentEvent): boolean {
  if (event.type !== 'OBSERVED' || event.candidates === undefined) return true;
  const seen = new Set(event.candidates);
  return context.attempts.every((a) => a.hash === null || seen.has(a.hash));
}

const expiredDrop = (event: PaymentEvent): boolean =>
  event.type === 'OBSERVED' && event.observation.status === 'dropped' && event.observation.reason === 'expired';

/** The auto-retry progress with `patch` applied (unchanged for a payment without auto-retry). */
function retryWith(context: PaymentContext, patch: Partial<AutoRetryProgress>): AutoRetryProgress | null {
  return context.autoRetry ? { ...context.autoRetry, ...patch } : (context.autoRetry ?? null);
}

/** Signing errors that say the wallet's key may no longer sign for the partner: the retry stops for good. */
const AUTHORITY_ENDED: ReadonlySet<string> = new Set([
  'WALLET_CLAIMED',
  'WALLET_SHARE_NOT_MIGRATED',
  'WALLET_NOT_FOUND',
  'POLICY_DENIED',
  'POLICY_REVIEW_REQUIRED',
]);

/** Why a signature's failure stops the retry: it may exist (uncertain), the authority ended, or the signer refused. */
function signingStopReason(code: string): string {
  if (UNCERTAIN_SIGNING.has(code)) return 'SIGNING_UNCERTAIN';
  return AUTHORITY_ENDED.has(code) ? 'SIGNING_AUTHORITY_ENDED' : 'SIGNING_FAILED';
}

function broadcastInput({ context }: { context: PaymentContext }): BroadcastInput {
  return {
    chainKey: context.chainKey,
    signedTransaction: context.signedTransaction ?? '',
    hash: context.hash ?? '',
    from: context.walletAddress,
    nonce: context.nonce,
  };
}

/**
 * One payment (a transaction record), from signing to a final status, following the spec's status table:
 * `pending` (signing, broadcasting, retrying a send whose outcome is unknown) → `submitted` → `confirmed` /
 * `reverted` / `failed`. The record's status, and whether it holds its wallet and chain, are derived from the state
 * (payment-definition.ts).
 *
 * - Signing is an at-most-once effect: interrupted by a crash, it is never signed again (the bytes, if the
 *   enclave made them, never left the process, so nothing can execute): the payment fails at `mpc_sign`.
 * - Broadcasting sends the stored signed bytes; resending the exact bytes is harmless, so it is at-least-once.
 * - A node's refusal ends the payment only when it proves the node did not take the bytes, and only on a first
 *   send: after a send whose answer was lost (which the node may have taken), a refusal proves nothing of that
 *   copy, and the payment goes on as one whose submission is unknown (`retrying`) until the chain settles it.
 * - A proven refusal fails the payment and releases its wallet, but the signed bytes exist (the partner has them):
 *   the payment stays watched (`released`) until the chain proves they can no longer execute; if they do execute,
 *   the record says so.
 * - The chain poller delivers `OBSERVED` when the chain shows a final inclusion or proves the transaction can
 *   no longer execute (for EVM, the winner of its nonce found on the chain), and resends the stored bytes of held
 *   payments the node does not show; WAKE drives the retries of an unanswered broadcast and the end of the monitor
 *   window.
 * - After the monitor window the record says `failed` / `monitor_timeout` (no failed event) but the actor keeps
 *   watching, and holding its wallet and chain, until the chain decides: a later confirmation updates the record. * - A prepared step (a yield step, `prepared` in its input) starts in `prepared` instead of `signing`: it holds its
 *   wallet and nonce with its exact payload and signs only on a SIGN whose decision (the payment definition's, taken
 *   in the step that applies it) allows it; a hold keeps it prepared, a denial or a CANCEL ends it unsigned.
 */
export const paymentMachine = setup({
  types: {} as { context: PaymentContext; events: PaymentEvent; input: PaymentInput },
  actors: {
    sign: fromPromise<SignedPayment, { projectId: string; walletId: string; payload: PaymentPayload }>(async () => {
      throw new Error('sign runs as an effect of the actor host');
    }),
    broadcast: fromPromise<BroadcastOutcome, BroadcastInput>(async () => {
      throw new Error('broadcast runs as an effect of the actor host');
    }),
    prepareReplacement: fromPromise<ReplacementPlan, ReplacementInput>(async () => {
      throw new Error('prepareReplacement runs as an effect of the actor host');
    }),
  },
  guards: {
    accepted: ({ event }) => (event as { output?: BroadcastOutcome }).output?.outcome === 'accepted',
    /** A refusal that proves the node did not take the bytes, on a send before which none may have reached a node. */
    provenRejection: ({ context, event }) =>
      (event as { output?: BroadcastOutcome }).output?.outcome === 'rejected' && context.unansweredBroadcasts === 0,
    finalSuccess: ({ event }) =>
      event.type === 'OBSERVED' &&
      event.observation.status === 'included' &&
      event.observation.final &&
      event.observation.success,
    finalFailure: ({ event }) =>
      event.type === 'OBSERVED' &&
      event.observation.status === 'included' &&
      event.observation.final &&
      !event.observation.success,
    dropped: ({ context, event }) =>
      event.type === 'OBSERVED' && event.observation.status === 'dropped' && coversAttempts(context, event),
    /**
     * Solana auto-retry: every attempt is proven expired while the retry may still make one (under the attempt limit,
     * before the deadline): a rebuilt attempt is prepared rather than the payment failed.
     */
    expiredRebuildable: ({ context, event }) =>
      expiredDrop(event) &&
      coversAttempts(context, event) &&
      context.family === 'SOLANA' &&
      context.autoRetry?.state === 'active' &&
      context.autoRetry.bumpCount < MAX_REPLACEMENTS &&
      (event as { at: number }).at < context.autoRetry.expiresAt,
    /** Solana auto-retry while its next attempt is being prepared or signed: the proof that led here, seen again. */
    rebuilding: ({ context, event }) =>
      event.type === 'OBSERVED' && event.observation.status === 'dropped' && context.family === 'SOLANA',
    allAttemptsExpired: ({ context }) => allAttemptsExpired(context),
    /** Solana: a rebuilt attempt that could not be prepared yet is tried again (its predecessors all expired). */
    rebuildDue: ({ context, event }) =>
      event.type === 'WAKE' &&
      context.family === 'SOLANA' &&
      context.autoRetry?.state === 'active' &&
      allAttemptsExpired(context) &&
      event.at < context.autoRetry.expiresAt &&
      event.at >= (context.wakeAt ?? 0),
    /** Solana: the deadline passed with every attempt proven expired: nothing can land and nothing more is made. */
    expiredAtDeadline: ({ context, event }) =>
      event.type === 'WAKE' &&
      context.family === 'SOLANA' &&
      allAttemptsExpired(context) &&
      context.autoRetry !== null &&
      context.autoRetry !== undefined &&
      event.at >= context.autoRetry.expiresAt,
    /** A final inclusion of a candidate that is none of the payment's attempts: its manual cancellation won. */
    cancelled: ({ context, event }) =>
      event.type === 'OBSERVED' &&
      event.observation.status === 'included' &&
      event.observation.final &&
      event.hash !== undefined &&
      !context.attempts.some((a) => a.hash === event.hash),
    // An auto-retry payment is bounded by its deadline and the chain's proof, not by the monitor window.
    windowOver: ({ context, event }) =>
      event.type === 'WAKE' &&
      !context.autoRetry &&
      context.broadcastAt !== null &&
      event.at >= context.broadcastAt + context.monitorWindowMs,
    retryExpired: ({ context, event }) =>
      event.type === 'WAKE' && context.autoRetry?.state === 'active' && event.at >= context.autoRetry.expiresAt,
    retryExhausted: ({ context, event }) =>
      event.type === 'WAKE' &&
      context.family === 'EVM' &&
      context.autoRetry?.state === 'active' &&
      context.autoRetry.bumpCount >= MAX_REPLACEMENTS &&
      event.at >= (replacementWake(context) ?? Number.POSITIVE_INFINITY),
    retryDue: ({ context, event }) =>
      event.type === 'WAKE' &&
      context.family === 'EVM' &&
      context.autoRetry?.state === 'active' &&
      event.at >= (replacementWake(context) ?? Number.POSITIVE_INFINITY),
    /** Admitted as a prepared step: it waits for SIGN instead of signing on spawn. */
    startsOnSign: ({ context }) => Boolean(context.prepared),
    signAllowed: ({ event }) => event.type === 'SIGN' && event.decision?.effect === 'allow',
    signDenied: ({ event }) => event.type === 'SIGN' && event.decision?.effect === 'deny',
    signHeld: ({ event }) => event.type === 'SIGN' && event.decision?.effect === 'hold',
    planReplace: ({ event }) => (event as { output?: ReplacementPlan }).output?.kind === 'replace',
    planWait: ({ event }) => (event as { output?: ReplacementPlan }).output?.kind === 'wait',
  },
  actions: {
    recordInclusion: assign(({ context, event }) => {
      if (event.type !== 'OBSERVED' || event.observation.status !== 'included') return {};
      const o = event.observation;
      // What the chain shows replaces what was noted on the way (an unanswered send's error, an earlier failure).
      // The candidate the chain included: attempt 0 unless the event names another.
      const winner = context.attempts.find((a) => a.hash === (event.hash ?? context.hash)) ?? context.attempts[0]!;
      const replaced = winner.ordinal !== 0 && winner.hash !== null;
      return {
        // Included: whatever its send's verdict was, a node had the bytes.
        attempts: withAttempt(context, winner.ordinal, { stage: 'submitted' }),
        blockNumber: o.blockNumber,
        blockHash: o.blockHash,
        wakeAt: null,
        failure: null,
        monitoring:
          o.error || replaced
            ? { ...(o.error ? { error: o.error } : {}), ...(replaced ? { winningHash: winner.hash! } : {}) }
            : null,
        autoRetry: retryWith(context, { state: 'resolved', reason: null }),
      };
    }),
    /**
     * Proven unable to execute: found by the monitor after a node accepted the bytes; never accepted (its submission
     * unknown), the broadcast did not take.
     */
    recordDropped: assign(({ context, event }) => {
      const dropped: Partial<PaymentContext> = droppedFailure(
        context,
        event,
        context.acceptedAt !== null ? 'monitor' : 'broadcast',
      );
      if (context.autoRetry && event.type === 'OBSERVED' && event.observation.status === 'dropped') {
        // The spec: a finalized nonce past every saved attempt resolves the retry (no success event follows). Solana:
        // every attempt expired (TRANSACTION_EXPIRED, the failure code); the reason says why none followed.
        const retry = context.autoRetry;
        const reason =
          event.observation.reason === 'nonce_consumed'
            ? 'RECOVERY_NONCE_CONSUMED'
            : retry.state !== 'active'
              ? (retry.reason ?? 'TRANSACTION_EXPIRED')
              : retry.bumpCount >= MAX_REPLACEMENTS
                ? 'ATTEMPT_LIMIT_REACHED'
                : event.at >= retry.expiresAt
                  ? 'DEADLINE_REACHED'
                  : 'TRANSACTION_EXPIRED';
        dropped.autoRetry = retryWith(context, { state: 'resolved', reason });
      }
      const released = context.monitoring?.operatorRelease;
      return released && dropped.monitoring
        ? { ...dropped, monitoring: { ...dropped.monitoring, operatorRelease: released } }
        : dropped;
    }),
    /** Its manual cancellation took the nonce: the payment can never execute. */
    recordCancelled: assign(({ context, event }) => {
      if (event.type !== 'OBSERVED' || event.hash === undefined) return {};
      return {
        failure: {
          stage: 'monitor' as const,
          code: 'CANCELLED',
          message: `the manual cancellation ${event.hash} took this payment's nonce on the finalized chain; it can never execute`,
        },
        monitoring: { reason: 'nonce_consumed', winningHash: event.hash },
        autoRetry: retryWith(context, { state: 'resolved', reason: 'CANCELLED' }),
        wakeAt: null,
      };
    }),
    /** Solana: every attempt with a hash is proven expired; the next one is prepared (or, failing that, none). */
    noteExpired: assign(({ context }) => {
      const latest = context.attempts.reduce((n, a) => (a.hash !== null ? Math.max(n, a.ordinal) : n), 0);
      return { autoRetry: retryWith(context, { expiredThrough: latest }), wakeAt: null };
    }),
    /**
     * Solana: every attempt is proven expired and no further one is made (the deadline passed, the limit was reached,
     * or the retry stopped: `params.reason`, else the stop plan's, else the retry's own). Nothing can land: the record
     * fails with TRANSACTION_EXPIRED and the hold ends with the actor.
     */
    expireAll: assign(({ context, event }, params: { reason?: string } | undefined) => {
      const plan = (event as { output?: ReplacementPlan }).output;
      const stop = plan?.kind === 'stop' ? plan : null;
      const reason = params?.reason ?? stop?.reason ?? context.autoRetry?.reason ?? 'TRANSACTION_EXPIRED';
      const sent = context.attempts.filter((a) => a.hash !== null).length;
      return {
        failure: {
          stage: context.acceptedAt !== null ? ('monitor' as const) : ('broadcast' as const),
          code: 'TRANSACTION_EXPIRED',
          message: `every attempt (${sent}) expired without landing: their blockhashes are past their last valid block height at finalized commitment and their signatures absent; no further attempt is made (${reason}${stop?.message ? `: ${stop.message}` : ''})`,
        },
        monitoring: { ...(context.monitoring ?? {}), reason: 'expired' },
        autoRetry: retryWith(context, { state: 'resolved', reason }),
        wakeAt: null,
      };
    }),
    /** No new attempt from now on (`reason`); the payment stays watched and held while an attempt may execute. */
    stopRetry: assign(({ context }, params: { reason: string }) => ({
      autoRetry: retryWith(context, { state: 'stopped', reason: params.reason }),
      wakeAt: null,
    })),
    /** The replacement effect's plan: a new attempt, about to be signed (its stage is durable with this step). */
    addReplacement: assign(({ context, event }) => {
      const plan = (event as unknown as { output: Extract<ReplacementPlan, { kind: 'replace' }> }).output;
      const retry = context.autoRetry!;
      const ordinal = context.attempts.length;
      return {
        attempts: [
          ...context.attempts,
          {
            ordinal,
            stage: 'signing' as const,
            preparedAt: plan.at,
            hash: null,
            lastBroadcastAt: null,
            ...(plan.lastValidBlockHeight === undefined ? {} : { lastValidBlockHeight: plan.lastValidBlockHeight }),
          },
        ],
        autoRetry: {
          ...retry,
          reason: null,
          bumpCount: retry.bumpCount + 1,
          replacements: [...retry.replacements, { ordinal, payload: plan.payload, signedTransaction: null }],
        },
        wakeAt: null,
      };
    }),
    /** Not now (funds short, base fee over the ceiling, the node did not answer): looked at again after the delay. */
    waitForReplacement: assign(({ context, event }) => {
      const out = (event as { output?: ReplacementPlan; error?: unknown }).output;
      const reason = out?.kind === 'wait' ? out.reason : 'RPC_UNAVAILABLE';
      const at = out?.at ?? errorOf((event as { error?: unknown }).error).at ?? context.preparedAt;
      const retry = context.autoRetry!;
      const delay =
        context.family === 'SOLANA'
          ? Math.min(retry.replacementDelayMs, SOLANA_REBUILD_RETRY_MS)
          : retry.replacementDelayMs;
      return { autoRetry: { ...retry, reason }, wakeAt: Math.min(at + delay, retry.expiresAt) };
    }),
    stopFromPlan: assign(({ context, event }) => {
      const out = (event as unknown as { output: Extract<ReplacementPlan, { kind: 'stop' }> }).output;
      return { autoRetry: retryWith(context, { state: 'stopped', reason: out.reason }), wakeAt: null };
    }),
    replacementSigned: assign(({ context, event }) => {
      const signed = (event as unknown as { output: SignedPayment }).output;
      const last = latestAttempt(context);
      const retry = context.autoRetry!;
      return {
        attempts: withAttempt(context, last.ordinal, { stage: 'signed', hash: signed.hash }),
        autoRetry: {
          ...retry,
          replacements: retry.replacements.map((r) =>
            r.ordinal === last.ordinal ? { ...r, signedTransaction: signed.signedTransaction } : r,
          ),
        },
      };
    }),
    /**
     * A replacement's signature failed. Refused (no usable signature): the attempt is `rejected`; uncertain (it may
     * exist): it stays `signing` and is never asked again. Either way no new attempt follows.
     */
    replacementSignFailed: assign(({ context, event }) => {
      const e = errorOf((event as { error?: unknown }).error);
      const last = latestAttempt(context);
      const uncertain = UNCERTAIN_SIGNING.has(e.code);
      return {
        attempts: uncertain ? context.attempts : withAttempt(context, last.ordinal, { stage: 'rejected' }),
        autoRetry: retryWith(context, { state: 'stopped', reason: signingStopReason(e.code) }),
        wakeAt: null,
      };
    }),
    /** A replacement's send: accepted, refused (an earlier attempt may be in) or unanswered; the next is timed from it. */
    replacementSent: assign(({ context, event }) => {
      const out = (event as unknown as { output: BroadcastOutcome }).output;
      const last = latestAttempt(context);
      const stage =
        out.outcome === 'accepted' ? 'submitted' : out.outcome === 'unanswered' ? 'submission_unknown' : last.stage;
      const attempts = withAttempt(context, last.ordinal, { stage, lastBroadcastAt: out.at });
      return {
        attempts,
        ...(out.outcome === 'accepted'
          ? // A Solana payment whose first attempt no node took (it expired unanswered) is now on the network.
            { acceptedAt: context.acceptedAt ?? out.at, broadcastAt: context.broadcastAt ?? out.at }
          : { monitoring: { ...(context.monitoring ?? {}), error: out.message } }),
        wakeAt: replacementWake(context, attempts),
      };
    }),
    replacementSendFailed: assign(({ context, event }) => {
      const e = errorOf((event as { error?: unknown }).error);
      const last = latestAttempt(context);
      const at = e.at ?? last.preparedAt;
      const attempts = withAttempt(context, last.ordinal, { stage: 'submission_unknown', lastBroadcastAt: at });
      return {
        attempts,
        monitoring: { ...(context.monitoring ?? {}), error: e.message },
        wakeAt: replacementWake(context, attempts),
      };
    }),
    /** A released payment proven unable to execute: its failure stands; the proof is noted beside it. */
    recordProof: assign(({ context, event }) => {
      if (event.type !== 'OBSERVED' || event.observation.status !== 'dropped') return {};
      const o = event.observation;
      return {
        monitoring: {
          ...(context.monitoring ?? {}),
          reason: o.reason,
          ...(o.reason === 'nonce_consumed' ? { winningHash: o.winningHash } : {}),
        },
        autoRetry: retryWith(context, { state: 'resolved' }),
        wakeAt: null,
      };
    }),
    /** The operator's release: noted with the status the record keeps; no more sends or WAKEs. */
    noteOperatorRelease: assign(({ context, event }, params: { status: TransactionStatus }) => {
      if (event.type !== 'OPERATOR_RELEASE') return {};
      return {
        operatorRelease: { reason: event.reason, by: event.by, at: event.at, status: params.status },
        wakeAt: null,
        monitoring: {
          ...(context.monitoring ?? {}),
          operatorRelease: { reason: event.reason, releasedAt: new Date(event.at).toISOString() },
        },
      };
    }),
    /** A prepared step's SIGN allowed: attempt 0's signing is durable with this step, before the signature is asked. */
    startSigning: assign(({ context }) => ({
      attempts: withAttempt(context, 0, { stage: 'signing' }),
      signRefusal: null,
    })),
    /** A prepared step's SIGN held by its policy: nothing signed, the step stays prepared with the same payload. */
    noteSignRefusal: assign(({ event }) => {
      if (event.type !== 'SIGN' || !event.decision || event.decision.effect === 'allow') return {};
      const d = event.decision;
      return {
        signRefusal: {
          effect: d.effect,
          code: d.code,
          httpStatus: d.httpStatus,
          message: d.message,
          details: d.details,
          at: event.at ?? 0,
        },
      };
    }),
    /** A prepared step's SIGN denied for good: it fails with the policy's code; nothing was signed. */
    failSignDenied: assign(({ context, event }) => {
      if (event.type !== 'SIGN' || !event.decision || event.decision.effect === 'allow') return {};
      const d = event.decision;
      return {
        attempts: withAttempt(context, 0, { stage: 'rejected' }),
        failure: { stage: 'mpc_sign' as const, code: d.code, message: d.message },
        signRefusal: {
          effect: d.effect,
          code: d.code,
          httpStatus: d.httpStatus,
          message: d.message,
          details: d.details,
          at: event.at ?? 0,
        },
      };
    }),
    /** A prepared step cancelled before its SIGN was taken: nothing was signed, and nothing ever will be. */
    failCancelled: assign(({ context, event }) => {
      const by = event.type === 'OPERATOR_RELEASE' ? ' by the operator' : '';
      const reason = (event.type === 'CANCEL' || event.type === 'OPERATOR_RELEASE') && event.reason;
      return {
        attempts: withAttempt(context, 0, { stage: 'rejected' }),
        failure: {
          stage: 'mpc_sign' as const,
          code: 'CANCELLED_BEFORE_SIGNING',
          message: `cancelled${by} before it was signed${reason ? ` (${reason})` : ''}: nothing was signed or broadcast, and its nonce is free again`,
        },
      };
    }),
    /** The WAKE that ends the monitor window (resending the bytes meanwhile is the chain poller's work). */
    wakeAtWindowEnd: assign(({ context }) => ({
      // An auto-retry payment wakes for its replacement (or its deadline) instead.
      wakeAt: context.autoRetry
        ? replacementWake(context)
        : context.broadcastAt === null
          ? null
          : context.broadcastAt + context.monitorWindowMs,
    })),
    timedOut: assign({
      failure: () => ({
        stage: 'monitor_timeout' as const,
        code: 'MONITOR_TIMEOUT',
        message: 'the transaction reached no final state within the monitor window; it may still confirm later',
      }),
      wakeAt: () => null,
    }),
  },
}).createMachine({
  id: 'payment',
  context: ({ input }) => ({
    ...input,
    signedTransaction: null,
    hash: null,
    failure: null,
    blockNumber: null,
    blockHash: null,
    monitoring: null,
    unansweredBroadcasts: 0,
    broadcastAt: null,
    acceptedAt: null,
    wakeAt: null,
    // Admission and the signing request commit together: attempt 0's first durable stage is `signing`; a prepared
    // step's is `prepared` (its signing is asked by the step that takes its SIGN).
    attempts: [
      {
        ordinal: 0,
        stage: input.prepared ? 'prepared' : 'signing',
        preparedAt: input.preparedAt,
        hash: null,
        lastBroadcastAt: null,
        ...(typeof input.lastValidBlockHeight === 'number' ? { lastValidBlockHeight: input.lastValidBlockHeight } : {}),
      },
    ],
    autoRetry: input.autoRetry
      ? { ...input.autoRetry, state: 'active', reason: null, bumpCount: 0, replacements: [] }
      : null,
    ...(input.prepared ? { signRefusal: null } : {}),
  }),
  initial: 'admitted',
  on: {
    OBSERVED: [
      { guard: 'cancelled', target: '.failed', actions: 'recordCancelled' },
      { guard: 'finalSuccess', target: '.confirmed', actions: 'recordInclusion' },
      { guard: 'finalFailure', target: '.reverted', actions: 'recordInclusion' },
      { guard: 'dropped', target: '.failed', actions: 'recordDropped' },
    ],
  },
  states: {
    /** Left at once, in the spawn's own step: a prepared step waits for its SIGN, any other payment is signed. */
    admitted: {
      always: [{ guard: 'startsOnSign', target: 'prepared' }, { target: 'signing' }],
    },
    /**
     * Status `pending`, holding the wallet and its nonce: a prepared step with its exact payload (transaction, nonce,
     * fees), durable, unsigned. SIGN is decided by the payment definition in the step that applies it: allowed, it is
     * signed (from then on CANCEL is refused); denied, it fails with the policy's code; held, it stays prepared with
     * the refusal noted, to be signed by a later SIGN exactly as prepared. CANCEL ends it, nothing signed.
     */
    prepared: {
      on: {
        SIGN: [
          { guard: 'signAllowed', target: 'signing', actions: 'startSigning' },
          { guard: 'signDenied', target: 'failed', actions: 'failSignDenied' },
          { guard: 'signHeld', actions: 'noteSignRefusal' },
        ],
        CANCEL: { target: 'failed', actions: 'failCancelled' },
        // Releasing the hold of an unsigned step would let another payment take its nonce while it may still be
        // signed: the operator's release ends it as a cancellation does.
        OPERATOR_RELEASE: {
          target: 'failed',
          actions: ['failCancelled', { type: 'noteOperatorRelease', params: { status: 'failed' } }],
        },
      },
    },
    signing: {
      invoke: {
        src: 'sign',
        input: ({ context }) => ({
          projectId: context.projectId,
          walletId: context.walletId,
          payload: context.payload,
        }),
        onDone: {
          target: 'broadcasting',
          actions: assign({
            signedTransaction: ({ event }) => event.output.signedTransaction,
            hash: ({ event }) => event.output.hash,
            attempts: ({ context, event }) => withAttempt(context, 0, { stage: 'signed', hash: event.output.hash }),
          }),
        },
        onError: {
          target: 'failed',
          actions: assign({
            attempts: ({ context, event }) =>
              UNCERTAIN_SIGNING.has(errorOf(event.error).code)
                ? context.attempts
                : withAttempt(context, 0, { stage: 'rejected' }),
            failure: ({ event }) => {
              const e = errorOf(event.error);
              if (e.code === 'EFFECT_INTERRUPTED') {
                return {
                  stage: 'mpc_sign' as const,
                  code: 'SIGNING_INTERRUPTED',
                  message:
                    'the service stopped while this payment was being signed; it is never signed again automatically and nothing was broadcast',
                };
              }
              return { stage: SIGN_STAGE[e.code] ?? ('mpc_sign' as const), code: e.code, message: e.message };
            },
            // The spec: the first signature refused (or uncertain) ends an auto-retry payment before anything was
            // sent; the record is `failed` and the retry `stopped`, never `active` with nothing left to do.
            autoRetry: ({ context, event }) =>
              retryWith(context, { state: 'stopped', reason: signingStopReason(errorOf(event.error).code) }),
          }),
        },
      },
    },
    broadcasting: {
      on: {
        // Solana auto-retry: a resend of attempt 0 under way when its expiry is proven: the next attempt follows.
        OBSERVED: { guard: 'expiredRebuildable', target: 'replacing', actions: 'noteExpired' },
        OPERATOR_RELEASE: {
          target: 'operatorReleased',
          actions: { type: 'noteOperatorRelease', params: { status: 'pending' } },
        },
      },
      invoke: {
        src: 'broadcast',
        input: broadcastInput,
        onDone: [
          {
            guard: 'accepted',
            target: 'submitted',
            actions: [
              assign({
                broadcastAt: ({ context, event }) => context.broadcastAt ?? event.output.at,
                acceptedAt: ({ context, event }) => context.acceptedAt ?? event.output.at,
                attempts: ({ context, event }) =>
                  withAttempt(context, 0, { stage: 'submitted', lastBroadcastAt: event.output.at }),
              }),
              'wakeAtWindowEnd',
            ],
          },
          {
            guard: 'provenRejection',
            target: 'released',
            actions: assign(({ context, event }) => {
              const o = event.output as Extract<BroadcastOutcome, { outcome: 'rejected' }>;
              return {
                failure: { stage: 'broadcast' as const, code: o.code, message: o.message },
                wakeAt: null,
                attempts: withAttempt(context, 0, { lastBroadcastAt: o.at }),
                // An auto-retry payment refused on its first send makes no other attempt: the refusal says why.
                autoRetry: retryWith(context, { state: 'stopped', reason: o.code }),
              };
            }),
          },
          {
            target: 'retrying',
            actions: assign(({ context, event }) => ({
              unansweredBroadcasts: context.unansweredBroadcasts + 1,
              broadcastAt: context.broadcastAt ?? event.output.at,
              monitoring: { error: (event.output as { message?: string }).message ?? 'the node did not answer' },
              wakeAt: event.output.at + BROADCAST_RETRY_MS,
              // A node that took the bytes once keeps them: only a send before any acceptance leaves it unknown.
              attempts: withAttempt(context, 0, {
                stage: context.acceptedAt === null ? 'submission_unknown' : 'submitted',
                lastBroadcastAt: event.output.at,
              }),
            })),
          },
        ],
        onError: {
          // The effect answers every node verdict as an outcome, so this is the effect itself failing: retry later
          // like an unanswered send, counting from when the failure was seen.
          target: 'retrying',
          actions: assign(({ context, event }) => {
            const e = errorOf(event.error);
            const at = e.at ?? context.wakeAt ?? context.broadcastAt;
            return {
              unansweredBroadcasts: context.unansweredBroadcasts + 1,
              monitoring: { error: e.message },
              wakeAt: at === null ? null : at + BROADCAST_RETRY_MS,
              attempts:
                context.acceptedAt === null
                  ? withAttempt(context, 0, { stage: 'submission_unknown' })
                  : context.attempts,
            };
          }),
        },
      },
    },
    /**
     * Status `pending`: the submission is unknown (no answer, or one that proves nothing); the exact bytes are sent
     * again (they may already be in), and a refusal from now on proves nothing of the copy that may be.
     */
    retrying: {
      on: {
        // Solana auto-retry: attempt 0, never known taken, proven expired: a rebuilt attempt follows.
        OBSERVED: { guard: 'expiredRebuildable', target: 'replacing', actions: 'noteExpired' },
        WAKE: [{ guard: 'windowOver', target: 'watching', actions: 'timedOut' }, { target: 'broadcasting' }],
        OPERATOR_RELEASE: {
          target: 'operatorReleased',
          actions: { type: 'noteOperatorRelease', params: { status: 'pending' } },
        },
      },
    },
    /**
     * Status `submitted`: a node accepted the bytes. The chain poller looks them up each round (and sends them again
     * while the node does not show them); the only WAKE left is the end of the monitor window.
     */
    submitted: {
      on: {
        // Solana auto-retry: the latest attempt (and so every one) proven expired: the next is prepared.
        OBSERVED: { guard: 'expiredRebuildable', target: 'replacing', actions: 'noteExpired' },
        WAKE: [
          {
            guard: 'expiredAtDeadline',
            target: 'failed',
            actions: { type: 'expireAll', params: { reason: 'DEADLINE_REACHED' } },
          },
          { guard: 'rebuildDue', target: 'replacing', actions: assign({ wakeAt: () => null }) },
          { guard: 'retryExpired', actions: { type: 'stopRetry', params: { reason: 'DEADLINE_REACHED' } } },
          { guard: 'retryExhausted', actions: { type: 'stopRetry', params: { reason: 'ATTEMPT_LIMIT_REACHED' } } },
          { guard: 'retryDue', target: 'replacing', actions: assign({ wakeAt: () => null }) },
          { guard: 'windowOver', target: 'watching', actions: 'timedOut' },
        ],
        OPERATOR_RELEASE: {
          target: 'operatorReleased',
          actions: { type: 'noteOperatorRelease', params: { status: 'submitted' } },
        },
      },
    },
    /**
     * Auto-retry (status `submitted`): the latest attempt was not included in time (EVM), or is proven expired
     * (Solana); the replacement effect prices the next one from the market and the wallet's balance (a read,
     * at-least-once): replace, wait, or stop. A Solana payment whose every attempt expired fails when it stops.
     */
    replacing: {
      on: { OBSERVED: { guard: 'rebuilding' } },
      invoke: {
        src: 'prepareReplacement',
        input: ({ context }) => {
          const r = context.autoRetry!.replacements;
          return {
            chainKey: context.chainKey,
            from: context.walletAddress,
            payload: r.length > 0 ? r[r.length - 1]!.payload : context.payload,
            ceiling: context.autoRetry!.ceiling,
            ...(context.autoRetry!.intent ? { intent: context.autoRetry!.intent } : {}),
            apiKeyId: context.apiKeyId,
            projectId: context.projectId,
            walletId: context.walletId,
            admittedAt: context.preparedAt,
            chainId: context.chainId ?? context.network,
            transactionId: context.transactionId,
          };
        },
        onDone: [
          { guard: 'planReplace', target: 'signingReplacement', actions: 'addReplacement' },
          { guard: 'planWait', target: 'submitted', actions: 'waitForReplacement' },
          { guard: 'allAttemptsExpired', target: 'failed', actions: 'expireAll' },
          { target: 'submitted', actions: 'stopFromPlan' },
        ],
        onError: { target: 'submitted', actions: 'waitForReplacement' },
      },
    },
    /** Auto-retry: the replacement is signed (at-most-once, like every signature). */
    signingReplacement: {
      on: { OBSERVED: { guard: 'rebuilding' } },
      invoke: {
        src: 'sign',
        input: ({ context }) => ({
          projectId: context.projectId,
          walletId: context.walletId,
          payload: latestReplacement(context).payload,
        }),
        onDone: { target: 'broadcastingReplacement', actions: 'replacementSigned' },
        onError: [
          // Solana: its predecessors all expired, and this one has no usable signature: nothing can land.
          { guard: 'allAttemptsExpired', target: 'failed', actions: ['replacementSignFailed', 'expireAll'] },
          { target: 'submitted', actions: 'replacementSignFailed' },
        ],
      },
    },
    /** Auto-retry: the replacement's bytes are sent; whatever the verdict, the chain decides which attempt wins. */
    broadcastingReplacement: {
      invoke: {
        src: 'broadcast',
        input: ({ context }) => ({
          chainKey: context.chainKey,
          signedTransaction: latestReplacement(context).signedTransaction ?? '',
          hash: latestAttempt(context).hash ?? '',
          from: context.walletAddress,
          nonce: context.nonce,
        }),
        onDone: { target: 'submitted', actions: 'replacementSent' },
        onError: { target: 'submitted', actions: 'replacementSendFailed' },
      },
    },
    /**
     * Status `failed` / `monitor_timeout`: the window ran out, but the bytes may still execute, so the payment keeps
     * its hold and the poller keeps watching it (and sending its bytes again) until the chain shows an outcome.
     */
    watching: {
      on: {
        OPERATOR_RELEASE: {
          target: 'operatorReleased',
          actions: { type: 'noteOperatorRelease', params: { status: 'failed' } },
        },
      },
    },
    /**
     * The operator released the hold of a payment that could not resolve (a chain removed from the chains file, an
     * underpriced transaction never mined): no more sends, and the record keeps the status it had (a release claims
     * no outcome), but its bytes may still execute, so it is watched until the chain tells (the root's OBSERVED).
     * Not while signing: the signature is seconds away and decides what there is to watch.
     */
    operatorReleased: {},
    /**
     * Status `failed` (a node refused the bytes on their first send, which proves it did not take them): the wallet
     * is released, but the bytes exist, so the payment is watched until the chain proves they can no longer execute.
     * Should they execute (sent by whoever holds them), the record says so.
     */
    released: {
      on: {
        OBSERVED: [
          { guard: 'finalSuccess', target: 'confirmed', actions: 'recordInclusion' },
          { guard: 'finalFailure', target: 'reverted', actions: 'recordInclusion' },
          { guard: 'dropped', target: 'failed', actions: 'recordProof' },
        ],
      },
    },
    confirmed: { type: 'final' },
    reverted: { type: 'final' },
    failed: { type: 'final' },
  },
});
