/**
 * The payment machine's auto-retry rules for what the chain poller and the effects report, run through XState's pure
 * transition (no host, no chain): which verdict is applied in which state, and what each leads to. The races here are
 * hard to provoke end to end (a verdict computed before a new attempt's hash reached the record, a proof seen again
 * while the next attempt is signed); test/transfers-solana-auto-retry.spec.ts runs the same rules on the façade.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AnyMachineSnapshot, EventObject } from 'xstate';
import { createPureTransition } from '../host/pure-transition.ts';
import {
  MAX_REPLACEMENTS,
  type PaymentContext,
  type PaymentEvent,
  type PaymentInput,
  paymentMachine,
} from './payment.machine.ts';

const pure = createPureTransition(paymentMachine);
const T0 = 1_800_000_000_000;

function solanaInput(over: Partial<PaymentInput> = {}): PaymentInput {
  return {
    transactionId: 'tx',
    projectId: 'p',
    apiKeyId: 'k',
    walletId: 'w',
    walletAddress: 'Wallet1111111111111111111111111111111111111',
    intentKind: 'transfer',
    family: 'SOLANA',
    chainKey: 'solana:SOLANA_DEVNET',
    isDevnet: true,
    chainId: null,
    network: 'SOLANA_DEVNET',
    payload: { family: 'SOLANA' },
    nonce: null,
    monitorWindowMs: 1_800_000,
    preparedAt: T0,
    lastValidBlockHeight: 100,
    autoRetry: {
      ceiling: '1000000',
      expiresAt: T0 + 600_000,
      replacementDelayMs: 60_000,
      intent: { kind: 'NATIVE', to: 'To11111111111111111111111111111111111111111', value: '1' },
    },
    ...over,
  };
}

/** A machine run: the snapshot, and the effect its latest step started (src and invoke id). */
class Run {
  snap: AnyMachineSnapshot;
  effect: { id: string; src: string; input: unknown } | null = null;

  constructor(input: PaymentInput) {
    const [snap, actions] = pure.initial(input);
    this.snap = snap;
    this.note(actions);
  }

  /** The effect a step started; a step that stays in its state keeps the one under way. */
  private note(actions: ReadonlyArray<{ type: string; params?: unknown }>, stayed = false): void {
    const spawn = actions.find((a) => a.type === 'xstate.spawnChild');
    if (spawn) this.effect = spawn.params as { id: string; src: string; input: unknown };
    else if (!stayed) this.effect = null;
  }

  send(event: PaymentEvent | EventObject): this {
    const before = JSON.stringify(this.snap.value);
    const [snap, actions] = pure.next(this.snap, event);
    this.snap = snap;
    this.note(actions, JSON.stringify(snap.value) === before);
    return this;
  }

  /** The current effect's outcome. */
  done(output: unknown): this {
    assert.ok(this.effect, `no effect in ${JSON.stringify(this.snap.value)}`);
    return this.send({ type: `xstate.done.actor.${this.effect.id}`, output } as EventObject);
  }

  fail(error: { code: string; message: string }): this {
    assert.ok(this.effect, `no effect in ${JSON.stringify(this.snap.value)}`);
    return this.send({ type: `xstate.error.actor.${this.effect.id}`, error } as EventObject);
  }

  get state(): string {
    return String(this.snap.value);
  }

  get context(): PaymentContext {
    return this.snap.context as PaymentContext;
  }

  get status(): string {
    return this.snap.status;
  }
}

const expired = (at: number, candidates?: string[]): PaymentEvent => ({
  type: 'OBSERVED',
  observation: { status: 'dropped', reason: 'expired' },
  at,
  ...(candidates ? { candidates } : {}),
});

/** Signs and sends attempt 0 (hash `sig0`), accepted. */
function submitted(input = solanaInput()): Run {
  const run = new Run(input);
  assert.equal(run.effect?.src, 'sign');
  run.done({ signedTransaction: 'bytes0', hash: 'sig0' });
  assert.equal(run.effect?.src, 'broadcast');
  run.done({ outcome: 'accepted', at: T0 + 100 });
  assert.equal(run.state, 'submitted');
  return run;
}

/** From `replacing`: the effect rebuilds attempt n with hash `sig<n>`, which is signed and sent. */
function rebuild(run: Run, n: number, at: number): Run {
  assert.equal(run.state, 'replacing');
  assert.equal(run.effect?.src, 'prepareReplacement');
  run.done({ kind: 'replace', payload: { family: 'SOLANA' }, at, lastValidBlockHeight: 100 + 50 * n });
  assert.equal(run.state, 'signingReplacement');
  run.done({ signedTransaction: `bytes${n}`, hash: `sig${n}` });
  assert.equal(run.state, 'broadcastingReplacement');
  run.done({ outcome: 'accepted', at: at + 10 });
  assert.equal(run.state, 'submitted');
  return run;
}

