import type { EventObject, SnapshotFrom, StateValue } from 'xstate';
import { idempotencyKeyInUse, ServiceError } from '../../chains/domain/errors.ts';
import type { IntentKind, TransactionStatus } from '../../chains/domain/payments.ts';
import type { PaymentChain, TransferIntent, UnsignedPayment } from '../../chains/payment-chain.ts';
import { paymentFamilies } from '../../chains/payment-families.ts';
import type { PaymentPayload, SignedPayment } from '../../chains/payment-family.ts';
import { isUniqueViolation } from '../../store/errors.ts';
import type { IdempotencyClaim, IdempotencyRepo } from '../../store/idempotency-repo.ts';
import type { OutboxRepo } from '../../store/outbox-repo.ts';
import type { SpendRepo } from '../../store/spend-repo.ts';
import type { TransactionsRepo } from '../../store/transactions-repo.ts';
import type { WalletRow } from '../../store/wallets-repo.ts';
import { type ActorView, type MachineDefinition, SpawnRefused } from '../host/types.ts';
import { decisionError, type SignatureDecision } from '../signing/signature-policy.ts';
import { createBroadcastEffect } from './broadcast-payment.ts';
import {
  type AttemptStage,
  type AutoRetryProgress,
  type BroadcastInput,
  PAYMENT_MACHINE_VERSION,
  type PaymentAttempt,
  type PaymentContext,
  type PaymentEvent,
  type PaymentInput,
  type PreparedStepTerms,
  paymentMachine,
  type ReplacementInput,
  type StepDecision,
} from './payment.machine.ts';
import { createPrepareReplacement, DEFAULT_REPLACEMENT_DELAY_MS } from './prepare-replacement.ts';
import type { StepSignInput } from './step-authority.ts';

type PaymentSnapshot = SnapshotFrom<typeof paymentMachine>;
type SignEvent = Extract<PaymentEvent, { type: 'SIGN' }>;

/** The record's status for each top-level state of the payment machine (spec: transaction record status). */
const STATUS_OF_STATE: Readonly<Record<string, TransactionStatus>> = {
  prepared: 'pending',
  signing: 'pending',
  broadcasting: 'pending',
  retrying: 'pending',
  submitted: 'submitted',
  replacing: 'submitted',
  signingReplacement: 'submitted',
  broadcastingReplacement: 'submitted',
  watching: 'failed',
  released: 'failed',
  confirmed: 'confirmed',
  reverted: 'reverted',
  failed: 'failed',
};

/**
 * States in which the payment holds its wallet and chain: it may still execute and nothing proved it did not take
 * effect. A payment refused on its first send (`released`), or released by the operator (`operatorReleased`), lets
 * go, though it is still watched.
 */
const HOLDING: ReadonlySet<string> = new Set([
  'prepared',
  'signing',
  'broadcasting',
  'retrying',
  'submitted',
  'replacing',
  'signingReplacement',
  'broadcastingReplacement',
  'watching',
]);

/** States in which a broadcasting request still waits: the signature and the first broadcast verdict are not in. */
const AWAITING_VERDICT: ReadonlySet<string> = new Set(['signing', 'broadcasting']);

function topState(value: StateValue): string {
  return typeof value === 'string' ? value : (Object.keys(value)[0] ?? '');
}

/** The record status a payment snapshot describes (released by the operator: the status it had then). */
export function paymentStatus(snap: { value: StateValue; context: unknown }): TransactionStatus {
  const state = topState(snap.value);
  const c = snap.context as PaymentContext;
  if (state === 'operatorReleased') return c.operatorRelease?.status ?? 'pending';
  const status = STATUS_OF_STATE[state] ?? 'pending';
  // Submitted means a node took the bytes: a Solana auto-retry payment whose first attempt expired unanswered is
  // rebuilt without any node having taken one yet.
  return status === 'submitted' && c.acceptedAt === null ? 'pending' : status;
}

