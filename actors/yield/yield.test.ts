/**
 * The yield operation machine (yield.machine.ts) on its own, with fakes for its effects:
 * - every transition, through XState's pure `transition` (each effect's answer given as the done or error event the
 *   host delivers), with the effect each state invokes and its input;
 * - the definition (yield-definition.ts) run by the real actor host over an in-memory store: the operation's row as
 *   each state writes it, a RESUME refused while another operation is active, a CANCEL deferred while the
 *   preparation answers;
 * - the preparation (yield-steps.ts `prepare`) with a fake chain, wallet and payment host: a step's id is derived
 *   from the operation and its index, so a preparation run again (after a crash, by the host's at-least-once
 *   re-dispatch) finds the step an earlier run admitted instead of admitting a second one.
 * The whole operation against a node is test/yield-operations.spec.ts and test/policy-yield.spec.ts.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type EventObject, initialTransition, type SnapshotFrom, transition } from 'xstate';
import type { LendingMarket } from '../../chains/evm/lending-protocol.ts';
import type { YieldSnapshot } from '../../chains/evm/read-yield-position.ts';
import { DEFAULT_LENDING_MARKETS } from '../../chains/evm/resolve-lending-market.ts';
import type { EvmUnsignedPayment, PaymentChain } from '../../chains/payment-chain.ts';
import { createStore, type Store } from '../../store/index.ts';
import type { TransactionRow } from '../../store/transactions-repo.ts';
import { createActorHost } from '../host/host.ts';
import type { PaymentDefinition } from '../payment/payment-definition.ts';
import {
  type CheckOutcome,
  MAX_RETRY_MS,
  type PrepareInput,
  type PrepareOutcome,
  type SignStepOutcome,
  unsignedStep,
  type YieldInput,
  yieldMachine,
  yieldStatus,
} from './yield.machine.ts';
import { createYieldDefinition, type YieldAdmission, type YieldDefinition } from './yield-definition.ts';
import { createYieldSteps, stepTransactionId } from './yield-steps.ts';

type Snap = SnapshotFrom<typeof yieldMachine>;

const SEPOLIA = 11155111;
const WALLET = '0x00000000000000000000000000000000000000A1' as const;
const REFERENCE = { idempotencyKey: 'key-1', route: 'createYieldDeposit', bodyHash: 'hash-1' };
const POLL_MS = 500;
const T0 = 1_000_000;

const INPUT: YieldInput = {
  operationId: 'op-1',
  projectId: 'proj',
  apiKeyId: 'key',
  walletId: 'w1',
  walletAddress: WALLET,
  chainId: SEPOLIA,
  chainKey: `evm:${SEPOLIA}`,
  action: 'deposit',
  amount: '250.5',
  amountBase: '250500000',
  reference: REFERENCE,
  initiatorUserId: 'user-1',
  pollMs: POLL_MS,
};

const APPROVE = { kind: 'approve' as const, transactionId: 'tx-approve' };
const SUPPLY = { kind: 'supply' as const, transactionId: 'tx-supply' };

// --- the pure machine ---------------------------------------------------------------------------------------------

type Invoked = { src: string; input: Record<string, unknown> };

/** The effects the actions of a transition start (`xstate.spawnChild` of an invoke), with their inputs. */
function invokedBy(actions: ReadonlyArray<{ type: string; params?: unknown }>): Invoked[] {
  return actions
    .filter((a) => a.type === 'xstate.spawnChild')
    .map((a) => {
      const p = a.params as { src: string; input: Record<string, unknown> };
      return { src: p.src, input: p.input };
    });
}

function state(s: Snap): string {
  return typeof s.value === 'string' ? s.value : Object.keys(s.value)[0]!;
}

/** A running machine: its snapshot and what the latest transition invoked. */
interface Run {
  snap: Snap;
  invoked: Invoked[];
}

function start(input: YieldInput = INPUT): Run {
  const [snap, actions] = initialTransition(yieldMachine, input);
  return { snap, invoked: invokedBy(actions) };
}

function send(run: Run, event: EventObject & Record<string, unknown>): Run {
  const [snap, actions] = transition(yieldMachine, run.snap, event as never);
  return { snap, invoked: invokedBy(actions) };
}

/** The effect of the current state answered `output` (the host's done event for its invoke). */
function answer(run: Run, output: unknown): Run {
  const id = `0.yield.${state(run.snap)}`;
  return send(run, { type: `xstate.done.actor.${id}`, output, actorId: id } as EventObject);
}

/** The effect of the current state threw (the host's error event: `code`, `message`, `at`). */
function crash(run: Run, at = T0, message = 'the store refused'): Run {
  const id = `0.yield.${state(run.snap)}`;
  return send(run, {
    type: `xstate.error.actor.${id}`,
    error: { code: 'EFFECT_FAILED', message, at },
    actorId: id,
  } as EventObject);
}

const step = (s: typeof APPROVE | typeof SUPPLY, at = T0): PrepareOutcome => ({ kind: 'step', step: s, at });
const signing = (at = T0): SignStepOutcome => ({ kind: 'signing', at });
const waitingCheck = (at = T0): CheckOutcome => ({ kind: 'waiting', at });
const doneCheck = (at = T0, blockNumber?: string, blockHash?: string): CheckOutcome => ({
  kind: 'done',
  at,
  ...(blockNumber ? { blockNumber } : {}),
  ...(blockHash ? { blockHash } : {}),
});
const HELD = {
  code: 'POLICY_REVIEW_REQUIRED',
  message: 'needs an approval',
  transactionId: APPROVE.transactionId,
  reviewId: 'review-1',
};

/** An operation whose first step (an approval) is prepared and being signed. */
function atSigning(): Run {
  return answer(start(), step(APPROVE));
}