describe('Solana auto-retry, the machine', () => {
  it('wakes only for its deadline: time alone never rebuilds an attempt', () => {
    const run = submitted();
    assert.equal(run.context.wakeAt, T0 + 600_000);
    run.send({ type: 'WAKE', at: T0 + 120_000 });
    assert.equal(run.state, 'submitted');
    assert.equal(run.context.autoRetry?.bumpCount, 0);
    assert.equal(run.effect, null);
  });

  it('a proven expiry of every attempt rebuilds; the new attempt carries its own last valid height', () => {
    const run = submitted();
    run.send(expired(T0 + 5_000, ['sig0']));
    assert.equal(run.state, 'replacing');
    assert.equal(run.context.autoRetry?.expiredThrough, 0);
    const input = run.effect?.input as { intent: unknown; chainId: string };
    assert.deepEqual(input.intent, solanaInput().autoRetry?.intent);
    assert.equal(input.chainId, 'SOLANA_DEVNET', 'the policy sees the network');
    rebuild(run, 1, T0 + 5_100);
    assert.deepEqual(
      run.context.attempts.map((a) => [a.ordinal, a.hash, a.lastValidBlockHeight]),
      [
        [0, 'sig0', 100],
        [1, 'sig1', 150],
      ],
    );
    assert.equal(run.context.autoRetry?.bumpCount, 1);
    assert.equal(run.context.hash, 'sig0', "the record's hash stays attempt 0's");
  });

  it('a verdict reached before the newest attempt existed proves nothing of it, and is not applied', () => {
    const run = submitted();
    run.send(expired(T0 + 5_000, ['sig0']));
    rebuild(run, 1, T0 + 5_100);
    // The poller read the record when only attempt 0 had a hash: all it saw expired, but sig1 is live.
    run.send(expired(T0 + 5_200, ['sig0']));
    assert.equal(run.state, 'submitted');
    assert.equal(run.status, 'active');
    assert.equal(run.context.autoRetry?.bumpCount, 1);
    // A verdict without candidates (stored before they were sent) is taken as covering.
    const legacy = submitted();
    legacy.send(expired(T0 + 5_000));
    assert.equal(legacy.state, 'replacing');
  });

  it('the proof seen again while the next attempt is prepared or signed changes nothing', () => {
    const run = submitted();
    run.send(expired(T0 + 5_000, ['sig0']));
    run.send(expired(T0 + 5_050, ['sig0']));
    assert.equal(run.state, 'replacing');
    run.done({ kind: 'replace', payload: { family: 'SOLANA' }, at: T0 + 5_100, lastValidBlockHeight: 150 });
    run.send(expired(T0 + 5_150, ['sig0']));
    assert.equal(run.state, 'signingReplacement');
    assert.equal(run.status, 'active');
  });

  it('after the attempt limit, the last expiry fails the payment: TRANSACTION_EXPIRED, ATTEMPT_LIMIT_REACHED', () => {
    const run = submitted();
    const hashes = ['sig0'];
    for (let n = 1; n <= MAX_REPLACEMENTS; n++) {
      run.send(expired(T0 + n * 10_000, [...hashes]));
      rebuild(run, n, T0 + n * 10_000 + 100);
      hashes.push(`sig${n}`);
    }
    run.send(expired(T0 + 50_000, hashes));
    assert.equal(run.state, 'failed');
    assert.equal(run.context.failure?.code, 'TRANSACTION_EXPIRED');
    assert.equal(run.context.autoRetry?.state, 'resolved');
    assert.equal(run.context.autoRetry?.reason, 'ATTEMPT_LIMIT_REACHED');
  });

  it('a stop while rebuilding (funds, ceiling, authority) fails the payment: every attempt already expired', () => {
    for (const reason of ['INSUFFICIENT_FUNDS_FOR_REPLACEMENT', 'FEE_CEILING_REACHED', 'SIGNING_AUTHORITY_ENDED']) {
      const run = submitted();
      run.send(expired(T0 + 5_000, ['sig0']));
      run.done({ kind: 'stop', reason, message: 'why', at: T0 + 5_100 });
      assert.equal(run.state, 'failed', reason);
      assert.equal(run.context.failure?.code, 'TRANSACTION_EXPIRED');
      assert.match(run.context.failure?.message ?? '', new RegExp(`${reason}: why`));
      assert.equal(run.context.autoRetry?.reason, reason);
    }
  });

  it('a node that fails while rebuilding: waits (RPC_UNAVAILABLE), at most SOLANA_REBUILD_RETRY_MS, then tries again', () => {
    const run = submitted();
    run.send(expired(T0 + 5_000, ['sig0']));
    run.fail({ code: 'RPC_UNAVAILABLE', message: 'down', at: T0 + 5_100 } as never);
    assert.equal(run.state, 'submitted');
    assert.equal(run.context.autoRetry?.reason, 'RPC_UNAVAILABLE');
    assert.equal(run.context.wakeAt, T0 + 10_100, '5 s, not EVM_REPLACEMENT_DELAY_MS');
    run.send({ type: 'WAKE', at: T0 + 10_100 });
    assert.equal(run.state, 'replacing');
    // At the deadline, with every attempt expired: failed, DEADLINE_REACHED.
    const late = submitted();
    late.send(expired(T0 + 5_000, ['sig0']));
    late.fail({ code: 'RPC_UNAVAILABLE', message: 'down', at: T0 + 599_000 } as never);
    late.send({ type: 'WAKE', at: T0 + 600_000 });
    assert.equal(late.state, 'failed');
    assert.equal(late.context.autoRetry?.reason, 'DEADLINE_REACHED');
  });

  it('a rebuilt attempt whose signing is uncertain or refused: nothing can land, the payment fails', () => {
    for (const code of ['EFFECT_INTERRUPTED', 'SIGNING_FAILED']) {
      const run = submitted();
      run.send(expired(T0 + 5_000, ['sig0']));
      run.done({ kind: 'replace', payload: { family: 'SOLANA' }, at: T0 + 5_100, lastValidBlockHeight: 150 });
      run.fail({ code, message: 'x' });
      assert.equal(run.state, 'failed', code);
      assert.equal(run.context.failure?.code, 'TRANSACTION_EXPIRED');
      assert.equal(run.context.attempts[1]?.stage, code === 'EFFECT_INTERRUPTED' ? 'signing' : 'rejected');
    }
  });

  it('the deadline while an attempt may land stops the retry; its expiry then fails the payment', () => {
    const run = submitted();
    run.send({ type: 'WAKE', at: T0 + 600_000 });
    assert.equal(run.state, 'submitted');
    assert.equal(run.context.autoRetry?.state, 'stopped');
    assert.equal(run.context.autoRetry?.reason, 'DEADLINE_REACHED');
    run.send(expired(T0 + 605_000, ['sig0']));
    assert.equal(run.state, 'failed');
    assert.equal(run.context.autoRetry?.reason, 'DEADLINE_REACHED');
  });

  it('attempt 0 never known taken (its sends unanswered) and proven expired, even mid-resend: rebuilt', () => {
    const run = new Run(solanaInput());
    run.done({ signedTransaction: 'bytes0', hash: 'sig0' });
    run.done({ outcome: 'unanswered', code: 'RPC_UNAVAILABLE', message: 'timeout', at: T0 + 100 });
    assert.equal(run.state, 'retrying');
    run.send({ type: 'WAKE', at: T0 + 2_100 });
    assert.equal(run.state, 'broadcasting');
    run.send(expired(T0 + 2_200, ['sig0']));
    assert.equal(run.state, 'replacing');
    rebuild(run, 1, T0 + 2_300);
    assert.equal(run.context.acceptedAt, T0 + 2_310, 'the rebuilt attempt is the first a node took');
    const fromRetrying = new Run(solanaInput());
    fromRetrying.done({ signedTransaction: 'bytes0', hash: 'sig0' });
    fromRetrying.done({ outcome: 'unanswered', code: 'RPC_UNAVAILABLE', message: 'timeout', at: T0 + 100 });
    fromRetrying.send(expired(T0 + 2_200, ['sig0']));
    assert.equal(fromRetrying.state, 'replacing');
  });

  it('a landed attempt confirms the payment, naming the winner', () => {
    const run = submitted();
    run.send(expired(T0 + 5_000, ['sig0']));
    rebuild(run, 1, T0 + 5_100);
    run.send({
      type: 'OBSERVED',
      observation: { status: 'included', final: true, success: true, blockNumber: '7', blockHash: 'bh' },
      at: T0 + 6_000,
      hash: 'sig1',
      candidates: ['sig0', 'sig1'],
    });
    assert.equal(run.state, 'confirmed');
    assert.equal(run.context.monitoring?.winningHash, 'sig1');
  });
});