/** What admitting a payment is given: who asks, with which wallet, on which chain, to sign what. */
export interface PaymentAdmission {
  /** The API key that asked: its endpoint hears the payment's events. */
  apiKeyId: string | null;
  wallet: Pick<WalletRow, 'id' | 'projectId' | 'address'>;
  chain: Pick<PaymentChain, 'family' | 'key' | 'environment'>;
  /** The chain as the family names it (EVM chain id, Solana network). */
  chainRef: string;
  intentKind: IntentKind;
  /**
   * What is signed: a transfer the chain built, signed with the nonce its record allocates (the node's pending nonce,
   * or past the highest nonce a settled record of the wallet used, whichever is higher); or a payload as given, with
   * the nonce it fixed.
   */
  signs:
    | { kind: 'transfer'; unsigned: UnsignedPayment; pendingNonce: number | null }
    | { kind: 'given'; payload: PaymentPayload; nonce: number | null; recentBlockhash: string | null };
  /** What the record shows of the payment (null where it does not apply). */
  record: { to: string | null; value: string | null; tokenAddress: string | null };
  /** The request's `Idempotency-Key`, written with the record (so a retry finds this payment), or null. */
  idempotency: IdempotencyClaim | null;
  /**
   * An auto-retry transfer's ceiling (wei or lamports) and deadline (epoch ms), and for Solana the transfer its rebuilt
   * attempts build again; null otherwise.
   */
  autoRetry?: { ceiling: string; expiresAt: number; intent?: TransferIntent | null } | null;
  /**
   * A manual cancellation: the stopped payment holding the wallet whose nonce it competes for (the spec's procedure).
   * It is admitted beside that holder, which keeps the hold.
   */
  cancels?: string | null;
  /**
   * A prepared step that follows its operation's previous step (signed, with its confirmations, not yet final): it is
   * admitted while that step holds the wallet, and takes the hold over from it. Its nonce comes after that step's.
   */
  follows?: string | null;
  /**
   * The signing policy's decision, taken in the transaction that writes the record (given the payment's id: what the
   * spend ledger counts it under). A refusal keeps its decision-log row and the case or review it opened, and nothing
   * else: no record, no actor. Absent: the caller decided before.
   */
  decide?: (transactionId: string) => SignatureDecision;
  /**
   * Admitted as a prepared step (a yield step): the record, its nonce, its hold and the exact payload are written now,
   * and it waits (`prepared`) for a SIGN event, decided then by the step authority, or a CANCEL. Absent or null: it is
   * signed on spawn.
   */
  prepared?: PreparedStepTerms | null;
}

/** A payment as its caller sees it: the committed state, with its record's status. */
export interface PaymentView extends ActorView<PaymentContext> {
  recordStatus: TransactionStatus;
  /** True while the signature and the first broadcast verdict are not in: a broadcasting request waits for them. */
  awaitingVerdict: boolean;
  /** A prepared step whose SIGN was not taken: a CANCEL ends it. False once it is signing (or past it, or ended). */
  cancellable: boolean;
}

export type PaymentDefinition = MachineDefinition<typeof paymentMachine, PaymentAdmission, PaymentView>;

/** Another payment of the wallet on the chain is unresolved: the spec's 409, nothing queued. */
export function holdConflict(walletId: string, blocking: string | undefined): ServiceError {
  return new ServiceError(
    'WALLET_TRANSACTION_UNRESOLVED',
    409,
    'another payment of this wallet on this chain is not resolved yet; it is not queued: retry once it is',
    { details: { walletId, ...(blocking ? { blockingTransactionId: blocking } : {}) } },
  );
}

/**
 * A sign-only transaction with the nonce of the payment that holds the wallet on the chain would compete with it
 * (both could execute, or the payment's bytes, perhaps not in the node's pool, be replaced behind the service's back):
 * the spec's 409. Sign-only transfers and sign-only EVM transactions both ask.
 */
export function refuseHeldNonce(
  transactions: Pick<TransactionsRepo, 'holding'>,
  walletId: string,
  chainKey: string,
  nonce: number,
): void {
  const held = transactions.holding(walletId, chainKey);
  if (held && held.nonce === nonce) throw holdConflict(walletId, held.id);
}

/**
 * The stage of a v3 payment's only attempt, from its state: what the signature and the sends it made are known to
 * have done.
 */