/** An operation whose approval is signed and followed. */
function atAwaiting(): Run {
  return answer(atSigning(), signing(T0 + 10));
}

/** An operation whose approval's SIGN was held by the policy. */
function atHeld(): Run {
  return answer(atSigning(), { kind: 'held', error: HELD, at: T0 + 10 } satisfies SignStepOutcome);
}

describe('the machine', () => {
  test('preparing first: the prepare effect for step 0 of the operation', () => {
    const run = start();
    assert.equal(state(run.snap), 'preparing');
    assert.deepEqual(run.invoked, [
      {
        src: 'prepare',
        input: PREPARE,
      },
    ]);
    assert.equal(yieldStatus(state(run.snap), run.snap.context), 'pending');
    assert.equal(run.snap.context.wakeAt, null);
  });

  test('prepare → step: signingStep, the SIGN under an event id of the step and round', () => {
    const run = atSigning();
    assert.equal(state(run.snap), 'signingStep');
    assert.deepEqual(run.snap.context.steps, [APPROVE]);
    assert.equal(run.snap.context.signedSteps, 0);
    assert.deepEqual(unsignedStep(run.snap.context), APPROVE);
    assert.deepEqual(run.invoked, [
      {
        src: 'signStep',
        input: {
          transactionId: APPROVE.transactionId,
          eventId: 'op-1:sign:0:0',
          reference: REFERENCE,
          initiatorUserId: 'user-1',
        },
      },
    ]);
    assert.equal(yieldStatus(state(run.snap), run.snap.context), 'pending');
  });

  test('prepare → wait: waiting with a doubling back-off, capped; WAKE prepares again; a step resets it', () => {
    let run = start();
    const wakes: number[] = [];
    for (let i = 0; i < 12; i++) {
      run = answer(run, { kind: 'wait', reason: 'yield operation X of this wallet on another chain', at: T0 });
      assert.equal(state(run.snap), 'waiting');
      assert.equal(run.snap.context.waitingFor, 'yield operation X of this wallet on another chain');
      assert.equal(yieldStatus(state(run.snap), run.snap.context), 'pending');
      wakes.push(run.snap.context.wakeAt! - T0);
      assert.deepEqual(run.invoked, [], 'waiting runs nothing');
      run = send(run, { type: 'WAKE', at: run.snap.context.wakeAt! });
      assert.equal(state(run.snap), 'preparing');
      assert.equal(run.snap.context.wakeAt, null);
      assert.equal(run.invoked[0]!.src, 'prepare');
    }
    assert.deepEqual(wakes.slice(0, 6), [1_000, 2_000, 4_000, 8_000, 16_000, 32_000]);
    assert.ok(wakes.slice(6).every((w) => w === MAX_RETRY_MS));
    run = answer(run, step(APPROVE));
    assert.equal(state(run.snap), 'signingStep');
    assert.equal(run.snap.context.retries, 0);
    assert.equal(run.snap.context.waitingFor, null);
  });

  test('prepare throws: waiting with the back-off from when it failed, the reason kept for the operator', () => {
    const run = crash(start(), T0 + 7, 'database is locked');
    assert.equal(state(run.snap), 'waiting');
    assert.equal(run.snap.context.wakeAt, T0 + 7 + 1_000);
    assert.equal(run.snap.context.retries, 1);
    assert.match(run.snap.context.waitingFor!, /the preparation failed: database is locked/);
    const again = crash(send(run, { type: 'WAKE', at: T0 + 1_007 }), T0 + 1_010);
    assert.equal(again.snap.context.wakeAt, T0 + 1_010 + 2_000);
  });

  test('prepare → requires_action (a supply cap): requiresAction, the error kept, nothing to wake', () => {
    const error = { code: 'LENDING_SUPPLY_CAP_EXCEEDED', message: 'no room' };
    const run = answer(start(), { kind: 'requires_action', error, at: T0 } satisfies PrepareOutcome);
    assert.equal(state(run.snap), 'requiresAction');
    assert.deepEqual(run.snap.context.error, error);
    assert.equal(run.snap.context.wakeAt, null);
    assert.equal(yieldStatus(state(run.snap), run.snap.context), 'requires_action');
    assert.equal(unsignedStep(run.snap.context), null);
  });

  test('prepare → fail: failed, final', () => {
    const error = { code: 'INSUFFICIENT_TOKEN_BALANCE', message: 'too little' };
    const run = answer(start(), { kind: 'fail', error, at: T0 } satisfies PrepareOutcome);
    assert.equal(state(run.snap), 'failed');
    assert.equal(run.snap.status, 'done');
    assert.deepEqual(run.snap.context.error, error);
    assert.equal(yieldStatus(state(run.snap), run.snap.context), 'failed');
  });

  test('signStep → signing: awaitingStep, the step counted signed, the first look at pollMs', () => {
    const run = atAwaiting();
    assert.equal(state(run.snap), 'awaitingStep');
    assert.equal(run.snap.context.signedSteps, 1);
    assert.equal(unsignedStep(run.snap.context), null);
    assert.equal(run.snap.context.wakeAt, T0 + 10 + POLL_MS);
    assert.equal(yieldStatus(state(run.snap), run.snap.context), 'submitted');
    assert.deepEqual(run.invoked, []);
  });

  test('signStep → held: requiresAction with the review, the step still unsigned work', () => {
    const run = atHeld();
    assert.equal(state(run.snap), 'requiresAction');
    assert.deepEqual(run.snap.context.error, HELD);
    assert.equal(run.snap.context.signedSteps, 0);
    assert.deepEqual(unsignedStep(run.snap.context), APPROVE);
    assert.equal(yieldStatus(state(run.snap), run.snap.context), 'requires_action');
  });

  test('signStep → fail (a deny): failed with the policy code', () => {
    const error = { code: 'POLICY_DENIED', message: 'denied', transactionId: APPROVE.transactionId };
    const run = answer(atSigning(), { kind: 'fail', error, at: T0 } satisfies SignStepOutcome);
    assert.equal(state(run.snap), 'failed');
    assert.deepEqual(run.snap.context.error, error);
  });

  test('signStep throws: waitingToSign with the back-off; WAKE delivers the same SIGN (same event id)', () => {
    let run = crash(atSigning(), T0 + 3);
    assert.equal(state(run.snap), 'waitingToSign');
    assert.equal(run.snap.context.wakeAt, T0 + 3 + 1_000);
    assert.match(run.snap.context.waitingFor!, /could not be asked/);
    run = send(run, { type: 'WAKE', at: T0 + 1_003 });
    assert.equal(state(run.snap), 'signingStep');
    assert.equal(run.snap.context.waitingFor, null);
    assert.equal(run.invoked[0]!.input['eventId'], 'op-1:sign:0:0', 'a redelivery, deduplicated by the step');
  });

  test('checkStep: an approval (not final) settles, then the next step is prepared at index 1', () => {
    let run = send(atAwaiting(), { type: 'WAKE', at: T0 + 510 });
    assert.equal(state(run.snap), 'checking');
    assert.deepEqual(run.invoked, [
      { src: 'checkStep', input: { transactionId: APPROVE.transactionId, chainKey: `evm:${SEPOLIA}`, final: false } },
    ]);
    run = answer(run, waitingCheck(T0 + 520));
    assert.equal(state(run.snap), 'awaitingStep');
    assert.equal(run.snap.context.wakeAt, T0 + 520 + POLL_MS);
    run = crash(send(run, { type: 'WAKE', at: T0 + 1_020 }), T0 + 1_030);
    assert.equal(state(run.snap), 'awaitingStep', 'a failed look is looked again at the next poll');
    assert.equal(run.snap.context.wakeAt, T0 + 1_030 + POLL_MS);
    run = answer(send(run, { type: 'WAKE', at: T0 + 1_530 }), doneCheck(T0 + 1_540));
    assert.equal(state(run.snap), 'preparing');
    assert.equal(run.invoked[0]!.src, 'prepare');
    assert.equal(run.invoked[0]!.input['index'], 1);
    assert.deepEqual(run.invoked[0]!.input['steps'], [APPROVE]);
    assert.equal(yieldStatus(state(run.snap), run.snap.context), 'submitted');
  });

  test('checkStep: the final step done at its depth: confirmed, with the block; failed on a step failure', () => {
    let run = answer(send(atAwaiting(), { type: 'WAKE', at: T0 }), doneCheck());
    run = answer(run, step(SUPPLY));
    assert.equal(run.invoked[0]!.input['eventId'], 'op-1:sign:1:0');
    run = answer(run, signing());
    assert.equal(run.snap.context.signedSteps, 2);
    run = send(run, { type: 'WAKE', at: T0 });
    assert.equal(run.invoked[0]!.input['final'], true);
    const confirmed = answer(run, doneCheck(T0, '0x10', '0xabc'));
    assert.equal(state(confirmed.snap), 'confirmed');
    assert.equal(confirmed.snap.status, 'done');
    assert.deepEqual(confirmed.snap.context.confirmedIn, { blockNumber: '0x10', blockHash: '0xabc' });
    assert.equal(yieldStatus('confirmed', confirmed.snap.context), 'confirmed');

    const error = { code: 'NONCE_CONSUMED', message: 'taken', transactionId: SUPPLY.transactionId };
    const failed = answer(run, { kind: 'fail', error, at: T0 } satisfies CheckOutcome);
    assert.equal(state(failed.snap), 'failed');
    assert.deepEqual(failed.snap.context.error, error);
  });

  test('a withdrawal: one step, final at once', () => {
    let run = start({ ...INPUT, action: 'withdraw', amount: 'all', amountBase: 'all' });
    assert.equal(run.invoked[0]!.input['amountBase'], 'all');
    run = answer(answer(run, step({ kind: 'withdraw', transactionId: 'tx-w' } as never)), signing());
    run = send(run, { type: 'WAKE', at: T0 });
    assert.equal(run.invoked[0]!.input['final'], true);
    assert.equal(state(answer(run, doneCheck()).snap), 'confirmed');
  });

  test('RESUME after a hold: the same prepared step signed again under a new round; refused: nothing changes', () => {
    const held = atHeld();
    const refused = send(held, { type: 'RESUME', at: T0, refused: true });
    assert.equal(state(refused.snap), 'requiresAction');
    assert.deepEqual(refused.snap.context, held.snap.context);
    assert.deepEqual(refused.invoked, []);

    const resumed = send(held, { type: 'RESUME', at: T0 });
    assert.equal(state(resumed.snap), 'signingStep');
    assert.equal(resumed.snap.context.error, null);
    assert.equal(resumed.snap.context.signRound, 1);
    assert.deepEqual(resumed.invoked, [
      {
        src: 'signStep',
        input: {
          transactionId: APPROVE.transactionId,
          eventId: 'op-1:sign:0:1',
          reference: REFERENCE,
          initiatorUserId: 'user-1',
        },
      },
    ]);
    assert.deepEqual(resumed.snap.context.steps, [APPROVE], 'no new step');
    // Held again (the review still pending), then a third resend: round 2.
    const again = answer(resumed, { kind: 'held', error: HELD, at: T0 } satisfies SignStepOutcome);
    assert.equal(send(again, { type: 'RESUME', at: T0 }).invoked[0]!.input['eventId'], 'op-1:sign:0:2');
  });

  test('RESUME after a supply cap (no unsigned step): prepared again at the same index', () => {
    let run = answer(send(atAwaiting(), { type: 'WAKE', at: T0 }), doneCheck());
    run = answer(run, {
      kind: 'requires_action',
      error: { code: 'LENDING_SUPPLY_CAP_EXCEEDED', message: 'no room' },
      at: T0,
    } satisfies PrepareOutcome);
    assert.equal(state(run.snap), 'requiresAction');
    assert.equal(yieldStatus(state(run.snap), run.snap.context), 'requires_action');
    assert.equal(state(send(run, { type: 'RESUME', at: T0, refused: true }).snap), 'requiresAction');
    const resumed = send(run, { type: 'RESUME', at: T0 });
    assert.equal(state(resumed.snap), 'preparing');
    assert.equal(resumed.snap.context.error, null);
    assert.equal(resumed.invoked[0]!.input['index'], 1);
  });

  test('RESUME where there is nothing to resume is ignored', () => {
    for (const run of [start(), atSigning(), atAwaiting(), crash(start())]) {
      const after = send(run, { type: 'RESUME', at: T0 });
      assert.equal(state(after.snap), state(run.snap));
      assert.deepEqual(after.snap.context, run.snap.context);
    }
  });

  test('CANCEL while preparing is deferred: applied when the preparation answers (a step, a wait, an error)', () => {
    const noted = send(start(), { type: 'CANCEL' });
    assert.equal(state(noted.snap), 'preparing');
    assert.equal(noted.snap.context.cancelRequested, true);
    assert.deepEqual(noted.invoked, [], 'the preparation under way is not started again');

    const withStep = answer(noted, step(APPROVE));
    assert.equal(state(withStep.snap), 'cancelling');
    assert.deepEqual(withStep.snap.context.steps, [APPROVE], 'the step it admitted is known, to be cancelled');
    assert.deepEqual(withStep.invoked, [
      { src: 'cancelStep', input: { transactionId: APPROVE.transactionId, operationId: 'op-1' } },
    ]);
    const cancelled = answer(withStep, { cancelled: true });
    assert.equal(state(cancelled.snap), 'cancelled');
    assert.equal(cancelled.snap.status, 'done');
    assert.equal(cancelled.snap.context.cancelRequested, false);
    assert.equal(yieldStatus('cancelled', cancelled.snap.context), 'cancelled');

    const withWait = answer(noted, { kind: 'wait', reason: 'r', at: T0 } satisfies PrepareOutcome);
    assert.equal(state(withWait.snap), 'cancelling');
    assert.deepEqual(withWait.invoked[0]!.input, { transactionId: null, operationId: 'op-1' });

    const withError = crash(noted);
    assert.equal(state(withError.snap), 'cancelling');
    assert.deepEqual(withError.invoked[0]!.input, { transactionId: null, operationId: 'op-1' });
  });

  test('CANCEL while waiting, waitingToSign, signingStep or requiresAction: cancelling the unsigned step, if any', () => {
    const waiting = answer(start(), { kind: 'wait', reason: 'r', at: T0 } satisfies PrepareOutcome);
    const fromWaiting = send(waiting, { type: 'CANCEL' });
    assert.equal(state(fromWaiting.snap), 'cancelling');
    assert.equal(fromWaiting.snap.context.wakeAt, null);
    assert.deepEqual(fromWaiting.invoked[0]!.input, { transactionId: null, operationId: 'op-1' });

    for (const run of [atSigning(), crash(atSigning()), atHeld()]) {
      const c = send(run, { type: 'CANCEL' });
      assert.equal(state(c.snap), 'cancelling', `from ${state(run.snap)}`);
      assert.deepEqual(c.invoked, [
        { src: 'cancelStep', input: { transactionId: APPROVE.transactionId, operationId: 'op-1' } },
      ]);
      assert.equal(state(answer(c, { cancelled: true }).snap), 'cancelled');
    }
  });

  test("CANCEL lost to the step's SIGN: the step is signed work, followed at once", () => {
    const c = send(atSigning(), { type: 'CANCEL' });
    const lost = answer(c, { cancelled: false });
    assert.equal(state(lost.snap), 'awaitingStep');
    assert.equal(lost.snap.context.signedSteps, 1);
    assert.equal(lost.snap.context.wakeAt, 0, 'looked at on the next wake');
    assert.equal(yieldStatus(state(lost.snap), lost.snap.context), 'submitted');
  });

  test('cancelStep throws: waitingToCancel with the back-off; WAKE delivers the CANCEL again', () => {
    const c = crash(send(atHeld(), { type: 'CANCEL' }), T0 + 5);
    assert.equal(state(c.snap), 'waitingToCancel');
    assert.equal(c.snap.context.wakeAt, T0 + 5 + 1_000);
    assert.equal(state(send(c, { type: 'CANCEL' }).snap), 'waitingToCancel', 'a second CANCEL changes nothing');
    const again = send(c, { type: 'WAKE', at: T0 + 1_005 });
    assert.equal(state(again.snap), 'cancelling');
    assert.equal(again.invoked[0]!.input['transactionId'], APPROVE.transactionId);
  });

  test('CANCEL of signed work (awaitingStep, checking) is ignored', () => {
    for (const run of [atAwaiting(), send(atAwaiting(), { type: 'WAKE', at: T0 })]) {
      const after = send(run, { type: 'CANCEL' });
      assert.equal(state(after.snap), state(run.snap));
      assert.deepEqual(after.snap.context, run.snap.context);
      assert.deepEqual(after.invoked, []);
    }
  });

  test('events after the end change nothing', () => {
    const done = answer(start(), { kind: 'fail', error: { code: 'X', message: 'x' }, at: T0 } satisfies PrepareOutcome);
    for (const e of [{ type: 'CANCEL' }, { type: 'RESUME', at: T0 }, { type: 'WAKE', at: T0 }] as const) {
      const after = send(done, e);
      assert.equal(state(after.snap), 'failed');
      assert.deepEqual(after.snap.context, done.snap.context);
    }
  });

  test('yieldStatus: each state, pending becoming submitted once a step is signed', () => {
    const none = { signedSteps: 0, error: null };
    const one = { signedSteps: 1, error: null };
    const held = { signedSteps: 0, error: HELD };
    const cap = { signedSteps: 1, error: { code: 'LENDING_SUPPLY_CAP_EXCEEDED', message: 'no room' } };
    const table: Array<[string, Parameters<typeof yieldStatus>[1], string]> = [
      ['preparing', none, 'pending'],
      ['waiting', none, 'pending'],
      ['signingStep', none, 'pending'],
      ['waitingToSign', none, 'pending'],
      ['cancelling', none, 'pending'],
      ['waitingToCancel', none, 'pending'],
      ['preparing', one, 'submitted'],
      ['waiting', one, 'submitted'],
      ['awaitingStep', one, 'submitted'],
      ['checking', one, 'submitted'],
      ['signingStep', one, 'submitted'],
      ['cancelling', one, 'submitted'],
      ['requiresAction', held, 'requires_action'],
      ['requiresAction', cap, 'requires_action'],
      // Cancelled from requiresAction: still requires_action (inactive) until the cancellation answers.
      ['cancelling', held, 'requires_action'],
      ['waitingToCancel', held, 'requires_action'],
      ['cancelling', cap, 'requires_action'],
      ['confirmed', one, 'confirmed'],
      ['failed', none, 'failed'],
      ['failed', one, 'failed'],
      ['cancelled', none, 'cancelled'],
      ['cancelled', held, 'cancelled'],
    ];
    for (const [s, c, status] of table) {
      assert.equal(yieldStatus(s, c), status, `${s} with ${c.signedSteps} signed, error ${c.error?.code ?? 'none'}`);
    }
    // Every state of the machine is in the table.
    const states = Object.keys(yieldMachine.config.states!);
    assert.deepEqual([...new Set(table.map(([s]) => s))].sort(), states.sort());
  });

  test('a stored snapshot (value and context, as JSON) resumes where it was', () => {
    const held = atHeld();
    const restored = yieldMachine.resolveState(
      JSON.parse(JSON.stringify({ value: held.snap.value, context: held.snap.context })),
    );
    const resumed = send({ snap: restored as Snap, invoked: [] }, { type: 'RESUME', at: T0 });
    assert.equal(state(resumed.snap), 'signingStep');
    assert.equal(resumed.invoked[0]!.input['eventId'], 'op-1:sign:0:1');
  });
});