describe('EVM auto-retry, the machine', () => {
  it("a nonce verdict computed before the newest replacement's hash reached the record is not applied", () => {
    const run = new Run(
      solanaInput({
        family: 'EVM',
        chainKey: 'evm:1',
        chainId: '1',
        network: null,
        payload: { family: 'EVM' },
        nonce: 3,
        lastValidBlockHeight: null,
        autoRetry: { ceiling: '1', expiresAt: T0 + 600_000, replacementDelayMs: 1_000 },
      }),
    );
    run.done({ signedTransaction: '0x0', hash: '0xa0' });
    run.done({ outcome: 'accepted', at: T0 + 100 });
    run.send({ type: 'WAKE', at: T0 + 1_100 });
    assert.equal(run.state, 'replacing');
    run.done({ kind: 'replace', payload: { family: 'EVM' }, at: T0 + 1_200 });
    run.done({ signedTransaction: '0x1', hash: '0xa1' });
    // The poller saw only 0xa0, dropped with a "foreign" winner that is in fact the new attempt.
    run.send({
      type: 'OBSERVED',
      observation: { status: 'dropped', reason: 'nonce_consumed', winningHash: '0xa1' },
      at: T0 + 1_300,
      candidates: ['0xa0'],
    });
    assert.equal(run.state, 'broadcastingReplacement');
    assert.equal(run.status, 'active');
  });
});
