/**
 * The decision log over a real SQLite database: rows written in their own transaction and batches of queued entries
 * read back as one log, numbered from one sequence, in the order taken.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, test } from 'node:test';
import { createStore, type Store } from './index.ts';
import { DECISION_BATCH_MAX_SPAN_MS, DecisionBatch, type LoggedDecision } from './policy-decisions-repo.ts';

const KEY = 'key-1';
const T = Date.UTC(2026, 10, 28, 12);

let store: Store;
beforeEach(() => {
  store = createStore(':memory:');
});
afterEach(() => store.close());

function decision(at: number, extra: Partial<LoggedDecision> = {}): LoggedDecision {
  return {
    apiKeyId: KEY,
    walletId: 'w-1',
    reference: `body:w-1:sign-message:${at}`,
    spendRef: `body:w-1:sign-message:${at}`,
    action: 'sign_message',
    effect: 'allow',
    reason: null,
    policyId: null,
    ruleId: null,
    holdId: null,
    request: JSON.stringify({ wallet: { id: 'w-1', type: 'EVM' }, action: 'sign_message', at }),
    trace: JSON.stringify({ policies: [{ policyId: 'p', version: 1 }], facts: {}, spend: [] }),
    decidedAt: at,
    ...extra,
  };
}

/** A batch of `rows` (of one key) as the decision point queues it. */
function batch(rows: LoggedDecision[]): DecisionBatch {
  const b = new DecisionBatch(rows[0]!.apiKeyId, 64);
  for (const r of rows) b.add(r);
  return b;
}

const write = <R>(fn: () => R) => store.writer.write(fn);
const all = () => store.policyDecisions.between(KEY, 0, Number.MAX_SAFE_INTEGER, 1000);

test('a batch on an empty log is numbered from 1, and rows written after it continue the sequence', async () => {
  const first = await write(() => store.policyDecisions.appendBatch(batch([decision(T), decision(T + 1)])));
  assert.equal(first, 1);
  const row = await write(() => store.policyDecisions.append(decision(T + 2, { effect: 'deny', reason: 'x' })));
  assert.equal(row, 3);
  const next = await write(() => store.policyDecisions.appendBatch(batch([decision(T + 3)])));
  assert.equal(next, 4);
  assert.equal(await write(() => store.policyDecisions.append(decision(T + 4))), 5);
  assert.deepEqual(
    all().map((r) => [r.seq, r.decidedAt]),
    [
      [1, T],
      [2, T + 1],
      [3, T + 2],
      [4, T + 3],
      [5, T + 4],
    ],
  );
});

test('an entry reads back as the row it was: escaped text, its own spend reference, its reason and rule', async () => {
  const hostile = decision(T, {
    reference: 'key:"quoted"\\ \u0001 \ud800 ✓',
    spendRef: 'key:"quoted"\\ \u0001 \ud800 ✓#7',
    effect: 'deny',
    reason: 'denied-by-rule',
    policyId: 'p-"1"',
    ruleId: 'r\n1',
    request: JSON.stringify({ wallet: { id: 'w-1', type: 'EVM' }, chain: { facts: { to: '0xab' } }, at: T }),
    trace: JSON.stringify({ policies: [], facts: { value: '12' }, spend: [] }),
  });
  const plain = decision(T + 1);
  await write(() => store.policyDecisions.appendBatch(batch([hostile, plain])));
  const [a, b] = all();
  const asRow = (d: LoggedDecision, seq: number) => ({
    ...d,
    seq,
    request: JSON.parse(d.request),
    trace: JSON.parse(d.trace),
  });
  assert.deepEqual(a, asRow(hostile, 1));
  assert.deepEqual(b, asRow(plain, 2));
});