// --- stepTransactionId --------------------------------------------------------------------------------------------

describe('stepTransactionId', () => {
  test('a UUID (version 8, RFC 4122 variant), the same for the same operation and index, distinct otherwise', () => {
    const ids = new Set<string>();
    for (const op of ['8e0f2b9c-0000-4000-8000-000000000001', '8e0f2b9c-0000-4000-8000-000000000002', 'op-1']) {
      for (const index of [0, 1, 2]) {
        const id = stepTransactionId(op, index);
        assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
        assert.equal(stepTransactionId(op, index), id);
        ids.add(id);
      }
    }
    assert.equal(ids.size, 9);
    // Pinned: an operation stored by one version of the service and prepared again by the next must find its steps
    // (a changed derivation would admit a second approval or supply for an operation in flight).
    assert.equal(stepTransactionId('op-1', 0), '7f5e34df-da1a-8c7e-82d8-ef3e3d2a635b');
    assert.equal(stepTransactionId('op-1', 1), 'e6e28935-e221-8a27-abf1-23082425d077');
  });
});

// --- the definition on the real host, effects scripted ----------------------------------------------------------

const quiet = () => undefined;

type Call = { input: Record<string, unknown>; resolve: (v: unknown) => void; reject: (e: unknown) => void };

/** Fake effects whose every call waits for the test to answer it. */
function scriptedSteps() {
  const calls: Record<string, Call[]> = { prepare: [], signStep: [], checkStep: [], cancelStep: [] };
  let notify: () => void = () => undefined;
  const effect =
    (name: string) =>
    (input: unknown): Promise<never> =>
      new Promise((resolve, reject) => {
        calls[name]!.push({ input: input as Record<string, unknown>, resolve: resolve as never, reject });
        notify();
      });
  return {
    calls,
    steps: {
      prepare: effect('prepare'),
      signStep: effect('signStep'),
      checkStep: effect('checkStep'),
      cancelStep: effect('cancelStep'),
    },
    /** The `n`th call (0-based) of effect `name`, once it is made. */
    async call(name: string, n: number): Promise<Call> {
      const deadline = Date.now() + 5_000;
      while (calls[name]!.length <= n) {
        if (Date.now() > deadline) assert.fail(`effect ${name} was not called ${n + 1} time(s)`);
        await new Promise<void>((r) => {
          notify = r;
          setTimeout(r, 20);
        });
      }
      return calls[name]![n]!;
    },
  };
}

