import { assign, fromPromise, setup } from 'xstate';
import type { YieldAction, YieldStatus } from '../../chains/domain/yield.ts';
import type { YieldError, YieldStepRef } from '../../store/yield-repo.ts';
import type { SignReference } from '../payment/payment.machine.ts';

/** What an operation is admitted with (yield-definition.ts `create` writes its row and returns this). */
export interface YieldInput {
  operationId: string;
  projectId: string;
  apiKeyId: string | null;
  walletId: string;
  walletAddress: string;
  chainId: number;
  chainKey: string;
  action: YieldAction;
  /** The amount as the partner wrote it, normalized (`"1.5"`, or `"all"` for a withdrawal). */
  amount: string;
  /** Base units, decimal; `all` for a withdrawal of everything. */
  amountBase: string;
  /** Names the operation's requests for the signing policy's holds: its key, its route, its normalized body. */
  reference: SignReference;
  initiatorUserId: string | null;
  /** How often a signed step is looked at while it is on its way to the chain. */
  pollMs: number;
}

export interface YieldContext extends YieldInput {
  /** The operation's transaction records, in order (an approval, then the lending call). */
  steps: YieldStepRef[];
  /** How many of `steps` were signed (or their SIGN taken): the last one is unsigned work while this is smaller. */
  signedSteps: number;
  error: YieldError | null;
  /** Why it waits (another operation, a node that did not answer), for the operator. */
  waitingFor: string | null;
  wakeAt: number | null;
  /** Consecutive waits for a transient reason: the back-off doubles with each. */
  retries: number;
  /** Each resend of the POST after a hold gets a new SIGN (its event id). */
  signRound: number;
  /** A CANCEL arrived while a preparation was under way: it is applied when that preparation answers. */
  cancelRequested: boolean;
  /** The block the final transaction reached its confirmations in. */
  confirmedIn: { blockNumber: string; blockHash: string } | null;
}

/** What a preparation came to (yield-steps.ts `prepare`). */
export type PrepareOutcome =
  | { kind: 'step'; step: YieldStepRef; at: number }
  | { kind: 'wait'; reason: string; at: number }
  | { kind: 'requires_action'; error: YieldError; at: number }
  | { kind: 'fail'; error: YieldError; at: number };

/** What a step's SIGN came to (prepared-step.ts `signPreparedStep`, read for the operation). */
export type SignStepOutcome =
  | { kind: 'signing'; at: number }
  | { kind: 'held'; error: YieldError; at: number }
  | { kind: 'fail'; error: YieldError; at: number };

/** Where a signed step stands: still on its way, done (two confirmations on the canonical chain, or final), or failed. */
export type CheckOutcome =
  | { kind: 'waiting'; at: number }
  | { kind: 'done'; at: number; blockNumber?: string; blockHash?: string }
  | { kind: 'fail'; error: YieldError; at: number };

export type YieldEvent =
  | { type: 'WAKE'; at: number }
  | { type: 'CANCEL' }
  /**
   * The same POST repeated after `requires_action`. `refused` is set by the definition (in the step's transaction) when
   * another operation is active on the wallet and chain: the operation stays as it is.
   */
  | { type: 'RESUME'; at: number; refused?: boolean };

/** Stored states of the previous version need a migration when this is bumped (yield-definition.ts). */
export const YIELD_MACHINE_VERSION = 1;

/** The longest wait between two tries after transient failures. */
export const MAX_RETRY_MS = 60_000;
/** The first wait after a transient failure. */
const FIRST_RETRY_MS = 1_000;

function backoff(retries: number): number {
  return Math.min(MAX_RETRY_MS, FIRST_RETRY_MS * 2 ** Math.min(retries, 16));
}

/** The last step, while it is unsigned work (prepared, its SIGN not taken): what a cancellation ends. */
export function unsignedStep(c: Pick<YieldContext, 'steps' | 'signedSteps'>): YieldStepRef | null {
  return c.steps.length > c.signedSteps ? c.steps[c.steps.length - 1]! : null;
}

/**
 * The operation's status for each state (spec: Yield operation `status`); `pending` becomes `submitted` once signed. An
 * operation cancelled from `requiresAction` (the only state a cancellation leaves with its `error` set) stays
 * `requires_action` until the cancellation answers: it was not active, and must not become active (the unique index of
 * active operations) while another operation of the wallet may be active on the chain.
 */
