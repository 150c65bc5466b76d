/**
 * The one decision point every signature passes before the enclave is asked (DESIGN §7, POLICIES.md §2 and §4).
 * Whoever is about to sign (a signing route, a payment's admission, the payment actor before a replacement, yield
 * steps later) builds a `SignatureRequest` with the request as its chain folder decodes it, asks the policy, and signs
 * only on `allow`.
 *
 * `createSignatureGate` is the policy the service runs: steps 0 to 8 of POLICIES.md §2 over the ports of
 * policy/policy-ports.ts (the key's switch and active guardrails; cases and reviews), the pure engine
 * (policy/evaluate-policies.ts), the spend ledger and the decision log. A decision, its spend reservations, its
 * decision-log row and the case or review it opens commit in one writer transaction; a payment's admission decides
 * inside the transaction that writes its record (`decideWithin`), so the record, its reservation and its log row are
 * written together or not at all.
 */

import { ServiceError } from '../../chains/domain/errors.ts';
import { type ChainFacts, NO_CHAIN_FACTS, type RequestAction, spendWindowMs } from '../../chains/domain/policies.ts';
import type { KeyEnvironment } from '../../chains/domain/projects.ts';
import type { WalletType } from '../../chains/domain/wallets.ts';
import { walletFamilies } from '../../chains/wallet-families.ts';
import type { SigningOperation } from '../../chains/wallet-family.ts';
import {
  DecisionBatch,
  type LoggedDecision,
  type LoggedEffect,
  type PolicyDecisionsRepo,
} from '../../store/policy-decisions-repo.ts';
import type { SpendRepo } from '../../store/spend-repo.ts';
import type { WalletRow } from '../../store/wallets-repo.ts';
import type { Writer } from '../../store/writer.ts';
import { policyRequestJson, traceJson } from './policy/decision-json.ts';
import {
  type DecisionTrace,
  evaluatePolicies,
  type PolicyDecision,
  type PolicyRequest,
  type SpendKey,
} from './policy/evaluate-policies.ts';
import { requestActionOf } from './policy/policy-actions.ts';
import type { HoldResolver, PolicySource } from './policy/policy-ports.ts';

/** The signing routes, `transfer` (a payment the service builds, signs and broadcasts), and yield's steps. */
export type SignatureOperation = SigningOperation | 'transfer' | 'yield_deposit' | 'yield_withdraw';

/** Who asks for a signature: an API key of a project, in its environment. */
export interface Requester {
  keyId: string;
  projectId: string;
  environment: KeyEnvironment;
}

/** What names a request for holds and replays (POLICIES.md §2 step 1). */
export interface RequestReference {
  /** The request's `Idempotency-Key`, when sent. */
  idempotencyKey: string | null;
  /** The route (`sign-message`, `transfer`, ...): with the wallet and the body it names a request sent without a key. */
  route: string;
  /** SHA-256 (hex) of the request body in canonical JSON; asked only when permissions are on. */
  bodyHash: () => string;
}

export interface SignatureRequest {
  principal: Requester;
  wallet: Pick<WalletRow, 'id' | 'type' | 'projectId'>;
  operation: SignatureOperation;
  /**
   * The spec's raw signatures: `sign-raw`, and `sign-message` on SOLANA, COSMOS, STELLAR and SUI wallets.
   * Policies deny these unless a rule allows `raw_signature`.
   */
  rawSignature: boolean;
  /** The chain the signature is for, when the request names one (EVM chain id, Solana network, ...). */
  chainId: string | null;
  /**
   * What the wallet's chain folder reads from the request (chains/<family>/extract-*-facts.ts); called only when
   * permissions are on. Absent: the request says nothing of a chain (NO_CHAIN_FACTS).
   */
  facts?: () => ChainFacts;
  /** Absent: a reference made of the wallet and the route alone (a signature the service starts itself). */
  reference?: RequestReference;
  /**
   * What the spend ledger counts this signature under: a payment's transaction id (its replacements are the same
   * payment), else the request's reference (a replay of the same body is the same signature), joined with
   * `signatureIdentity` when there is one.
   */
  spendRef?: string;
  /**
   * What the service chose that tells two signatures of the same body apart on chain, when it chose something: the
   * EVM nonce it filled in (two signatures of one nonce can never both execute), the blockhash of a Solana transfer it
   * built (two blockhashes can). The same body with another identity is another signature and counts again; without
   * it, a sign-only transfer sent twice would be counted once and could move twice.
   */
  signatureIdentity?: string;
  /** `X-Initiator-User-Id`, when sent: named on the case a hold opens. */
  initiatorUserId?: string | null;
  /**
   * A further signature of an operation already admitted (an auto-retry replacement, a later yield step): the partner
   * cannot resend it, so a hold does not open a case; it goes on only when the admission went through an approval of
   * the same rule, and stops otherwise.
   */
  continuation?: boolean;
  /**
   * With `continuation`, a later transaction of a yield operation: the spend reference of the operation's first
   * transaction, whose approval (by the same rule) covers the whole operation. A hold no such approval covers is then
   * resolved as the request's own (its case or review, which the partner's resend of the POST meets), not stopped.
   */
  approvedUnder?: string;
}