function admission(walletId = 'w1', key = 'key-1'): YieldAdmission {
  return {
    apiKeyId: 'key',
    wallet: { id: walletId, projectId: 'proj', address: WALLET },
    chainId: SEPOLIA,
    chainKey: `evm:${SEPOLIA}`,
    action: 'deposit',
    amount: '250.5',
    amountBase: '250500000',
    idempotencyKey: key,
    fingerprint: `fp-${key}`,
    reference: { ...REFERENCE, idempotencyKey: key },
    initiatorUserId: null,
  };
}

async function hostWith(store: Store, steps: ReturnType<typeof createYieldSteps>) {
  const def: YieldDefinition = createYieldDefinition({
    yieldOps: store.yieldOps,
    transactions: store.transactions,
    steps,
    pollMs: 10,
  });
  const host = createActorHost({ store: store.actors, definitions: [def], log: quiet, retryBaseMs: 5 });
  await host.start();
  running.add(host);
  return { def, host };
}

/** The hosts a test started and has not stopped: stopped after it, passed or not (a failed test leaves none). */
const running = new Set<{ stop(): Promise<void> }>();

/** A test with a real host: a bound on its time (a machine that never gets where it waits fails it), and cleanup. */
function hostTest(name: string, fn: () => Promise<void>) {
  test(name, { timeout: 15_000 }, async () => {
    try {
      await fn();
    } finally {
      for (const h of running) await h.stop().catch(() => undefined);
      running.clear();
    }
  });
}