function v3AttemptStage(
  state: string,
  c: Pick<PaymentContext, 'hash' | 'acceptedAt' | 'unansweredBroadcasts' | 'failure'>,
): AttemptStage {
  if (c.hash === null) {
    return c.failure && c.failure.code !== 'SIGNING_INTERRUPTED' && c.failure.code !== 'ENCLAVE_TIMEOUT'
      ? 'rejected'
      : 'signing';
  }
  if (c.acceptedAt !== null || state === 'confirmed' || state === 'reverted') return 'submitted';
  return c.unansweredBroadcasts > 0 ? 'submission_unknown' : 'signed';
}

/**
 * An auto-retry payment's retrying as the record shows it (the spec's `autoRetry` object, without its attempts): the
 * ceiling under its family's name; EVM's saved `nonce`, Solana's `network`.
 */
function autoRetryJson(
  r: Pick<AutoRetryProgress, 'state' | 'reason' | 'ceiling' | 'expiresAt' | 'bumpCount'>,
  payment: { nonce: number | null; network: string | null },
): string {
  const solana = payment.network !== null;
  return JSON.stringify({
    state: r.state,
    reason: r.reason,
    ...(solana ? { network: payment.network, maxExecutionFeeLamports: r.ceiling } : { maxExecutionFeeWei: r.ceiling }),
    expiresAt: new Date(r.expiresAt).toISOString(),
    ...(solana ? {} : { nonce: payment.nonce }),
    bumpCount: r.bumpCount,
  });
}

/** The attempts as the record shows them (the spec's shape: ISO times; Solana's last valid block height). */
function attemptsJson(attempts: readonly PaymentAttempt[]): string {
  return JSON.stringify(
    attempts.map((a) => ({
      ordinal: a.ordinal,
      stage: a.stage,
      preparedAt: new Date(a.preparedAt).toISOString(),
      hash: a.hash,
      lastBroadcastAt: a.lastBroadcastAt === null ? null : new Date(a.lastBroadcastAt).toISOString(),
      ...(typeof a.lastValidBlockHeight === 'number' ? { lastValidBlockHeight: a.lastValidBlockHeight } : {}),
    })),
  );
}

/** A unique violation of the `holds` table's key (one holder per wallet and chain), not of another index. */
function isHoldViolation(err: unknown): boolean {
  return isUniqueViolation(err) && /: holds\.wallet_id, holds\.chain_key$/.test((err as Error).message);
}

/**
 * The payment machine as the host runs it. Admission writes the record, with its nonce, in the transaction that
 * starts the actor. Signing is at-most-once (never signed twice by accident); a broadcast resends the stored bytes
 * and is at-least-once. Each step updates the transaction record, and the events partners hear about go into the
 * outbox in the same transaction.
 */