export function yieldStatus(state: string, c: Pick<YieldContext, 'signedSteps' | 'error'>): YieldStatus {
  switch (state) {
    case 'requiresAction':
      return 'requires_action';
    case 'cancelling':
    case 'waitingToCancel':
      if (c.error !== null) return 'requires_action';
      return c.signedSteps > 0 ? 'submitted' : 'pending';
    case 'confirmed':
    case 'failed':
    case 'cancelled':
      return state;
    default:
      return c.signedSteps > 0 ? 'submitted' : 'pending';
  }
}

/**
 * A yield operation (spec: Yield operation `status`): each of its transactions is a prepared payment step (the payment
 * machine's `prepared` state) that this machine prepares, signs and follows.
 *
 * `preparing` (the `prepare` effect: whose turn it is, the market and the wallet read in one request, then the step the
 * operation needs next, admitted as a prepared step: an approval of exactly the amount when the allowance is short, else
 * the lending call; or why none can be: the supply cap, a revert in estimation) → `signingStep` (the `signStep` effect
 * delivers the step's SIGN, decided by the signing policy inside the step) → `awaitingStep` (a WAKE every `pollMs` runs
 * `checking`: each transaction must have two confirmations on the canonical chain, read afresh at each check: an
 * approval before the lending call is prepared (which follows it, taking its hold over), the final one for
 * `confirmed`) → `confirmed`. `waiting` is pending after a transient failure or behind another
 * operation of the wallet, retried with back-off; `requiresAction` waits for the partner's resend (a supply cap, a
 * policy hold) and keeps the prepared step of a hold, which the resend signs as prepared; `cancelling` ends the unsigned
 * step, if any. Every effect is at-least-once: a step is admitted under an id derived from the operation and its index
 * (a second run finds it), a SIGN is delivered under an event id (a second delivery is a duplicate), and the reads are
 * reads.
 */