/** One entry of a denial's `deniedBy`. */
export interface DeniedBy {
  reason: string;
  policyId?: string;
  ruleId?: string;
  fact?: string;
}

export type SignatureDecision =
  | { effect: 'allow' }
  | {
      effect: 'deny';
      reason: string;
      policyId?: string;
      ruleId?: string;
      fact?: string;
      /** review-rejected: the case or review that was rejected. */
      caseId?: string;
      reviewId?: string;
    }
  /** 403 POLICY_REVIEW_REQUIRED; `details` is the body's context (`caseId` | `reviewId`, `status`, `expiresAt`). */
  | { effect: 'review'; details: Record<string, unknown> }
  /** An approval rule on a wallet bound to no authorization scope: 403 FORBIDDEN. */
  | { effect: 'forbidden'; policyId?: string; ruleId?: string };

export interface SignaturePolicy {
  /** Decides (and records the decision) in a transaction of its own; nothing is signed unless it answers `allow`. */
  decide(request: SignatureRequest): SignatureDecision | Promise<SignatureDecision>;
  /**
   * The same, synchronously, inside the caller's writer transaction: a payment's admission decides in the transaction
   * that writes its record. Absent: the caller asks `decide` before that transaction.
   */
  decideWithin?(request: SignatureRequest): SignatureDecision;
  /**
   * For a signature the caller makes at once and alone delivers (the sign-only routes): decides, throws the 403 of a
   * refusal, and runs `sign` on allow. When `sign` fails, what this request's decision reserved is released if no
   * usable signature under its spend reference can exist (POLICIES.md §4: "released only when no usable signature
   * exists"), and an approved case or review it used is left unused. Absent: `decide`, then `sign`; a failed
   * signature keeps its amount counted and its approval used.
   */
  signIfAllowed?<T>(request: SignatureRequest, sign: () => Promise<T>): Promise<T>;
}

/** Asks `policy` for `request` and signs with `sign` only on allow (see SignaturePolicy.signIfAllowed). */
export async function signIfAllowed<T>(
  policy: SignaturePolicy,
  request: SignatureRequest,
  sign: () => Promise<T>,
): Promise<T> {
  if (policy.signIfAllowed) return policy.signIfAllowed(request, sign);
  enforceDecision(await policy.decide(request));
  return sign();
}

const ALLOW: SignatureDecision = Object.freeze({ effect: 'allow' });

/** No policy: every signature is allowed (tests of other parts; the service runs createSignatureGate). */
export const allowAllSignatures: SignaturePolicy = { decide: () => ALLOW, decideWithin: () => ALLOW };

/** Whether `operation` on a wallet of `type` counts as a raw signature (spec: signing routes). */
export function isRawSignature(operation: SignatureOperation, type: WalletType): boolean {
  return operation === 'sign-raw' || (operation === 'sign-message' && walletFamilies[type].messageIsRawSignature);
}

/** The policy action of an operation (`raw_signature` is added beside it by the engine). */
function actionOf(operation: SignatureOperation): RequestAction {
  return operation === 'yield_deposit' || operation === 'yield_withdraw' ? operation : requestActionOf(operation);
}

