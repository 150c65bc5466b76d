/** Example tests of the spend ledger (store/spend-repo.ts); its properties are in spend-repo.property.test.ts. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createStore } from './index.ts';
import type { SpendWindowKey } from './spend-repo.ts';

const T0 = Date.UTC(2026, 0, 1);

test('a reference released on one wallet and reserved again on another counts on the second wallet only', async () => {
  // Found by spend-repo.property.test.ts: the entry kept its first wallet while the stored windows of the second were
  // shifted, so the ledger and its window totals disagreed (and a later release subtracted from the first wallet).
  const store = createStore(':memory:');
  const window = (walletId: string): SpendWindowKey => ({
    apiKeyId: 'k',
    walletId,
    network: 'eip155:1',
    asset: 'native',
    windowMs: 86_400_000,
    windowStart: T0,
  });
  const reserve = (walletId: string, amount: bigint) =>
    store.writer.write(() =>
      store.spend.reserve('k', walletId, 'tx-1', 'eip155:1', [{ asset: 'native', amount }], T0 + 10),
    );
  // w-2 counts 5 of another reference; both windows are stored (a decision read them).
  await store.writer.write(() =>
    store.spend.reserve('k', 'w-2', 'tx-0', 'eip155:1', [{ asset: 'native', amount: 5n }], T0 + 1),
  );
  for (const w of ['w-1', 'w-2'])
    await store.writer.write(() => store.spend.windowTotal(window(w), { materialize: true }));
  await reserve('w-2', 1n);
  await store.writer.write(() => store.spend.release('k', 'tx-1', T0 + 20));
  await reserve('w-1', 7n);
  const stored = (w: string) => store.spend.windowTotal(window(w), { materialize: false });
  const fromLedger = (w: string) => {
    store.sqlite.prepare('delete from policy_spend_windows').run();
    return store.spend.windowTotal(window(w), { materialize: false });
  };
  assert.equal(stored('w-1'), 7n);
  assert.equal(stored('w-2'), 5n);
  // Released again: w-1 back to 0, w-2 keeps what tx-0 counted.
  await store.writer.write(() => store.spend.release('k', 'tx-1', T0 + 30));
  assert.equal(stored('w-1'), 0n);
  assert.equal(stored('w-2'), 5n);
  assert.equal(fromLedger('w-1'), 0n);
  assert.equal(fromLedger('w-2'), 5n);
  store.close();
});