/** Until the operation's view says `predicate`. */
function until(
  h: Awaited<ReturnType<typeof hostWith>>,
  id: string,
  predicate: (v: ReturnType<NonNullable<YieldDefinition['view']>>) => boolean,
) {
  return h.host.waitFor(h.def, id, predicate as never) as Promise<ReturnType<NonNullable<YieldDefinition['view']>>>;
}

const stateOf = (v: { value: unknown }) => (typeof v.value === 'string' ? v.value : Object.keys(v.value as object)[0]);

describe('the definition on the actor host', () => {
  hostTest("the operation's row follows its states: pending, submitted, confirmed (and inactive)", async () => {
    const store = createStore(':memory:');
    const s = scriptedSteps();
    const h = await hostWith(store, s.steps as never);
    await h.host.spawn(h.def, 'op-a', admission());
    let row = store.yieldOps.getAny('op-a')!;
    assert.deepEqual([row.status, row.active, row.steps], ['pending', true, []]);

    (await s.call('prepare', 0)).resolve(step(APPROVE, Date.now()));
    (await s.call('signStep', 0)).resolve(signing(Date.now()));
    await until(h, 'op-a', (v) => stateOf(v) === 'awaitingStep' || stateOf(v) === 'checking');
    row = store.yieldOps.getAny('op-a')!;
    assert.deepEqual([row.status, row.active, row.steps], ['submitted', true, [APPROVE]]);

    // The wake at pollMs looks at the approval: settled, the supply is prepared.
    const check = await s.call('checkStep', 0);
    assert.equal(check.input['final'], false);
    check.resolve(doneCheck(Date.now()));
    const prepareSupply = await s.call('prepare', 1);
    assert.equal(prepareSupply.input['index'], 1);
    prepareSupply.resolve(step(SUPPLY, Date.now()));
    assert.equal((await s.call('signStep', 1)).input['eventId'], 'op-a:sign:1:0');
    s.calls['signStep']![1]!.resolve(signing(Date.now()));
    const finalCheck = await s.call('checkStep', 1);
    assert.equal(finalCheck.input['final'], true);
    finalCheck.resolve(doneCheck(Date.now(), '0x20', '0xbeef'));
    const v = await until(h, 'op-a', (x) => x.status === 'done');
    assert.equal(v.operationStatus, 'confirmed');
    row = store.yieldOps.getAny('op-a')!;
    assert.deepEqual([row.status, row.active, row.steps, row.error], ['confirmed', false, [APPROVE, SUPPLY], null]);
    await h.host.stop();
    store.close();
  });

  hostTest('CANCEL while preparing: settling until the preparation answers, then its step cancelled', async () => {
    const store = createStore(':memory:');
    const s = scriptedSteps();
    const h = await hostWith(store, s.steps as never);
    await h.host.spawn(h.def, 'op-c', admission());
    const prepare = await s.call('prepare', 0);
    await h.host.deliver('op-c', { type: 'CANCEL' });
    const noted = await until(h, 'op-c', (v) => v.context.cancelRequested);
    assert.equal(stateOf(noted), 'preparing');
    assert.equal(noted.settlingCancel, true);
    assert.equal(store.yieldOps.getAny('op-c')!.status, 'pending');

    prepare.resolve(step(APPROVE, Date.now()));
    const cancel = await s.call('cancelStep', 0);
    assert.deepEqual(cancel.input, { transactionId: APPROVE.transactionId, operationId: 'op-c' });
    assert.equal(s.calls['signStep']!.length, 0, 'the step was never asked to sign');
    cancel.resolve({ cancelled: true });
    const v = await until(h, 'op-c', (x) => x.status === 'done');
    assert.equal(v.operationStatus, 'cancelled');
    assert.equal(v.settlingCancel, false);
    const row = store.yieldOps.getAny('op-c')!;
    assert.deepEqual([row.status, row.active], ['cancelled', false]);
    await h.host.stop();
    store.close();
  });

  hostTest(
    'RESUME is refused while another operation of the wallet is active on the chain, accepted once it ends',
    async () => {
      const store = createStore(':memory:');
      const s = scriptedSteps();
      const h = await hostWith(store, s.steps as never);
      await h.host.spawn(h.def, 'op-held', admission('w1', 'k-held'));
      (await s.call('prepare', 0)).resolve({
        kind: 'requires_action',
        error: { code: 'LENDING_SUPPLY_CAP_EXCEEDED', message: 'no room' },
        at: Date.now(),
      } satisfies PrepareOutcome);
      await until(h, 'op-held', (v) => stateOf(v) === 'requiresAction');
      let row = store.yieldOps.getAny('op-held')!;
      assert.deepEqual(
        [row.status, row.active, row.error?.code],
        ['requires_action', false, 'LENDING_SUPPLY_CAP_EXCEEDED'],
      );

      // requires_action is not active: another operation of the wallet on the chain may be admitted meanwhile.
      await h.host.spawn(h.def, 'op-other', admission('w1', 'k-other'));
      const otherPrepare = await s.call('prepare', 1);
      assert.equal(otherPrepare.input['operationId'], 'op-other');
      await assert.rejects(
        h.host.spawn(h.def, 'op-third', admission('w1', 'k-third')),
        (err: { code?: string; details?: { operationId?: string } }) => {
          assert.equal(err.code, 'YIELD_OPERATION_IN_PROGRESS');
          assert.equal(err.details?.operationId, 'op-other');
          return true;
        },
      );

      await h.host.deliver('op-held', { type: 'RESUME' });
      const refused = await until(h, 'op-held', () => true);
      assert.equal(stateOf(refused), 'requiresAction');
      assert.equal(s.calls['prepare']!.length, 2, 'nothing was prepared for the refused resend');
      row = store.yieldOps.getAny('op-held')!;
      assert.deepEqual([row.status, row.active], ['requires_action', false]);

      otherPrepare.resolve({
        kind: 'fail',
        error: { code: 'X', message: 'x' },
        at: Date.now(),
      } satisfies PrepareOutcome);
      await until(h, 'op-other', (v) => v.status === 'done');
      await h.host.deliver('op-held', { type: 'RESUME' });
      const again = await s.call('prepare', 2);
      assert.equal(again.input['operationId'], 'op-held');
      row = store.yieldOps.getAny('op-held')!;
      assert.deepEqual([row.status, row.active, row.error], ['pending', true, null]);
      await h.host.stop();
      store.close();
    },
  );
  hostTest(
    'CANCEL in requires_action while another operation of the wallet is active on the chain: cancelled',
    async () => {
      const store = createStore(':memory:');
      const s = scriptedSteps();
      const h = await hostWith(store, s.steps as never);
      await h.host.spawn(h.def, 'op-held', admission('w1', 'k-held'));
      (await s.call('prepare', 0)).resolve(step(APPROVE, Date.now()));
      (await s.call('signStep', 0)).resolve({ kind: 'held', error: HELD, at: Date.now() } satisfies SignStepOutcome);
      await until(h, 'op-held', (v) => stateOf(v) === 'requiresAction');
      await h.host.spawn(h.def, 'op-other', admission('w1', 'k-other'));
      await s.call('prepare', 1);

      await h.host.deliver('op-held', { type: 'CANCEL' });
      const cancel = await s.call('cancelStep', 0);
      assert.equal(cancel.input['transactionId'], APPROVE.transactionId);
      let row = store.yieldOps.getAny('op-held')!;
      assert.deepEqual([row.status, row.active], ['requires_action', false], 'still held while its step is cancelled');
      cancel.resolve({ cancelled: true });
      const v = await until(h, 'op-held', (x) => x.status === 'done');
      assert.equal(v.operationStatus, 'cancelled');
      row = store.yieldOps.getAny('op-held')!;
      assert.deepEqual([row.status, row.active], ['cancelled', false]);
      assert.equal(store.yieldOps.getAny('op-other')!.active, true);
      await h.host.stop();
      store.close();
    },
  );
});

