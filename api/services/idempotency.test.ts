import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { createStore } from '../../store/index.ts';
import { ANSWER_CACHE_MS, type Begun, canonicalJson, createIdempotency, fingerprintOf } from './idempotency.ts';

const name = (over: Partial<{ key: string; operation: string; walletId: string | null; body: unknown }> = {}) => ({
  projectId: 'p1',
  key: over.key ?? 'k',
  operation: over.operation ?? 'transfer',
  walletId: over.walletId === undefined ? 'w1' : over.walletId,
  fingerprint: fingerprintOf(over.body ?? { to: 'a', value: '1' }),
});
/** The claim of a request told to run (or resume). */
function claimOf(b: Begun) {
  assert.notEqual(b.kind, 'replay');
  return (b as Exclude<Begun, { kind: 'replay' }>).claim;
}
const answer = { statusCode: 200, body: '{"ok":true}', headers: { 'x-transaction-id': 't1' } };

function setup(opts: { waitMs?: number } = {}) {
  const store = createStore(':memory:');
  const clock = { now: 1_000_000 };
  const idem = createIdempotency({ store, now: () => clock.now, ...opts });
  return { store, idem, clock };
}

test('canonical JSON sorts keys at every level and keeps arrays in order', () => {
  assert.equal(
    canonicalJson({ b: 1, a: { d: [2, { y: 1, x: 0 }], c: null } }),
    '{"a":{"c":null,"d":[2,{"x":0,"y":1}]},"b":1}',
  );
  assert.equal(fingerprintOf({ a: 1, b: 2 }), fingerprintOf({ b: 2, a: 1 }));
  assert.notEqual(fingerprintOf({ a: 1 }), fingerprintOf({ a: '1' }));
  assert.equal(canonicalJson(undefined), 'null');
});

test('canonical JSON of a body is the sorted JSON.stringify text, whatever its strings hold (fingerprints unchanged)', () => {
  // The definition the service has always hashed: stored fingerprints of bodies sent before stay equal.
  const reference = (value: unknown): string => {
    if (Array.isArray(value)) return `[${value.map(reference).join(',')}]`;
    if (value !== null && typeof value === 'object') {
      const o = value as Record<string, unknown>;
      return `{${Object.keys(o)
        .sort()
        .map((k) => `${JSON.stringify(k)}:${reference(o[k])}`)
        .join(',')}}`;
    }
    return JSON.stringify(value) ?? 'null';
  };
  const units = fc.array(fc.integer({ min: 0, max: 0xffff }), { maxLength: 10 }).map((u) => String.fromCharCode(...u));
  const body = fc.letrec((tie) => ({
    value: fc.oneof(
      { depthSize: 'small' },
      fc.oneof(fc.string(), units, fc.constantFrom('"', '\\', '\n', '\u0000', '\ud800', '😀')),
      fc.double(),
      fc.boolean(),
      fc.constant(null),
      fc.array(tie('value'), { maxLength: 3 }),
      fc.dictionary(fc.oneof(fc.string(), units), tie('value'), { maxKeys: 3 }),
    ),
  })).value;
  fc.assert(
    fc.property(body, (b) => assert.equal(canonicalJson(b), reference(b))),
    { numRuns: 2000 },
  );
});

test('a stored answer is replayed; another route, wallet or body is a conflict naming what differs', async () => {
  const { idem } = setup();
  const begun = await idem.begin(name());
  assert.equal(begun.kind, 'run');
  idem.settle(claimOf(begun), answer);
  // The duplicate waits for the answer to be durable, then replays it.
  const replay = await idem.begin(name());
  assert.deepEqual(replay, { kind: 'replay', answer });
  for (const [over, differs] of [
    [{ operation: 'signMessage' }, 'operation'],
    [{ walletId: 'w2' }, 'walletId'],
    [{ body: { to: 'a', value: '2' } }, 'body'],
  ] as const) {
    await assert.rejects(idem.begin(name(over)), (err: { code?: string; details?: { differs?: string } }) => {
      assert.equal(err.code, 'IDEMPOTENCY_CONFLICT');
      assert.equal(err.details?.differs, differs);
      return true;
    });
  }
});

test('a duplicate waits for the request holding the key; a conflicting one does not wait', async () => {
  const { idem } = setup();
  const first = await idem.begin(name());
  assert.equal(first.kind, 'run');
  let settled = false;
  const waiting = idem.begin(name()).then((b) => {
    assert.ok(settled, 'answered only after the first settled');
    return b;
  });
  await assert.rejects(idem.begin(name({ body: { other: true } })), { code: 'IDEMPOTENCY_CONFLICT' });
  await new Promise((r) => setTimeout(r, 20));
  settled = true;
  idem.settle(claimOf(first), answer);
  assert.deepEqual(await waiting, { kind: 'replay', answer });
  assert.equal(idem.inFlight(), 0);
});

test('an answer not kept lets the waiting duplicate run itself', async () => {
  const { idem } = setup();
  const first = await idem.begin(name());
  const waiting = idem.begin(name());
  idem.settle(claimOf(first), null);
  assert.equal((await waiting).kind, 'run');
});

test('a duplicate that waited too long is answered the retryable IDEMPOTENCY_KEY_IN_USE', async () => {
  const { idem } = setup({ waitMs: 30 });
  const first = await idem.begin(name());
  await assert.rejects(idem.begin(name()), { code: 'IDEMPOTENCY_KEY_IN_USE' });
  idem.settle(claimOf(first), answer);
});

test('after 24 hours the key names something new, and the sweep deletes it', async () => {
  const { idem, store, clock } = setup();
  const first = await idem.begin(name());
  idem.settle(claimOf(first), answer);
  await idem.begin(name()); // waits for the durable answer
  clock.now += ANSWER_CACHE_MS;
  const again = await idem.begin(name({ body: { something: 'else' } }));
  assert.equal(again.kind, 'run');
  idem.settle(claimOf(again), null);
  assert.equal(store.idempotency.purgeExpired(clock.now, 10), 1);
  assert.equal(store.idempotency.find('p1', 'k', 0), undefined);
});

test("a payment's key bound without an answer resumes from its record", async () => {
  const { idem, store, clock } = setup();
  const claim = { ...name(), createdAt: clock.now, expiresAt: clock.now + ANSWER_CACHE_MS, transactionId: null };
  await store.writer.write(() => store.idempotency.bind(claim, 'tx-1'));
  const begun = await idem.begin(name());
  assert.equal(begun.kind, 'resume');
  assert.equal((begun as { claim: { transactionId: string } }).claim.transactionId, 'tx-1');
  // A second bind of a live key is refused (the payment's transaction then rolls back).
  assert.equal(await store.writer.write(() => store.idempotency.bind(claim, 'tx-2')), false);
});