export const yieldMachine = setup({
  types: {} as { context: YieldContext; input: YieldInput; events: YieldEvent },
  actors: {
    prepare: fromPromise<PrepareOutcome, PrepareInput>(async () => {
      throw new Error('prepare runs as an effect of the actor host');
    }),
    signStep: fromPromise<SignStepOutcome, SignStepInput>(async () => {
      throw new Error('signStep runs as an effect of the actor host');
    }),
    checkStep: fromPromise<CheckOutcome, CheckStepInput>(async () => {
      throw new Error('checkStep runs as an effect of the actor host');
    }),
    cancelStep: fromPromise<{ cancelled: boolean }, CancelStepInput>(async () => {
      throw new Error('cancelStep runs as an effect of the actor host');
    }),
  },
  guards: {
    cancelRequested: ({ context }) => context.cancelRequested,
    resumable: ({ event }) => event.type === 'RESUME' && event.refused !== true,
    /** A resend after a policy hold: the step it held is still prepared, and is signed as prepared. */
    resumeHeld: ({ context, event }) =>
      event.type === 'RESUME' && event.refused !== true && unsignedStep(context) !== null,
  },
  actions: {
    noteCancel: assign({ cancelRequested: true }),
  },
}).createMachine({
  id: 'yield',
  context: ({ input }) => ({
    ...input,
    steps: [],
    signedSteps: 0,
    error: null,
    waitingFor: null,
    wakeAt: null,
    retries: 0,
    signRound: 0,
    cancelRequested: false,
    confirmedIn: null,
  }),
  initial: 'preparing',
  states: {
    preparing: {
      invoke: {
        src: 'prepare',
        input: ({ context }) => prepareInput(context),
        onDone: [
          {
            guard: 'cancelRequested',
            target: 'cancelling',
            actions: assign({
              steps: ({ context, event }) =>
                event.output.kind === 'step' ? withStep(context.steps, event.output.step) : context.steps,
            }),
          },
          {
            guard: ({ event }) => event.output.kind === 'step',
            target: 'signingStep',
            actions: assign({
              steps: ({ context, event }) =>
                event.output.kind === 'step' ? withStep(context.steps, event.output.step) : context.steps,
              retries: 0,
              waitingFor: null,
              error: null,
              wakeAt: null,
            }),
          },
          {
            guard: ({ event }) => event.output.kind === 'wait',
            target: 'waiting',
            actions: assign(({ context, event }) => ({
              waitingFor: event.output.kind === 'wait' ? event.output.reason : null,
              wakeAt: event.output.at + backoff(context.retries),
              retries: context.retries + 1,
            })),
          },
          {
            guard: ({ event }) => event.output.kind === 'requires_action',
            target: 'requiresAction',
            actions: assign({
              error: ({ event }) => (event.output.kind === 'requires_action' ? event.output.error : null),
              waitingFor: null,
              wakeAt: null,
              retries: 0,
            }),
          },
          {
            target: 'failed',
            actions: assign({
              error: ({ event }) => (event.output.kind === 'fail' ? event.output.error : null),
              waitingFor: null,
              wakeAt: null,
            }),
          },
        ],
        // An effect that threw (a defect, a store that refused): tried again after the back-off.
        onError: [
          { guard: 'cancelRequested', target: 'cancelling' },
          {
            target: 'waiting',
            actions: assign(({ context, event }) => {
              const e = event.error as { message?: string; at?: number } | undefined;
              return {
                waitingFor: `the preparation failed: ${e?.message ?? 'unknown error'}`,
                wakeAt: (e?.at ?? 0) + backoff(context.retries),
                retries: context.retries + 1,
              };
            }),
          },
        ],
      },
      on: { CANCEL: { actions: 'noteCancel' } },
    },
    waiting: {
      on: {
        WAKE: { target: 'preparing', actions: assign({ wakeAt: null }) },
        CANCEL: { target: 'cancelling', actions: assign({ wakeAt: null }) },
      },
    },
    signingStep: {
      invoke: {
        src: 'signStep',
        input: ({ context }) => signStepInput(context),
        onDone: [
          {
            guard: ({ event }) => event.output.kind === 'signing',
            target: 'awaitingStep',
            actions: assign(({ context, event }) => ({
              signedSteps: context.steps.length,
              error: null,
              wakeAt: event.output.at + context.pollMs,
            })),
          },
          {
            guard: ({ event }) => event.output.kind === 'held',
            target: 'requiresAction',
            actions: assign({ error: ({ event }) => (event.output.kind === 'held' ? event.output.error : null) }),
          },
          {
            target: 'failed',
            actions: assign({ error: ({ event }) => (event.output.kind === 'fail' ? event.output.error : null) }),
          },
        ],
        onError: {
          target: 'waitingToSign',
          actions: assign(({ context, event }) => {
            const e = event.error as { message?: string; at?: number } | undefined;
            return {
              waitingFor: `the step's signing could not be asked: ${e?.message ?? 'unknown error'}`,
              wakeAt: (e?.at ?? 0) + backoff(context.retries),
              retries: context.retries + 1,
            };
          }),
        },
      },
      on: { CANCEL: 'cancelling' },
    },
    /** The SIGN could not be delivered (the store refused, the host stopping): delivered again after the back-off. */
    waitingToSign: {
      on: {
        WAKE: { target: 'signingStep', actions: assign({ wakeAt: null, waitingFor: null }) },
        CANCEL: { target: 'cancelling', actions: assign({ wakeAt: null }) },
      },
    },
    awaitingStep: {
      on: { WAKE: { target: 'checking', actions: assign({ wakeAt: null }) } },
    },
    checking: {
      invoke: {
        src: 'checkStep',
        input: ({ context }) => checkStepInput(context),
        onDone: [
          {
            guard: ({ context, event }) => event.output.kind === 'done' && isFinalStep(context),
            target: 'confirmed',
            actions: assign({
              confirmedIn: ({ event }) =>
                event.output.kind === 'done' && event.output.blockNumber && event.output.blockHash
                  ? { blockNumber: event.output.blockNumber, blockHash: event.output.blockHash }
                  : null,
            }),
          },
          { guard: ({ event }) => event.output.kind === 'done', target: 'preparing', actions: assign({ retries: 0 }) },
          {
            guard: ({ event }) => event.output.kind === 'fail',
            target: 'failed',
            actions: assign({ error: ({ event }) => (event.output.kind === 'fail' ? event.output.error : null) }),
          },
          {
            target: 'awaitingStep',
            actions: assign({ wakeAt: ({ context, event }) => event.output.at + context.pollMs }),
          },
        ],
        onError: {
          target: 'awaitingStep',
          actions: assign({
            wakeAt: ({ context, event }) => ((event.error as { at?: number } | undefined)?.at ?? 0) + context.pollMs,
          }),
        },
      },
    },
    requiresAction: {
      on: {
        RESUME: [
          {
            guard: 'resumeHeld',
            target: 'signingStep',
            actions: assign({ signRound: ({ context }) => context.signRound + 1, error: null, retries: 0 }),
          },
          { guard: 'resumable', target: 'preparing', actions: assign({ error: null, retries: 0 }) },
        ],
        CANCEL: 'cancelling',
      },
    },
    cancelling: {
      invoke: {
        src: 'cancelStep',
        input: ({ context }) => ({
          transactionId: unsignedStep(context)?.transactionId ?? null,
          operationId: context.operationId,
        }),
        onDone: [
          {
            guard: ({ event }) => event.output.cancelled,
            target: 'cancelled',
            actions: assign({ cancelRequested: false, wakeAt: null, error: null }),
          },
          {
            // Its SIGN was taken first: it is signed work now, followed as any.
            target: 'awaitingStep',
            actions: assign(({ context }) => ({
              cancelRequested: false,
              signedSteps: context.steps.length,
              error: null,
              wakeAt: 0,
            })),
          },
        ],
        onError: {
          target: 'waitingToCancel',
          actions: assign(({ context, event }) => ({
            wakeAt: ((event.error as { at?: number } | undefined)?.at ?? 0) + backoff(context.retries),
            retries: context.retries + 1,
          })),
        },
      },
    },
    /** The step's CANCEL could not be delivered: delivered again after the back-off. */
    waitingToCancel: {
      on: { WAKE: { target: 'cancelling', actions: assign({ wakeAt: null }) } },
    },
    confirmed: { type: 'final' },
    failed: { type: 'final' },
    cancelled: { type: 'final' },
  },
});