export function createPaymentDefinition(deps: {
  transactions: Pick<
    TransactionsRepo,
    'insert' | 'nextSeq' | 'holder' | 'highestSettledNonce' | 'progress' | 'release' | 'getAny'
  >;
  outbox: Pick<OutboxRepo, 'append'>;
  /** Writes an admission's `Idempotency-Key` in the transaction of its record (false: another holds it). */
  idempotency: Pick<IdempotencyRepo, 'bind'>;
  /**
   * The sign effect: the wallet's key signs the payload (sign-payment.ts). `effectKey` is the effect's durable key
   * (`EffectContext.key`), which the enclave signs at most one message under.
   */
  sign(
    input: { projectId: string; walletId: string; payload: PaymentPayload },
    effect: { effectKey: string },
  ): Promise<SignedPayment>;
  chain(key: string): PaymentChain | undefined;
  /** How long after broadcast a payment is actively monitored (the spec's 30 minutes). */
  monitorWindowMs: number;
  /** EVM_REPLACEMENT_DELAY_MS: the least time between an auto-retry attempt's send and its replacement (60 s). */
  replacementDelayMs?: number;
  /**
   * The signing policies' spend ledger: a payment that ends with no usable signature (refused or interrupted at
   * signing, every Solana attempt proven expired, its nonce proven taken by another transaction) stops counting, in
   * the step that ends it.
   */
  spend?: Pick<SpendRepo, 'release'>;
  /** Before each replacement: whether the authority that admitted the payment still stands (null), or why not. */
  authority?(input: ReplacementInput): Promise<string | null> | string | null;
  /**
   * A prepared step's SIGN: the signing policy's decision (step-authority.ts), taken synchronously in the transaction
   * of the step that applies it, so that the decision, its spend reservation, its log row and the case or review it
   * opens are written with the step's state. Absent: every SIGN is allowed (tests of other parts; the service wires
   * it).
   */
  stepAuthority?(input: StepSignInput): StepDecision;
  now?: () => number;
}): PaymentDefinition {
  const now = deps.now ?? Date.now;
  const broadcast = createBroadcastEffect({ chain: deps.chain, now });
  const prepareReplacement = createPrepareReplacement({
    chain: deps.chain,
    now,
    ...(deps.authority ? { authority: deps.authority } : {}),
  });
  const replacementDelayMs = deps.replacementDelayMs ?? DEFAULT_REPLACEMENT_DELAY_MS;

  function create(id: string, a: PaymentAdmission): PaymentInput {
    const { wallet, chain } = a;
    const family = paymentFamilies[chain.family];
    if (a.prepared && (a.autoRetry || a.cancels || !family.allocatesNonce)) {
      // A prepared step keeps one exact payload under its nonce until it is signed: no retry terms, no cancellation of
      // another payment, and no family whose payload expires while it waits (a Solana blockhash).
      throw new Error('a prepared step is an EVM payment without auto-retry or cancellation terms');
    }
    const blocking = deps.transactions.holder(wallet.id, chain.key);
    if (blocking && blocking !== a.cancels && !(a.prepared && blocking === a.follows)) {
      throw holdConflict(wallet.id, blocking);
    }
    if (a.decide) {
      const refusal = decisionError(a.decide(id));
      if (refusal) throw new SpawnRefused(refusal);
    }
    let nonce: number | null = null;
    if (a.signs.kind === 'given') nonce = a.signs.nonce;
    else if (family.allocatesNonce) {
      const settled = deps.transactions.highestSettledNonce(wallet.id, chain.key);
      nonce = Math.max(a.signs.pendingNonce ?? 0, settled === null ? 0 : settled + 1);
    }
    const payload = a.signs.kind === 'given' ? a.signs.payload : family.transferPayload(a.signs.unsigned, nonce);
    // Solana: until when the transaction can land (a partner's carries its blockhash; the service's, its height too).
    const validity =
      a.signs.kind === 'given'
        ? { recentBlockhash: a.signs.recentBlockhash, lastValidBlockHeight: null }
        : family.transferValidity(a.signs.unsigned);
    const { chainId, network } = family.recordChain(a.chainRef);
    const createdAt = new Date(now()).toISOString();
    try {
      deps.transactions.insert(
        {
          id,
          projectId: wallet.projectId,
          apiKeyId: a.apiKeyId,
          walletId: wallet.id,
          intentKind: a.intentKind,
          type: chain.family,
          chainKey: chain.key,
          chainId,
          network,
          status: 'pending',
          hash: null,
          blockNumber: null,
          blockHash: null,
          failureStage: null,
          failureCode: null,
          failureMessage: null,
          monitoring: null,
          toAddress: a.record.to,
          value: a.record.value,
          tokenAddress: a.record.tokenAddress,
          nonce,
          recentBlockhash: validity.recentBlockhash,
          lastValidBlockHeight: validity.lastValidBlockHeight,
          signedTransaction: null,
          unresolved: 1,
          createdAt,
          updatedAt: createdAt,
          resolvedAt: null,
          watched: 0,
          attempts: attemptsJson([
            {
              ordinal: 0,
              stage: a.prepared ? 'prepared' : 'signing',
              preparedAt: Date.parse(createdAt),
              hash: null,
              lastBroadcastAt: null,
              lastValidBlockHeight: validity.lastValidBlockHeight,
            },
          ]),
          cancels: a.cancels ?? null,
          autoRetry: a.autoRetry
            ? autoRetryJson({ ...a.autoRetry, state: 'active', reason: null, bumpCount: 0 }, { nonce, network })
            : null,
          seq: deps.transactions.nextSeq(),
        },
        { follows: a.prepared ? (a.follows ?? null) : null },
      );
    } catch (err) {
      // The hold index decides between two admissions that passed the check above together.
      if (isHoldViolation(err)) throw holdConflict(wallet.id, deps.transactions.holder(wallet.id, chain.key));
      throw err;
    }
    // Another writer's payment holds the key: throwing undoes this record with the transaction.
    if (a.idempotency && !deps.idempotency.bind(a.idempotency, id)) throw idempotencyKeyInUse();
    return {
      transactionId: id,
      projectId: wallet.projectId,
      apiKeyId: a.apiKeyId,
      walletId: wallet.id,
      walletAddress: wallet.address!,
      intentKind: a.intentKind,
      family: chain.family,
      chainKey: chain.key,
      isDevnet: family.isDevnet(a.chainRef, chain.environment),
      chainId,
      network,
      payload,
      nonce,
      monitorWindowMs: deps.monitorWindowMs,
      preparedAt: Date.parse(createdAt),
      ...(validity.lastValidBlockHeight === null ? {} : { lastValidBlockHeight: validity.lastValidBlockHeight }),
      autoRetry: a.autoRetry ? { ...a.autoRetry, replacementDelayMs } : null,
      ...(a.prepared
        ? {
            prepared: {
              operation: a.prepared.operation,
              ...(a.prepared.facts ? { facts: a.prepared.facts } : {}),
              ...(a.prepared.approvedUnder ? { approvedUnder: a.prepared.approvedUnder } : {}),
            },
          }
        : {}),
    };
  }

  /**
   * A SIGN for a prepared step gets its decision here, in the step's transaction; a decision its sender put in is
   * dropped. Any other SIGN (the step is signing, or past it) gets none, and the machine ignores it.
   */
  function resolveEvent(id: string, snap: PaymentSnapshot, event: EventObject): EventObject {
    if (event.type !== 'SIGN') return event;
    const { decision: _sent, at: _at, ...sign } = event as SignEvent;
    const at = now();
    const c = snap.context;
    if (snap.status !== 'active' || topState(snap.value) !== 'prepared' || !c.prepared) {
      const ignored: SignEvent = { ...sign, at };
      return ignored;
    }
    const decision: StepDecision = deps.stepAuthority
      ? deps.stepAuthority({
          transactionId: id,
          apiKeyId: c.apiKeyId,
          walletId: c.walletId,
          walletAddress: c.walletAddress,
          operation: c.prepared.operation,
          chainRef: c.chainId ?? c.network,
          payload: c.payload,
          ...(sign.reference ? { reference: sign.reference } : {}),
          ...(sign.initiatorUserId !== undefined ? { initiatorUserId: sign.initiatorUserId } : {}),
          ...(c.prepared.facts ? { yieldFacts: c.prepared.facts } : {}),
          ...(c.prepared.approvedUnder ? { approvedUnder: c.prepared.approvedUnder } : {}),
        })
      : { effect: 'allow' };
    const decided: SignEvent = { ...sign, at, decision };
    return decided;
  }

  /**
   * The events partners hear of a step, written with it: `send.broadcasted` once a node is known to have the bytes
   * (accepted, or first seen included); the outcome's events when the record reaches a status the partner acts on
   * (confirmed, reverted, failed), once: not for the monitor window's end (its outcome is open), not again when a
   * released payment is then proven unable to execute.
   */
  function events(snap: PaymentSnapshot, previous: PaymentSnapshot, at: string) {
    const c = snap.context;
    const state = topState(snap.value);
    const before = topState(previous.value);
    const status = paymentStatus(snap);
    const common = { projectId: c.projectId, apiKeyId: c.apiKeyId, createdAt: at };
    const send = c.intentKind === 'transfer';
    const sendData = {
      // The wallet's id, never its userIdentifier (an e-mail or phone, maybe): api/schemas/events.ts.
      userId: c.walletId,
      walletId: c.walletId,
      txHash: c.hash,
      type: c.family,
      // The spec: a string on EVM, absent on Solana.
      ...(c.chainId !== null ? { evmChainId: c.chainId } : {}),
      isDevnet: c.isDevnet,
    };
    const firstSeen =
      (previous.context.acceptedAt === null && c.acceptedAt !== null) ||
      (c.acceptedAt === null && (state === 'confirmed' || state === 'reverted') && before !== 'released');
    if (firstSeen && send) {
      deps.outbox.append({ ...common, type: 'send.broadcasted', data: { ...sendData, broadcastedAt: at } });
    }
    if (state === before) return;
    const rest = {
      transactionId: c.transactionId,
      walletId: c.walletId,
      partnerId: c.projectId,
      intentKind: c.intentKind,
      type: c.family,
    };
    if (state === 'confirmed') {
      deps.outbox.append({
        ...common,
        type: 'rest.transaction.confirmed',
        data: { ...rest, hash: c.hash, blockNumber: c.blockNumber, blockHash: c.blockHash, resolvedAt: at },
      });
      if (send) deps.outbox.append({ ...common, type: 'send.confirmed', data: { ...sendData, confirmedAt: at } });
      return;
    }
    const outcome = state === 'released' || state === 'reverted' || (state === 'failed' && before !== 'released');
    if (!outcome) return;
    deps.outbox.append({
      ...common,
      type: 'rest.transaction.failed',
      data: {
        ...rest,
        status,
        hash: c.hash,
        resolvedAt: at,
        ...(status === 'failed' && c.failure
          ? { failureStage: c.failure.stage, failureCode: c.failure.code, failureMessage: c.failure.message }
          : {}),
        ...(c.monitoring?.winningHash ? { winningHash: c.monitoring.winningHash } : {}),
      },
    });
    if (send) {
      const error = c.failure?.message ?? (status === 'reverted' ? 'the transaction reverted on-chain' : undefined);
      deps.outbox.append({
        ...common,
        type: 'send.failed',
        data: { ...sendData, ...(error ? { error } : {}), failedAt: at },
      });
    }
  }

  return {
    name: 'payment',
    version: PAYMENT_MACHINE_VERSION,
    machine: paymentMachine,
    create,
    view: (actor) => ({
      ...actor,
      recordStatus: paymentStatus(actor),
      awaitingVerdict: actor.status === 'active' && AWAITING_VERDICT.has(topState(actor.value)),
      cancellable: actor.status === 'active' && topState(actor.value) === 'prepared',
    }),
    resolveEvent,
    effects: {
      sign: {
        run: (input, ctx) => deps.sign(input as Parameters<typeof deps.sign>[0], { effectKey: ctx.key }),
        delivery: 'at-most-once',
      },
      broadcast: {
        run: (input, ctx) => broadcast(input as BroadcastInput, ctx.redelivered),
        delivery: 'at-least-once',
      },
      // A read of the market and the balance: run again after a crash, it prices the same replacement afresh.
      prepareReplacement: {
        run: (input) => prepareReplacement(input as ReplacementInput),
        delivery: 'at-least-once',
      },
    },
    migrations: [
      {
        // v1 kept the nonce only inside an EVM payload's transaction; v2 has it beside the payload.
        from: 1,
        up(stored) {
          const s = stored as { value: StateValue; context: Record<string, unknown> };
          const payload = s.context['payload'] as { family?: unknown; transaction?: { nonce?: unknown } } | undefined;
          const nonce =
            payload?.family === 'EVM' && typeof payload.transaction?.nonce === 'number'
              ? payload.transaction.nonce
              : null;
          return { value: s.value, context: { ...s.context, nonce } };
        },
      },
      {
        // v4 keeps the payment's attempts. A v3 payment has one, whose stage its state and context tell (its
        // preparation time is the record's: the admission's).
        from: 3,
        up(stored, { actorId }) {
          const s = stored as { value: StateValue; context: Record<string, unknown> };
          const c = s.context as unknown as Omit<PaymentContext, 'attempts' | 'preparedAt'>;
          const createdAt = deps.transactions.getAny(actorId)?.createdAt;
          const preparedAt = (createdAt ? Date.parse(createdAt) : Number.NaN) || (c.broadcastAt ?? 0);
          const attempt: PaymentAttempt = {
            ordinal: 0,
            stage: v3AttemptStage(topState(s.value), c),
            preparedAt,
            hash: c.hash,
            lastBroadcastAt: c.broadcastAt,
          };
          return { value: s.value, context: { ...s.context, preparedAt, attempts: [attempt] } };
        },
      },
      {
        // v3 notes when a node first accepted the bytes. v2 knew it only by being `submitted`: a v2 payment past its
        // monitor window may have been accepted or not, and counts as not. v2 had no `released` state.
        from: 2,
        up(stored) {
          const s = stored as { value: StateValue; context: Record<string, unknown> };
          const acceptedAt = topState(s.value) === 'submitted' ? (s.context['broadcastAt'] ?? null) : null;
          return { value: s.value, context: { ...s.context, acceptedAt } };
        },
      },
    ],
    persist(id: string, snap: PaymentSnapshot, previous: PaymentSnapshot | undefined) {
      const c = snap.context;
      const at = new Date(now()).toISOString();
      const status = paymentStatus(snap);
      const final = snap.status === 'done';
      const state = topState(snap.value);
      const failed = status === 'failed' && c.failure !== null;
      // The initial state describes the row `create` just inserted: nothing to write again.
      if (previous === undefined && status === 'pending' && c.hash === null) return;
      deps.transactions.progress(id, {
        status,
        hash: c.hash,
        blockNumber: status === 'confirmed' || status === 'reverted' ? c.blockNumber : null,
        blockHash: status === 'confirmed' || status === 'reverted' ? c.blockHash : null,
        failureStage: failed ? c.failure!.stage : null,
        failureCode: failed ? c.failure!.code : null,
        failureMessage: failed ? c.failure!.message : null,
        monitoring: c.monitoring ? JSON.stringify(c.monitoring) : null,
        // The bytes the poller sends again while the node does not show the payment: an auto-retry payment's latest
        // signed attempt (its earlier ones were replaced in the node's pool; sent again they are only refused).
        signedTransaction:
          c.autoRetry?.replacements.findLast((r) => r.signedTransaction !== null)?.signedTransaction ??
          c.signedTransaction,
        attempts: attemptsJson(c.attempts),
        autoRetry: c.autoRetry ? autoRetryJson(c.autoRetry, c) : null,
        unresolved: !final && HOLDING.has(state) ? 1 : 0,
        // Watched while its bytes exist and may still execute: until the chain settles it, also once released.
        watched: !final && c.hash !== null ? 1 : 0,
        updatedAt: at,
        resolvedAt: final || state === 'released' ? at : null,
      });
      if (previous !== undefined && previous.status !== 'done') {
        events(snap, previous, at);
        if (final && c.apiKeyId !== null && deps.spend && noUsableSignature(c))
          deps.spend.release(c.apiKeyId, id, now());
      }
    },
    wakeAt(snap: PaymentSnapshot) {
      return snap.status === 'done' ? null : snap.context.wakeAt;
    },
    abandon(id: string) {
      // The operator's release: the hold ends; the payment's outcome is not established by it.
      deps.transactions.release(id, new Date(now()).toISOString());
    },
  };
}

