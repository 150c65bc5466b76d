import type { SnapshotFrom, StateValue } from 'xstate';
import type { TransactionStatus } from '../chains/domain/payments.ts';
import { ChainRpcError, type PaymentChain } from '../chains/payment-chain.ts';
import type { OutboxRepo } from '../store/outbox-repo.ts';
import type { TransactionsRepo } from '../store/transactions-repo.ts';
import type { MachineDefinition } from './host.ts';
import {
  type BroadcastInput,
  type BroadcastOutcome,
  PAYMENT_MACHINE_VERSION,
  type PaymentContext,
  type PaymentPayload,
  paymentMachine,
  type SignedPayment,
} from './payment.machine.ts';

type PaymentSnapshot = SnapshotFrom<typeof paymentMachine>;

/** The record's status for each top-level state of the payment machine (spec: transaction record status). */
const STATUS_OF_STATE: Readonly<Record<string, TransactionStatus>> = {
  signing: 'pending',
  broadcasting: 'pending',
  retrying: 'pending',
  submitted: 'submitted',
  watching: 'failed',
  confirmed: 'confirmed',
  reverted: 'reverted',
  failed: 'failed',
};

function topState(value: StateValue): string {
  return typeof value === 'string' ? value : (Object.keys(value)[0] ?? '');
}

/** The record status a payment snapshot describes. */
export function paymentStatus(snap: { value: StateValue }): TransactionStatus {
  return STATUS_OF_STATE[topState(snap.value)] ?? 'pending';
}

/**
 * Node verdicts that a transaction of ours may have caused itself: a resend after the first copy landed. The
 * broadcast effect then looks the transaction up before calling it a rejection.
 */
const MAYBE_OURS: ReadonlySet<string> = new Set(['NONCE_TOO_LOW', 'BLOCKHASH_EXPIRED']);

/**
 * Sends a payment's signed bytes and turns every answer into an outcome for the machine: `accepted`, `rejected`
 * (the node's final verdict) or `unanswered` (it may or may not have the bytes).
 */
export function createBroadcastEffect(deps: { chain(key: string): PaymentChain | undefined; now: () => number }) {
  return async (input: BroadcastInput): Promise<BroadcastOutcome> => {
    const chain = deps.chain(input.chainKey);
    if (!chain) {
      return {
        outcome: 'unanswered',
        code: 'CHAIN_NOT_CONFIGURED',
        message: `the chain ${input.chainKey} is no longer in CHAINS_FILE; the payment waits for it`,
        at: deps.now(),
      };
    }
    try {
      await chain.broadcast(input.signedTransaction);
      return { outcome: 'accepted', at: deps.now() };
    } catch (err) {
      if (!(err instanceof ChainRpcError) || err.transient) {
        const message = err instanceof ChainRpcError ? err.message : 'the node did not answer usably';
        return { outcome: 'unanswered', code: 'RPC_UNAVAILABLE', message, at: deps.now() };
      }
      if (MAYBE_OURS.has(err.code)) {
        try {
          const round = await chain.observe([
            { hash: input.hash, from: input.from, ...(input.nonce === null ? {} : { nonce: input.nonce }) },
          ]);
          if (round.observations.get(input.hash)?.status === 'included') return { outcome: 'accepted', at: deps.now() };
        } catch {
          return { outcome: 'unanswered', code: 'RPC_UNAVAILABLE', message: err.message, at: deps.now() };
        }
      }
      return { outcome: 'rejected', code: err.code, message: err.message, at: deps.now() };
    }
  };
}

/**
 * The payment machine as the host runs it. Signing is at-most-once (never signed twice by accident); a
 * broadcast resends the stored bytes and is at-least-once. Each step updates the transaction record, and the
 * events partners hear about go into the outbox in the same transaction.
 */
export function createPaymentDefinition(deps: {
  transactions: Pick<TransactionsRepo, 'progress' | 'release'>;
  outbox: Pick<OutboxRepo, 'append'>;
  sign(input: { projectId: string; walletId: string; payload: PaymentPayload }): Promise<SignedPayment>;
  chain(key: string): PaymentChain | undefined;
  now?: () => number;
}): MachineDefinition<typeof paymentMachine> {
  const now = deps.now ?? Date.now;
  const broadcast = createBroadcastEffect({ chain: deps.chain, now });

  function events(
    c: PaymentContext,
    status: TransactionStatus,
    final: boolean,
    previousStatus: TransactionStatus | null,
    at: string,
  ) {
    const common = { projectId: c.projectId, apiKeyId: c.apiKeyId, createdAt: at };
    const send = c.intentKind === 'transfer';
    const sendData = {
      userId: c.userId,
      walletId: c.walletId,
      txHash: c.hash,
      type: c.family,
      ...(c.family === 'EVM' ? { evmChainId: c.chainId } : {}),
      isDevnet: c.isDevnet,
    };
    if (status === 'submitted' && previousStatus !== 'submitted' && send) {
      deps.outbox.append({ ...common, type: 'send.broadcasted', data: { ...sendData, broadcastedAt: at } });
    }
    if (!final) return;
    const rest = {
      transactionId: c.transactionId,
      walletId: c.walletId,
      partnerId: c.projectId,
      intentKind: c.intentKind,
      type: c.family,
    };
    if (status === 'confirmed') {
      deps.outbox.append({
        ...common,
        type: 'rest.transaction.confirmed',
        data: { ...rest, hash: c.hash, blockNumber: c.blockNumber, blockHash: c.blockHash, resolvedAt: at },
      });
      if (send) deps.outbox.append({ ...common, type: 'send.confirmed', data: { ...sendData, confirmedAt: at } });
      return;
    }
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
    effects: {
      sign: { run: (input) => deps.sign(input as Parameters<typeof deps.sign>[0]), delivery: 'at-most-once' },
      broadcast: { run: (input) => broadcast(input as BroadcastInput), delivery: 'at-least-once' },
    },
    persist(id: string, snap: PaymentSnapshot, previous: PaymentSnapshot | undefined) {
      const c = snap.context;
      const at = new Date(now()).toISOString();
      const status = paymentStatus(snap);
      const final = snap.status === 'done';
      const failed = status === 'failed' && c.failure !== null;
      // The initial state describes the row its spawn just inserted: nothing to write again.
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
        signedTransaction: c.signedTransaction,
        unresolved: final ? 0 : 1,
        updatedAt: at,
        resolvedAt: final ? at : null,
      });
      const wasFinal = previous?.status === 'done';
      if (!wasFinal) events(c, status, final, previous ? paymentStatus(previous) : null, at);
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
