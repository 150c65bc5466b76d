import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createStore } from './index.ts';

function storeWithWallet() {
  const store = createStore(':memory:');
  store.projects.insert({ id: 'p1', name: 'p', plan: 'free', createdAt: 'now' });
  store.wallets.insert({
    id: 'w1',
    projectId: 'p1',
    type: 'EVM',
    scheme: 'DKLS',
    status: 'ready',
    address: '0xabc',
    publicKey: '04',
    userIdentifier: 'u',
    userIdentifierType: 'CUSTOM_ID',
    createdAt: 'now',
    updatedAt: 'now',
    seq: store.wallets.nextSeq(),
  });
  return store;
}

test('cached reads see every write made through the repository', async () => {
  const store = storeWithWallet();
  assert.equal(store.wallets.get('p1', 'w1')?.claimedAt, null);
  assert.equal(store.wallets.get('p2', 'w1'), undefined, "another project's wallet does not exist");
  await store.writer.write(() => store.wallets.claim('w1', { claimedAt: 't1', claimedByUserId: 'u1' }));
  assert.equal(store.wallets.get('p1', 'w1')?.claimedAt, 't1');
  await store.writer.write(() => store.wallets.markShareMigrated('w1', 't2'));
  assert.equal(store.wallets.getAny('w1')?.shareMigratedAt, 't2');
  await store.writer.write(() => store.wallets.updateIdentity('p1', 'w1', { userIdentifier: 'v', updatedAt: 't3' }));
  assert.equal(store.wallets.get('p1', 'w1')?.userIdentifier, 'v');
  await store.writer.write(() => store.wallets.delete('w1'));
  assert.equal(store.wallets.get('p1', 'w1'), undefined);
  store.close();
});

test('a write rolled back leaves no trace in the cache, even when read inside its transaction', async () => {
  const store = storeWithWallet();
  assert.equal(store.wallets.get('p1', 'w1')?.claimedAt, null);
  await assert.rejects(
    store.writer.write(() => {
      store.wallets.claim('w1', { claimedAt: 't1', claimedByUserId: 'u1' });
      assert.equal(store.wallets.get('p1', 'w1')?.claimedAt, 't1', 'the transaction sees its own write');
      throw new Error('roll back');
    }),
  );
  assert.equal(store.wallets.get('p1', 'w1')?.claimedAt, null);
  store.close();
});