/** Failure stages at which nothing was signed that could still execute. */
const UNSIGNED_STAGES: ReadonlySet<string> = new Set(['mpc_sign', 'signer_verify', 'signature_apply']);
/** Failure codes proving every signature of the payment can never execute. */
const NEVER_EXECUTES: ReadonlySet<string> = new Set(['TRANSACTION_EXPIRED', 'REPLACED', 'NONCE_CONSUMED', 'CANCELLED']);

/** The chain's proofs (a `dropped` observation's reason) that no signature of the payment can ever execute. */
const PROVEN_UNEXECUTABLE: ReadonlySet<string> = new Set(['expired', 'nonce_consumed']);

/**
 * Whether a failed payment leaves no usable signature (POLICIES.md §4: its spend is released): refused or interrupted
 * at signing before any attempt had a hash, or proven unable to execute (every Solana attempt expired, its nonce taken
 * by another transaction). A payment a node refused on its first send keeps that failure when the chain later proves
 * its bytes dead (`released` → `failed`, the proof in `monitoring.reason`): until then the bytes, which the partner
 * holds, could still land, and its amounts stay counted.
 */
export function noUsableSignature(c: PaymentContext): boolean {
  if (c.failure === null) return false;
  if (NEVER_EXECUTES.has(c.failure.code)) return true;
  if (c.monitoring?.reason !== undefined && PROVEN_UNEXECUTABLE.has(c.monitoring.reason)) return true;
  return UNSIGNED_STAGES.has(c.failure.stage) && c.attempts.every((a) => a.hash === null);
}