/** The error a refusal answers; null for `allow`. Policy 403s are never stored as idempotent answers. */
export function decisionError(decision: SignatureDecision): ServiceError | null {
  switch (decision.effect) {
    case 'allow':
      return null;
    case 'deny': {
      const deniedBy: DeniedBy = { reason: decision.reason };
      if (decision.policyId !== undefined) deniedBy.policyId = decision.policyId;
      if (decision.ruleId !== undefined) deniedBy.ruleId = decision.ruleId;
      if (decision.fact !== undefined) deniedBy.fact = decision.fact;
      return new ServiceError('POLICY_DENIED', 403, 'a signing policy denied this request; nothing was signed', {
        details: {
          deniedBy: [deniedBy],
          ...(decision.policyId ? { policyId: decision.policyId } : {}),
          ...(decision.ruleId ? { ruleId: decision.ruleId } : {}),
          ...(decision.caseId ? { caseId: decision.caseId } : {}),
          ...(decision.reviewId ? { reviewId: decision.reviewId } : {}),
        },
      });
    }
    case 'review':
      return new ServiceError(
        'POLICY_REVIEW_REQUIRED',
        403,
        'this request needs an approval before it can be signed; nothing was signed: once approved, send the identical request again',
        { details: decision.details },
      );
    case 'forbidden':
      return new ServiceError(
        'FORBIDDEN',
        403,
        'a signing policy requires an approval for this request, and the wallet is bound to no authorization scope; nothing was signed',
        {
          details: {
            ...(decision.policyId ? { policyId: decision.policyId } : {}),
            ...(decision.ruleId ? { ruleId: decision.ruleId } : {}),
          },
        },
      );
  }
}

/** Turns a decision into "go ahead" or the spec's 403 answer; nothing is signed after a throw. */
export function enforceDecision(decision: SignatureDecision): void {
  const error = decisionError(decision);
  if (error) throw error;
}

/** The request's reference (POLICIES.md §2 step 1) and its body's hash. */
export function referenceOf(request: SignatureRequest): { reference: string; bodyHash: string } {
  const ref = request.reference;
  if (!ref) {
    // A signature the service starts itself (a replacement): named by what it is for.
    return { reference: `ref:${request.spendRef ?? `${request.wallet.id}:${request.operation}`}`, bodyHash: '' };
  }
  const bodyHash = ref.bodyHash();
  return {
    reference:
      ref.idempotencyKey !== null ? `key:${ref.idempotencyKey}` : `body:${request.wallet.id}:${ref.route}:${bodyHash}`,
    bodyHash,
  };
}

/** How long, and up to how many rows, decision-log rows of answers that waited for no write are queued. */
export const LOG_FLUSH_MS = 50;
export const LOG_FLUSH_ROWS = 1000;

/** What a decision reserved: the spend reference it counted under, and whether it counted anything new. */
interface Reservation {
  spendRef: string;
  added: boolean;
  /** The approved case or review the decision used, and when. */
  used?: { hold: { caseId?: string; reviewId?: string }; at: number };
}

/**
 * What a decision read of its request, kept for a second run of the same request: a decision that reserves is taken
 * twice (on what is committed, then inside the write), and the second reads what the first computed (the body is
 * hashed and the facts extracted once).
 */
interface Read {
  ref?: { reference: string; bodyHash: string };
  chain?: ChainFacts;
}

/** One decision being taken: what its steps after the engine (reserve, log, holds) read. */
interface Deciding {
  request: SignatureRequest;
  apiKeyId: string;
  walletId: string;
  reference: string;
  bodyHash: string;
  spendRef: string;
  /** The network spend is counted on; null: none. */
  network: string | null;
  moved: ReadonlyArray<{ asset: string; amount: bigint }>;
  policyRequest: PolicyRequest;
  at: number;
  inWrite: boolean;
  out: Reservation | undefined;
  /** What this signature already counts per `network\u0000asset`; null on no network. */
  own: Map<string, { amount: bigint; countedAt: number }> | null;
}

const NOTHING_MOVED: ReadonlyArray<{ asset: string; amount: bigint }> = Object.freeze([]);

