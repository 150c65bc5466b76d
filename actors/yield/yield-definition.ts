import type { EventObject, SnapshotFrom, StateValue } from 'xstate';
import { idempotencyKeyInUse, ServiceError } from '../../chains/domain/errors.ts';
import type { YieldAction, YieldStatus } from '../../chains/domain/yield.ts';
import type { TransactionsRepo } from '../../store/transactions-repo.ts';
import { isActiveOperationViolation, isYieldKeyViolation, type YieldRepo } from '../../store/yield-repo.ts';
import type { ActorView, MachineDefinition } from '../host/types.ts';
import type { SignReference } from '../payment/payment.machine.ts';
import { holdConflict } from '../payment/payment-definition.ts';
import {
  type CancelStepInput,
  type CheckStepInput,
  type PrepareInput,
  type SignStepInput,
  YIELD_MACHINE_VERSION,
  type YieldContext,
  type YieldEvent,
  type YieldInput,
  yieldMachine,
  yieldStatus,
} from './yield.machine.ts';
import type { createYieldSteps } from './yield-steps.ts';

type YieldSnapshot = SnapshotFrom<typeof yieldMachine>;

/** What admitting an operation is given (api/services/yield.ts checked the wallet, the chain and the amount). */
export interface YieldAdmission {
  apiKeyId: string | null;
  wallet: { id: string; projectId: string; address: string };
  chainId: number;
  chainKey: string;
  action: YieldAction;
  /** Normalized as the partner wrote it: `"1.5"`, or `"all"`. */
  amount: string;
  /** Base units, or `all`. */
  amountBase: string;
  idempotencyKey: string;
  /** SHA-256 of the normalized request: a retry under the key with another one is refused. */
  fingerprint: string;
  reference: SignReference;
  initiatorUserId: string | null;
}

/** An operation as its callers see it. */
export interface YieldView extends ActorView<YieldContext> {
  operationStatus: YieldStatus;
  /** A CANCEL is being applied (the preparation under way answers first, or the step's CANCEL is out). */
  settlingCancel: boolean;
}

export type YieldDefinition = MachineDefinition<typeof yieldMachine, YieldAdmission, YieldView>;

function topState(value: StateValue): string {
  return typeof value === 'string' ? value : (Object.keys(value)[0] ?? '');
}

/** Another active operation of the wallet on the chain: the spec's 409. */
export function operationInProgress(walletId: string, chainId: number, operationId: string | undefined): ServiceError {
  return new ServiceError(
    'YIELD_OPERATION_IN_PROGRESS',
    409,
    `another yield operation of this wallet on chain ${chainId} is active; retry once it has ended`,
    { details: { walletId, chainId, ...(operationId ? { operationId } : {}) } },
  );
}

/**
 * The yield operation machine as the host runs it. Admission writes the operation's row (one active operation per
 * wallet and chain: the unique index decides) in the transaction that starts the actor; each step writes its status,
 * error and steps with its state.
 */