export interface PrepareInput {
  operationId: string;
  walletId: string;
  walletAddress: string;
  projectId: string;
  apiKeyId: string | null;
  chainId: number;
  chainKey: string;
  action: YieldAction;
  amountBase: string;
  /** The index of the step to prepare (the steps before it are done). */
  index: number;
  steps: YieldStepRef[];
}

export interface SignStepInput {
  transactionId: string;
  /** Deduplicates the SIGN: the same on every run for one round, new at each resend. */
  eventId: string;
  reference: SignReference;
  initiatorUserId: string | null;
}

export interface CheckStepInput {
  transactionId: string;
  chainKey: string;
  /** The operation's last transaction (its `done` confirms the operation), or an approval (the next is prepared). */
  final: boolean;
}

export interface CancelStepInput {
  operationId: string;
  transactionId: string | null;
}

function prepareInput(c: YieldContext): PrepareInput {
  return {
    operationId: c.operationId,
    walletId: c.walletId,
    walletAddress: c.walletAddress,
    projectId: c.projectId,
    apiKeyId: c.apiKeyId,
    chainId: c.chainId,
    chainKey: c.chainKey,
    action: c.action,
    amountBase: c.amountBase,
    index: c.signedSteps,
    steps: c.steps,
  };
}

function signStepInput(c: YieldContext): SignStepInput {
  const step = c.steps[c.steps.length - 1]!;
  return {
    transactionId: step.transactionId,
    eventId: `${c.operationId}:sign:${c.steps.length - 1}:${c.signRound}`,
    reference: c.reference,
    initiatorUserId: c.initiatorUserId,
  };
}

/** The step being followed is the lending call (not an approval). */
function isFinalStep(c: YieldContext): boolean {
  return c.steps[c.steps.length - 1]?.kind !== 'approve';
}

function checkStepInput(c: YieldContext): CheckStepInput {
  return { transactionId: c.steps[c.steps.length - 1]!.transactionId, chainKey: c.chainKey, final: isFinalStep(c) };
}

/** The steps with `step` as the one at its index (a second preparation of an index finds the same step). */
function withStep(steps: readonly YieldStepRef[], step: YieldStepRef): YieldStepRef[] {
  return steps.some((s) => s.transactionId === step.transactionId) ? [...steps] : [...steps, step];
}