/** A chain's amounts as the ledger counts them: per asset (EVM contracts lower-case), positive, known. */
function movedAmounts(chain: ChainFacts, evm: boolean): Array<{ asset: string; amount: bigint }> {
  const byAsset = new Map<string, bigint>();
  for (const entry of chain.spend.moved) {
    if (typeof entry.amount !== 'string' || !/^[0-9]{1,80}$/.test(entry.amount)) continue;
    const asset = evm ? entry.asset.toLowerCase() : entry.asset;
    byAsset.set(asset, (byAsset.get(asset) ?? 0n) + BigInt(entry.amount));
  }
  return [...byAsset].filter(([, amount]) => amount > 0n).map(([asset, amount]) => ({ asset, amount }));
}

/** The network spend is counted on: a concrete selector, or null (none named, or any). */
function spendNetwork(chain: ChainFacts): string | null {
  return typeof chain.network === 'string' && chain.network !== '*' ? chain.network : null;
}

/** A request as the decision log keeps it (and simulate reads it back): the engine's input, JSON-safe. */
export interface LoggedRequest extends PolicyRequest {}

/**
 * The service's decision point (POLICIES.md §2, §4):
 * 0. permissions off for the key → allow, policies are not read and nothing is written;
 * 1. the reference (`key:<Idempotency-Key>`, else `body:<wallet>:<route>:<sha256>`): bound to a case or review of
 *    another body → 409 CONFLICT (HoldResolver.checkReference);
 * 2–6. the engine over the key's active guardrails, spend windows read from the ledger (the signature's own amounts,
 *    counted already by a replay or a replacement, are not counted twice);
 * 7. a hold → HoldResolver.resolve: proceed (allowed), rejected, required, forbidden;
 * 8. allow → what the request moves is reserved in the ledger under its spend reference.
 * Every decision taken with permissions on is logged with its request and trace, in the same transaction.
 */