// --- the preparation with a fake chain and payment host -------------------------------------------------------------

const MARKET: LendingMarket = { chainId: SEPOLIA, ...DEFAULT_LENDING_MARKETS[SEPOLIA] };

/** What the fake node says of the wallet and the market. */
function position(over: Partial<YieldSnapshot> = {}): YieldSnapshot {
  return {
    blockNumber: 100n,
    blockTimestamp: 1_700_000_000n,
    reserve: { configuration: { supplyCap: 0n } } as YieldSnapshot['reserve'],
    accountData: {} as YieldSnapshot['accountData'],
    suppliedBalance: 0n,
    totalSupplied: 0n,
    walletBalance: 1_000_000_000n,
    allowance: 0n,
    nativeBalance: 10n ** 18n,
    availableLiquidity: 0n,
    ...over,
  };
}

/** The parts of a prepared step's admission (PaymentAdmission) these tests read. */
interface StepAdmission {
  intentKind: string;
  record: { to: string };
  prepared: unknown;
  signs: { pendingNonce: number };
  idempotency: unknown;
}

/**
 * createYieldSteps over fakes: a node that answers `pos`, a payment host whose `spawn` writes a record (`admitted`),
 * and `afterAdmit` to make a spawn fail once its record is written (a crash, a race with an earlier run).
 */
