import { assign, fromPromise, setup } from 'xstate';
import type {
  FailureStage,
  IntentKind,
  PaymentFamily,
  SolanaNetwork,
  TransactionStatus,
} from '../../chains/domain/payments.ts';
import type { Observation } from '../../chains/payment-chain.ts';
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

export type PaymentEvent =
  | { type: 'WAKE'; at: number }
  | { type: 'OBSERVED'; observation: Observation; at: number }
  /** The operator releases the hold (admin API): the payment stops sending and keeps being watched. */
  | { type: 'OPERATOR_RELEASE'; reason: string; by: string; at: number };

/**
 * Bumped whenever stored states of the previous version need a migration (payment-definition.ts holds them).
 * v2: the context carries the record's `nonce` beside the payload.
 * v3: `acceptedAt` (when a node first took the bytes), the `released` state (refused on a first send: the
 * wallet is released, the bytes still watched) and `operatorReleased` (the operator released the hold).
 */
export const PAYMENT_MACHINE_VERSION = 3;

/** Broadcast retries after an unanswered attempt, spaced by this much (then the monitor window decides). */
export const BROADCAST_RETRY_MS = 2_000;

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
function droppedFailure(event: PaymentEvent, stage: 'monitor' | 'broadcast'): Partial<PaymentContext> {
  if (event.type !== 'OBSERVED' || event.observation.status !== 'dropped') return {};
  const o = event.observation;
  const expired = o.reason === 'expired';
  return {
    failure: {
      stage,
      code: expired ? 'TRANSACTION_EXPIRED' : 'REPLACED',
      message: expired
        ? 'the transaction can no longer execute: its blockhash expired and it is not on the finalized chain'
        : `another transaction (${o.reason === 'nonce_consumed' ? o.winningHash : 'unknown'}) used this nonce on the finalized chain; this one can never execute`,
    },
    monitoring: { reason: o.reason, ...(o.reason === 'nonce_consumed' ? { winningHash: o.winningHash } : {}) },
    wakeAt: null,
  };
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
 *   watching, and holding its wallet and chain, until the chain decides: a later confirmation updates the record.
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
    dropped: ({ event }) => event.type === 'OBSERVED' && event.observation.status === 'dropped',
    windowOver: ({ context, event }) =>
      event.type === 'WAKE' &&
      context.broadcastAt !== null &&
      event.at >= context.broadcastAt + context.monitorWindowMs,
  },
  actions: {
    recordInclusion: assign(({ event }) => {
      if (event.type !== 'OBSERVED' || event.observation.status !== 'included') return {};
      const o = event.observation;
      // What the chain shows replaces what was noted on the way (an unanswered send's error, an earlier failure).
      return {
        blockNumber: o.blockNumber,
        blockHash: o.blockHash,
        wakeAt: null,
        failure: null,
        monitoring: o.error ? { error: o.error } : null,
      };
    }),
    /**
     * Proven unable to execute: found by the monitor after a node accepted the bytes; never accepted (its submission
     * unknown), the broadcast did not take.
     */
    recordDropped: assign(({ context, event }) => {
      const dropped = droppedFailure(event, context.acceptedAt !== null ? 'monitor' : 'broadcast');
      const released = context.monitoring?.operatorRelease;
      return released && dropped.monitoring
        ? { ...dropped, monitoring: { ...dropped.monitoring, operatorRelease: released } }
        : dropped;
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
    /** The WAKE that ends the monitor window (resending the bytes meanwhile is the chain poller's work). */
    wakeAtWindowEnd: assign(({ context }) => ({
      wakeAt: context.broadcastAt === null ? null : context.broadcastAt + context.monitorWindowMs,
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
  }),
  initial: 'signing',
  on: {
    OBSERVED: [
      { guard: 'finalSuccess', target: '.confirmed', actions: 'recordInclusion' },
      { guard: 'finalFailure', target: '.reverted', actions: 'recordInclusion' },
      { guard: 'dropped', target: '.failed', actions: 'recordDropped' },
    ],
  },
  states: {
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
          }),
        },
        onError: {
          target: 'failed',
          actions: assign({
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
          }),
        },
      },
    },
    broadcasting: {
      on: {
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
              }),
              'wakeAtWindowEnd',
            ],
          },
          {
            guard: 'provenRejection',
            target: 'released',
            actions: assign(({ event }) => {
              const o = event.output as Extract<BroadcastOutcome, { outcome: 'rejected' }>;
              return { failure: { stage: 'broadcast' as const, code: o.code, message: o.message }, wakeAt: null };
            }),
          },
          {
            target: 'retrying',
            actions: assign(({ context, event }) => ({
              unansweredBroadcasts: context.unansweredBroadcasts + 1,
              broadcastAt: context.broadcastAt ?? event.output.at,
              monitoring: { error: (event.output as { message?: string }).message ?? 'the node did not answer' },
              wakeAt: event.output.at + BROADCAST_RETRY_MS,
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
        WAKE: { guard: 'windowOver', target: 'watching', actions: 'timedOut' },
        OPERATOR_RELEASE: {
          target: 'operatorReleased',
          actions: { type: 'noteOperatorRelease', params: { status: 'submitted' } },
        },
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