test('rows and entries are read as one log: by time then number, [from, to), after a number, at most a limit', async () => {
  // Batches as the queue writes them (each spans its flush), rows of in-write decisions among them.
  await write(() => store.policyDecisions.appendBatch(batch([decision(T), decision(T + 20), decision(T + 40)])));
  await write(() => store.policyDecisions.append(decision(T + 30, { effect: 'hold' })));
  await write(() => store.policyDecisions.appendBatch(batch([decision(T + 50), decision(T + 30)])));
  await write(() => store.policyDecisions.append(decision(T + 45)));
  const order = (rows: Array<{ decidedAt: number; seq: number }>) => rows.map((r) => `${r.decidedAt - T}#${r.seq}`);
  assert.deepEqual(order(all()), ['0#1', '20#2', '30#4', '30#6', '40#3', '45#7', '50#5']);
  const log = store.policyDecisions;
  assert.deepEqual(order(log.between(KEY, T + 20, T + 45, 100)), ['20#2', '30#4', '30#6', '40#3']);
  assert.deepEqual(order(log.between(KEY, T, T + 100, 3)), ['0#1', '20#2', '30#4']);
  assert.deepEqual(order(log.between(KEY, T, T + 100, 2, 2)), ['30#4', '30#6']);
  assert.deepEqual(order(log.between(KEY, T + 41, T + 100, 100)), ['45#7', '50#5']);
  assert.deepEqual(log.between('another-key', 0, Number.MAX_SAFE_INTEGER, 100), []);
});

test('the limit holds across many batches, and a batch that began before `from` gives its entries inside it', async () => {
  // 30 batches of 10 entries, one every 10 ms, each overlapping the next by 5 ms.
  for (let b = 0; b < 30; b++) {
    const rows = Array.from({ length: 10 }, (_, i) => decision(T + b * 10 + (i % 2 === 0 ? i : i + 5)));
    await write(() => store.policyDecisions.appendBatch(batch(rows)));
  }
  const everything = all();
  assert.equal(everything.length, 300);
  const expected = (from: number, to: number, limit: number) =>
    everything.filter((r) => r.decidedAt >= from && r.decidedAt < to).slice(0, limit);
  for (const [from, to, limit] of [
    [T + 3, T + 200, 25],
    [T + 95, T + 96, 10],
    [T + 100, T + 400, 1000],
    [T - DECISION_BATCH_MAX_SPAN_MS, T + 1, 5],
  ] as const) {
    assert.deepEqual(store.policyDecisions.between(KEY, from, to, limit), expected(from, to, limit));
  }
  // Sorted by time then number.
  for (let i = 1; i < everything.length; i++) {
    const [a, b] = [everything[i - 1]!, everything[i]!];
    assert.ok(a.decidedAt < b.decidedAt || (a.decidedAt === b.decidedAt && a.seq < b.seq));
  }
});

test('a batch over the longest span, an empty one, another key and an entry of a hold are refused; nothing is written', async () => {
  const b = batch([decision(T)]);
  assert.throws(() => b.add(decision(T + DECISION_BATCH_MAX_SPAN_MS + 1)), RangeError);
  assert.throws(() => b.add(decision(T - DECISION_BATCH_MAX_SPAN_MS - 1)), RangeError);
  assert.throws(() => b.add(decision(T, { apiKeyId: 'key-2' })), TypeError);
  assert.throws(() => b.add(decision(T, { holdId: 'case-1' })), TypeError);
  assert.equal(b.count, 1);
  await assert.rejects(
    write(() => store.policyDecisions.appendBatch(new DecisionBatch(KEY))),
    RangeError,
  );
  assert.deepEqual(all(), []);
  // The sequence did not move: the next batch starts at 1, and holds only what was added.
  assert.equal(await write(() => store.policyDecisions.appendBatch(b)), 1);
  assert.deepEqual(
    all().map((r) => r.decidedAt),
    [T],
  );
});

test('a batch grows past its first buffer, and keeps text that is not ASCII as it was', async () => {
  const rows = Array.from({ length: 300 }, (_, i) =>
    decision(T + i, { reference: `key:ünïcödé ✓ 𝄞 ${i}`, spendRef: `key:ünïcödé ✓ 𝄞 ${i}` }),
  );
  const b = batch(rows);
  assert.equal(b.count, 300);
  await write(() => store.policyDecisions.appendBatch(b));
  assert.deepEqual(
    all().map((r) => r.reference),
    rows.map((r) => r.reference),
  );
});