function fakeSteps(opts: { pos?: () => YieldSnapshot; afterAdmit?: () => Promise<void> } = {}) {
  const records = new Map<string, Partial<TransactionRow>>();
  const admitted: Array<{ id: string; admission: StepAdmission }> = [];
  let reads = 0;
  const chain = {
    family: 'EVM',
    key: `evm:${SEPOLIA}`,
    async readYieldPosition() {
      reads++;
      return (opts.pos ?? position)();
    },
    async buildCall(_from: string, call: { to: string; data: string }): Promise<EvmUnsignedPayment> {
      return {
        family: 'EVM',
        chainId: SEPOLIA,
        type: 2,
        to: call.to,
        value: '0',
        data: call.data,
        gasLimit: '100000',
        maxFeePerGas: '2000000000',
        maxPriorityFeePerGas: '1000000000',
      };
    },
    async pendingNonce() {
      return 7;
    },
  } as unknown as PaymentChain;
  const steps = createYieldSteps({
    yieldOps: { aheadOf: () => undefined },
    transactions: { getAny: (id: string) => records.get(id) as TransactionRow | undefined },
    wallets: { getAny: () => ({ id: 'w1', projectId: 'proj', address: WALLET }) as never },
    chain: () => chain,
    market: () => MARKET,
    host: () => ({
      async spawn(_def: unknown, id: string, a: StepAdmission) {
        admitted.push({ id, admission: a });
        records.set(id, { id, toAddress: a.record.to, intentKind: 'yield', status: 'pending' });
        if (opts.afterAdmit) await opts.afterAdmit();
        return undefined as never;
      },
      deliver: () => assert.fail('prepare delivers nothing') as never,
    }),
    paymentActors: {} as PaymentDefinition,
    now: () => T0,
  });
  return { steps, records, admitted, reads: () => reads };
}