export function createSignatureGate(deps: {
  policies: PolicySource;
  holds: HoldResolver;
  spend: Pick<SpendRepo, 'entriesOf' | 'windowTotal' | 'reserve' | 'release'>;
  decisions: Pick<PolicyDecisionsRepo, 'append' | 'appendBatch' | 'approvedHold'>;
  writer: Pick<Writer, 'write'>;
  now?: () => number;
  /** Where a decision-log row that could not be written is reported (rows written after the answer, see `decide`). */
  log?: (message: string, err: unknown) => void;
}): Required<SignaturePolicy> & { enabled(apiKeyId: string): boolean; flush(): Promise<void> } {
  const { policies, holds, spend, decisions, writer } = deps;
  const now = deps.now ?? Date.now;
  const report = deps.log ?? (() => undefined);

  /**
   * Log entries of decisions answered without a write (messages, denials): rows of shadow mode, not of money. They are
   * queued per key and written every LOG_FLUSH_MS (or LOG_FLUSH_ROWS entries), each key's as one batch row: one commit
   * and one fsync for hundreds of answers, and one insert a key instead of one a decision (test/bench/policy-decide.ts
   * http). A crash loses at most that span of them; `flush` writes them at a graceful stop.
   */
  let queued = new Map<string, DecisionBatch>();
  /** Batches closed before the flush because they would have spanned more than DECISION_BATCH_MAX_SPAN_MS. */
  let closed: DecisionBatch[] = [];
  let queuedCount = 0;
  let timer: NodeJS.Timeout | undefined;
  function flush(): Promise<void> {
    if (timer) clearTimeout(timer);
    timer = undefined;
    const batches = [...closed, ...queued.values()];
    const count = queuedCount;
    queued = new Map();
    closed = [];
    queuedCount = 0;
    if (batches.length === 0) return Promise.resolve();
    return writer
      .write(
        () => {
          for (const b of batches) decisions.appendBatch(b);
        },
        { bounded: false },
      )
      .catch((err: unknown) => report(`${count} policy decisions were not logged`, err));
  }
  function queueRow(row: LoggedDecision): void {
    let batch = queued.get(row.apiKeyId);
    if (batch?.outspans(row.decidedAt)) {
      // The clock moved on (or back) past what one batch spans: the next entries start another.
      closed.push(batch);
      batch = undefined;
    }
    if (!batch) {
      batch = new DecisionBatch(row.apiKeyId);
      queued.set(row.apiKeyId, batch);
    }
    batch.add(row);
    queuedCount += 1;
    if (queuedCount >= LOG_FLUSH_ROWS) void flush();
    else if (!timer) {
      timer = setTimeout(() => void flush(), LOG_FLUSH_MS);
      timer.unref();
    }
  }

  function decideWithin(request: SignatureRequest): SignatureDecision {
    return run(request, true)!;
  }

  /**
   * Steps 0 to 8. `inWrite`: inside a writer transaction, everything is written there. Outside one (`decide`'s first
   * try), the decision is taken on what is committed and answered at once only when it writes nothing that decides
   * another request (no reservation, no case or review): then its log row is queued to the writer; otherwise null, and
   * the caller decides again inside a write. `read`: what an earlier run of the same request read of it (its reference,
   * body hash and facts), so that a decision taken twice computes them once.
   */
  function run(request: SignatureRequest, inWrite: boolean, out?: Reservation, read?: Read): SignatureDecision | null {
    const apiKeyId = request.principal.keyId;
    const permissions = policies.permissions(apiKeyId);
    // Step 0.
    if (!permissions.enabled) return ALLOW;
    const at = now();
    const wallet = request.wallet;
    // Step 1.
    let ref = read?.ref;
    if (!ref) {
      ref = referenceOf(request);
      if (read) read.ref = ref;
    }
    const { reference, bodyHash } = ref;
    if ((!request.continuation || request.approvedUnder !== undefined) && request.reference) {
      holds.checkReference(apiKeyId, reference, bodyHash);
    }
    let chain = read?.chain;
    if (!chain) {
      chain = request.facts ? request.facts() : NO_CHAIN_FACTS;
      if (read) read.chain = chain;
    }
    const policyRequest: PolicyRequest = {
      wallet: { id: wallet.id, type: wallet.type },
      action: actionOf(request.operation),
      rawSignature: request.rawSignature,
      chain,
      at,
    };
    const spendRef =
      request.spendRef ??
      (request.signatureIdentity === undefined ? reference : `${reference}#${request.signatureIdentity}`);
    if (out) out.spendRef = spendRef;
    const network = spendNetwork(chain);
    const moved = network === null ? NOTHING_MOVED : movedAmounts(chain, wallet.type === 'EVM');
    const d: Deciding = {
      request,
      apiKeyId,
      walletId: wallet.id,
      reference,
      bodyHash,
      spendRef,
      network,
      moved,
      policyRequest,
      at,
      inWrite,
      out,
      own: null,
    };
    // What this signature already counts (a replay, a replacement): not counted again in the windows it fell in.
    // A request on no network reads no window and reserves nothing.
    if (network !== null) {
      const own = new Map<string, { amount: bigint; countedAt: number }>();
      for (const e of spend.entriesOf(apiKeyId, spendRef)) {
        if (e.releasedAt === null)
          own.set(`${e.network}\u0000${e.asset}`, { amount: BigInt(e.amount), countedAt: e.countedAt });
      }
      d.own = own;
    }
    const decision = evaluatePolicies(policies.activeGuardrails(apiKeyId), policyRequest, (key) => lookup(d, key));
    // Outside a write: only a decision that writes nothing another decision reads is answered from here.
    if (!inWrite && (decision.effect === 'hold' || (decision.effect === 'allow' && moved.length > 0))) return null;
    return settle(d, decision);
  }

  /** A spend window's total for the engine, less what this signature already counts in it. */
  function lookup(d: Deciding, key: SpendKey): bigint {
    const windowMs = spendWindowMs(key.window);
    if (windowMs === null) throw new TypeError(`a stored policy has the spend window ${key.window}`);
    let total = spend.windowTotal(
      {
        apiKeyId: d.apiKeyId,
        walletId: d.walletId,
        network: key.network,
        asset: key.asset,
        windowMs,
        windowStart: key.windowStart,
      },
      { materialize: d.inWrite },
    );
    const mine = d.own?.get(`${key.network}\u0000${key.asset}`);
    if (mine && mine.countedAt >= key.windowStart && mine.countedAt < key.windowStart + windowMs) {
      total = total > mine.amount ? total - mine.amount : 0n;
    }
    return total;
  }

  /** Logs the decision with its request and trace: in the write, or queued when answered without one. */
  function log(
    d: Deciding,
    effect: LoggedEffect,
    reason: string | null,
    policyId: string | null,
    ruleId: string | null,
    holdId: string | null,
    trace: DecisionTrace,
  ): void {
    const row: LoggedDecision = {
      apiKeyId: d.apiKeyId,
      walletId: d.walletId,
      reference: d.reference,
      spendRef: d.spendRef,
      action: d.policyRequest.action,
      effect,
      reason,
      policyId,
      ruleId,
      holdId,
      request: policyRequestJson(d.policyRequest),
      trace: traceJson(trace),
      decidedAt: d.at,
    };
    if (d.inWrite) decisions.append(row);
    else queueRow(row);
  }

  /** Step 8: reserves what the request moves under its spend reference. */
  function reserve(d: Deciding): void {
    if (d.network === null || d.moved.length === 0) return;
    const added = spend.reserve(d.apiKeyId, d.walletId, d.spendRef, d.network, d.moved, d.at);
    if (d.out && added.length > 0) d.out.added = true;
  }

  function settle(d: Deciding, decision: PolicyDecision): SignatureDecision {
    switch (decision.effect) {
      case 'allow':
        reserve(d);
        log(d, 'allow', null, null, null, null, decision.trace);
        return ALLOW;
      case 'deny': {
        const policyId = 'policyId' in decision ? decision.policyId : undefined;
        const ruleId = 'ruleId' in decision ? decision.ruleId : undefined;
        const fact = 'fact' in decision ? decision.fact : undefined;
        log(d, 'deny', decision.reason, policyId || null, ruleId || null, null, decision.trace);
        return {
          effect: 'deny',
          reason: decision.reason,
          ...(policyId !== undefined ? { policyId } : {}),
          ...(ruleId !== undefined ? { ruleId } : {}),
          ...(fact !== undefined ? { fact } : {}),
        };
      }
      case 'hold': {
        const { request, apiKeyId, spendRef, at } = d;
        const rule = { policyId: decision.policyId, ruleId: decision.ruleId };
        if (request.continuation) {
          // The admission went through an approval of this rule: the operation it approved goes on.
          if (decisions.approvedHold(apiKeyId, request.approvedUnder ?? spendRef, decision.policyId, decision.ruleId)) {
            reserve(d);
            log(d, 'allow', null, rule.policyId, rule.ruleId, 'admission', decision.trace);
            return ALLOW;
          }
          // An auto-retry replacement cannot be resent: it stops. A yield operation's later transaction is asked of
          // people as its request (below).
          if (request.approvedUnder === undefined) {
            log(d, 'hold', 'continuation', rule.policyId, rule.ruleId, null, decision.trace);
            return { effect: 'review', details: rule };
          }
        }
        const version = decision.trace.policies.find((p) => p.policyId === decision.policyId)?.version ?? 0;
        const outcome = holds.resolve({
          apiKeyId,
          projectId: request.principal.projectId,
          walletId: d.walletId,
          reference: d.reference,
          bodyHash: d.bodyHash,
          policyId: decision.policyId,
          policyVersion: version,
          ruleId: decision.ruleId,
          ...(decision.approval ? { approval: decision.approval } : {}),
          initiatorUserId: request.initiatorUserId ?? null,
          at,
        });
        const holdId = outcome.kind === 'forbidden' ? null : (outcome.caseId ?? outcome.reviewId ?? null);
        const ids = outcome.kind === 'forbidden' ? {} : holdIds(outcome);
        switch (outcome.kind) {
          case 'proceed':
            if (d.out) d.out.used = { hold: ids, at };
            reserve(d);
            log(d, 'allow', null, rule.policyId, rule.ruleId, holdId, decision.trace);
            return ALLOW;
          case 'rejected':
            log(d, 'deny', 'review-rejected', rule.policyId, rule.ruleId, holdId, decision.trace);
            return { effect: 'deny', reason: 'review-rejected', ...rule, ...ids };
          case 'required':
            log(d, 'hold', null, rule.policyId, rule.ruleId, holdId, decision.trace);
            return {
              effect: 'review',
              details: { ...ids, status: outcome.status, expiresAt: outcome.expiresAt, ...rule },
            };
          case 'forbidden':
            log(d, 'forbidden', null, rule.policyId, rule.ruleId, null, decision.trace);
            return { effect: 'forbidden', ...rule };
        }
      }
    }
  }

  /**
   * The sign-only signatures of each spend reference being made now, in this process (the API is the one process that
   * signs for the routes). A generation lasts while one of them is in flight: `added` when one of its decisions counted
   * the amount (none was counted, or it had been released), `signed` when one of its signatures was made. A failed
   * signature releases the amount only as the last of its generation, when the generation counted it and signed
   * nothing: then no usable signature exists. An amount counted before the generation (a signature made earlier) is
   * never released by it. A crash forgets the generations and keeps the amounts: counted, never overspent.
   */
  const signing = new Map<string, { calls: number; added: boolean; signed: boolean }>();

  async function signIfAllowed<T>(asked: SignatureRequest, sign: () => Promise<T>): Promise<T> {
    const apiKeyId = asked.principal.keyId;
    if (!policies.permissions(apiKeyId).enabled) return sign();
    const request = asked;
    const out: Reservation = { spendRef: '', added: false };
    const read: Read = {};
    let decision = run(request, false, out, read);
    if (decision !== null) {
      // Answered without a write: nothing was reserved, nothing to release.
      enforceDecision(decision);
      return sign();
    }
    // Joined before the write that may reserve, so that a release decided meanwhile sees this call.
    const key = `${apiKeyId}\u0000${out.spendRef}`;
    let generation = signing.get(key);
    if (!generation) {
      generation = { calls: 0, added: false, signed: false };
      signing.set(key, generation);
    }
    generation.calls += 1;
    const gen = generation;
    const leave = () => {
      gen.calls -= 1;
      if (gen.calls === 0) signing.delete(key);
    };
    let result: T;
    try {
      decision = await writer.write(() => run(request, true, out, read)!);
      if (out.added) gen.added = true;
      enforceDecision(decision);
      result = await sign();
    } catch (err) {
      if (decision?.effect === 'allow' && ((gen.added && !gen.signed) || out.used)) {
        // Decided inside the writer, so that no decision of the same reference interleaves with the check.
        const used = out.used;
        await writer
          .write(() => {
            if (gen.added && gen.calls === 1 && !gen.signed) spend.release(apiKeyId, out.spendRef, now());
            // The approval let this signature through and none was made: the next identical request may use it.
            if (used) holds.restore?.(apiKeyId, used.hold, used.at);
          })
          .catch((e: unknown) => report(`the spend of a failed signature (${out.spendRef}) was not released`, e))
          .finally(leave);
      } else leave();
      throw err;
    }
    gen.signed = true;
    leave();
    return result;
  }

  return {
    enabled: (apiKeyId) => policies.permissions(apiKeyId).enabled,
    signIfAllowed,
    /** Writes the queued decision-log rows now (a graceful stop; tests that read the log). */
    flush,
    decide(request) {
      // Off: answered at once, nothing read but the switch, nothing written (today's behaviour).
      if (!policies.permissions(request.principal.keyId).enabled) return ALLOW;
      // A decision that reserves nothing and opens nothing (a message, a denial) is answered without waiting for a
      // write; one that reserves spend or resolves a hold is taken again, and written, in one transaction.
      const read: Read = {};
      return run(request, false, undefined, read) ?? writer.write(() => run(request, true, undefined, read)!);
    },
    decideWithin,
  };
}

function holdIds(outcome: { caseId?: string; reviewId?: string }): { caseId?: string; reviewId?: string } {
  return {
    ...(outcome.caseId !== undefined ? { caseId: outcome.caseId } : {}),
    ...(outcome.reviewId !== undefined ? { reviewId: outcome.reviewId } : {}),
  };
}

/**
 * Approvals not wired: a hold cannot be resolved, so it fails (500, nothing signed) rather than pass. Reached only when
 * a PolicySource turns permissions on without a HoldResolver beside it; with permissionsOffEverywhere, never.
 */
export const holdsNotWired: HoldResolver = {
  checkReference: () => undefined,
  resolve: () => {
    throw new Error('a signing policy holds this request and no approvals store is wired to resolve it');
  },
};

/** Permissions off for every key: until the policy store is wired, the service decides as it always did. */
export const permissionsOffEverywhere: PolicySource = {
  permissions: () => ({ enabled: false, approvals: false }),
  activeGuardrails: () => [],
};