export function createYieldDefinition(deps: {
  yieldOps: Pick<YieldRepo, 'insert' | 'update' | 'activeOn' | 'getAny' | 'byKey'>;
  transactions: Pick<TransactionsRepo, 'holder' | 'getAny'>;
  steps: ReturnType<typeof createYieldSteps>;
  /** How often a signed step is looked at (the chain poll interval). */
  pollMs: number;
  now?: () => number;
}): YieldDefinition {
  const now = deps.now ?? Date.now;

  function create(id: string, a: YieldAdmission): YieldInput {
    // Another REST payment of the wallet on the chain comes first (spec: 409). A signed yield step that still holds it
    // (an ended operation's last transaction, held until it is final) does not refuse the operation: its preparation
    // waits for it, `pending`.
    const blocking = deps.transactions.holder(a.wallet.id, a.chainKey);
    const blockingRow = blocking ? deps.transactions.getAny(blocking) : undefined;
    if (blocking && blockingRow?.intentKind !== 'yield') throw holdConflict(a.wallet.id, blocking);
    // A request under a key another one committed first names that operation (the caller answers it): checked before
    // the one-active index, which the same operation's duplicate would otherwise meet first.
    if (deps.yieldOps.byKey(a.wallet.projectId, a.idempotencyKey)) throw idempotencyKeyInUse();
    const createdAt = new Date(now()).toISOString();
    try {
      deps.yieldOps.insert({
        id,
        projectId: a.wallet.projectId,
        apiKeyId: a.apiKeyId,
        walletId: a.wallet.id,
        chainId: a.chainId,
        action: a.action,
        amount: a.amount,
        idempotencyKey: a.idempotencyKey,
        fingerprint: a.fingerprint,
        status: 'pending',
        active: true,
        error: null,
        steps: [],
        createdAt,
      });
    } catch (err) {
      if (isActiveOperationViolation(err)) {
        throw operationInProgress(a.wallet.id, a.chainId, deps.yieldOps.activeOn(a.wallet.id, a.chainId, id));
      }
      // Another request under the same key committed first: its operation is the key's (the caller reads it).
      if (isYieldKeyViolation(err)) throw idempotencyKeyInUse();
      throw err;
    }
    // An unsigned yield step holds it: the step of an operation in `requires_action` (a policy hold; an active
    // operation was refused just above), whose nonce it keeps for the resend. This operation would wait for that step,
    // and that operation's resend would be refused while this one is active: neither would ever go on. Refused, not
    // queued (spec: a prepared yield transaction blocks other REST operations until resolved or cancelled); the throw
    // undoes the insert.
    if (blocking && blockingRow && blockingRow.hash === null) throw holdConflict(a.wallet.id, blocking);
    return {
      operationId: id,
      projectId: a.wallet.projectId,
      apiKeyId: a.apiKeyId,
      walletId: a.wallet.id,
      walletAddress: a.wallet.address,
      chainId: a.chainId,
      chainKey: a.chainKey,
      action: a.action,
      amount: a.amount,
      amountBase: a.amountBase,
      reference: a.reference,
      initiatorUserId: a.initiatorUserId,
      pollMs: deps.pollMs,
    };
  }

  /** A resend after `requires_action` is refused (the operation stays) while another operation is active there. */
  function resolveEvent(id: string, snap: YieldSnapshot, event: EventObject): EventObject {
    if (event.type !== 'RESUME') return event;
    const at = now();
    const c = snap.context;
    const refused =
      topState(snap.value) === 'requiresAction' && deps.yieldOps.activeOn(c.walletId, c.chainId, id) !== undefined;
    const resume: YieldEvent = { type: 'RESUME', at, ...(refused ? { refused: true } : {}) };
    return resume;
  }

  return {
    name: 'yield',
    version: YIELD_MACHINE_VERSION,
    machine: yieldMachine,
    create,
    resolveEvent,
    view: (actor) => {
      const state = topState(actor.value);
      return {
        ...actor,
        operationStatus: yieldStatus(state, actor.context),
        settlingCancel:
          actor.status === 'active' &&
          (state === 'cancelling' ||
            state === 'waitingToCancel' ||
            (state === 'preparing' && actor.context.cancelRequested)),
      };
    },
    effects: {
      // A read of the chain and, at most once per index, an admission (a second run finds the step): run again after a
      // crash, it comes to the same step.
      prepare: { run: (input) => deps.steps.prepare(input as PrepareInput), delivery: 'at-least-once' },
      // A SIGN under its event id: delivered again, it is a duplicate and answers what the step came to.
      signStep: { run: (input) => deps.steps.signStep(input as SignStepInput), delivery: 'at-least-once' },
      checkStep: { run: (input) => deps.steps.checkStep(input as CheckStepInput), delivery: 'at-least-once' },
      cancelStep: { run: (input) => deps.steps.cancelStep(input as CancelStepInput), delivery: 'at-least-once' },
    },
    persist(id: string, snap: YieldSnapshot, previous: YieldSnapshot | undefined) {
      // The initial state describes the row `create` just inserted.
      if (previous === undefined) return;
      const c = snap.context;
      const status = yieldStatus(topState(snap.value), c);
      const active = snap.status !== 'done' && (status === 'pending' || status === 'submitted');
      // A step that changed nothing the row shows (a look at a step still on its way) leaves it, and its updatedAt, alone.
      const before = previous.context;
      const wasActive =
        previous.status !== 'done' && ['pending', 'submitted'].includes(yieldStatus(topState(previous.value), before));
      if (
        status === yieldStatus(topState(previous.value), before) &&
        active === wasActive &&
        c.steps.length === before.steps.length &&
        JSON.stringify(c.error) === JSON.stringify(before.error)
      ) {
        return;
      }
      deps.yieldOps.update(id, {
        status,
        active,
        error: c.error,
        steps: c.steps,
        updatedAt: new Date(now()).toISOString(),
      });
    },
    wakeAt(snap: YieldSnapshot) {
      return snap.status === 'done' ? null : snap.context.wakeAt;
    },
    abandon(id: string) {
      // The operator's abandon: the operation ends; its steps (payment records) keep their own outcome.
      const row = deps.yieldOps.getAny(id);
      if (!row) return;
      deps.yieldOps.update(id, {
        status: 'failed',
        active: false,
        error: { code: 'ABANDONED', message: 'the operator abandoned this operation' },
        steps: row.steps,
        updatedAt: new Date(now()).toISOString(),
      });
    },
  };
}