const PREPARE: PrepareInput = {
  operationId: 'op-1',
  walletId: 'w1',
  walletAddress: WALLET,
  projectId: 'proj',
  apiKeyId: 'key',
  chainId: SEPOLIA,
  chainKey: `evm:${SEPOLIA}`,
  action: 'deposit',
  amountBase: '250500000',
  index: 0,
  steps: [],
};

describe('prepare (at-least-once)', () => {
  test('a short allowance: an approval of exactly the amount, admitted under the step id; run again, the same step', async () => {
    const f = fakeSteps();
    const first = await f.steps.prepare(PREPARE);
    const id = stepTransactionId('op-1', 0);
    assert.deepEqual(first, { kind: 'step', step: { kind: 'approve', transactionId: id }, at: T0 });
    assert.equal(f.admitted.length, 1);
    const a = f.admitted[0]!.admission;
    assert.equal(a.intentKind, 'yield');
    assert.equal(a.record.to, MARKET.usdc);
    assert.deepEqual(a.prepared, {
      operation: 'yield_deposit',
      facts: { asset: MARKET.usdc.toLowerCase(), value: '250500000' },
    });
    assert.equal(a.signs.pendingNonce, 7);
    assert.equal(a.idempotency, null);

    const again = await f.steps.prepare(PREPARE);
    assert.deepEqual(again, first);
    assert.equal(f.admitted.length, 1, 'no second admission');
    assert.equal(f.reads(), 1, 'the step found is not read from the node again');
  });

  test('a run whose spawn wrote the step and then failed finds it', async () => {
    const f = fakeSteps({
      afterAdmit: async () => {
        throw new Error('the host stopped after the commit');
      },
    });
    const out = await f.steps.prepare(PREPARE);
    assert.deepEqual(out, {
      kind: 'step',
      step: { kind: 'approve', transactionId: stepTransactionId('op-1', 0) },
      at: T0,
    });
    assert.equal(f.admitted.length, 1);
  });

  test('the next index after the approval: the supply, under its own id; a withdrawal of all: 2^256-1', async () => {
    const f = fakeSteps({ pos: () => position({ allowance: 250_500_000n }) });
    const approve = { kind: 'approve' as const, transactionId: stepTransactionId('op-1', 0) };
    const out = await f.steps.prepare({ ...PREPARE, index: 1, steps: [approve] });
    assert.deepEqual(out, {
      kind: 'step',
      step: { kind: 'supply', transactionId: stepTransactionId('op-1', 1) },
      at: T0,
    });
    assert.equal(f.admitted[0]!.admission.record.to, MARKET.pool);

    const w = fakeSteps({ pos: () => position({ suppliedBalance: 5n }) });
    const withdrawal = await w.steps.prepare({
      ...PREPARE,
      operationId: 'op-w',
      action: 'withdraw',
      amountBase: 'all',
    });
    assert.equal(withdrawal.kind, 'step');
    assert.deepEqual(w.admitted[0]!.admission.prepared, {
      operation: 'yield_withdraw',
      facts: { asset: MARKET.usdc.toLowerCase(), value: (2n ** 256n - 1n).toString() },
    });
  });

  hostTest(
    'restarted mid-preparation, the host runs prepare again: it finds the step, one admission in all',
    async () => {
      const store = createStore(':memory:');
      // First run: the step is admitted, then the process "dies" before the operation hears of it.
      const records = new Map<string, Partial<TransactionRow>>();
      let admissions = 0;
      const stuck = fakeSteps({ afterAdmit: () => new Promise<void>(() => undefined) });
      const s1 = scriptedSteps();
      const h1 = await hostWith(store, { ...s1.steps, prepare: stuck.steps.prepare } as never);
      await h1.host.spawn(h1.def, 'op-r', admission());
      const deadline = Date.now() + 5_000;
      while (stuck.admitted.length === 0) {
        if (Date.now() > deadline) assert.fail('the first run did not admit its step');
        await new Promise((r) => setTimeout(r, 10));
      }
      for (const [k, v] of stuck.records) records.set(k, v);
      admissions += stuck.admitted.length;
      await h1.host.stop();
      assert.deepEqual(
        store.actors.effectsOf('op-r').map((e) => e.src),
        ['prepare'],
        'stopped with its preparation under way',
      );

      // Second run on the same store: the stored prepare intent is dispatched again (at-least-once).
      const second = fakeSteps();
      for (const [k, v] of records) second.records.set(k, v);
      const s2 = scriptedSteps();
      const h2 = await hostWith(store, { ...s2.steps, prepare: second.steps.prepare } as never);
      const sign = await s2.call('signStep', 0);
      admissions += second.admitted.length;
      assert.equal(admissions, 1, 'one approval admitted across both runs');
      assert.equal(sign.input['transactionId'], stepTransactionId('op-r', 0));
      const v = await until(h2, 'op-r', (x) => stateOf(x) === 'signingStep');
      assert.deepEqual(v.context.steps, [{ kind: 'approve', transactionId: stepTransactionId('op-r', 0) }]);
      await h2.host.stop();
      store.close();
    },
  );
});
