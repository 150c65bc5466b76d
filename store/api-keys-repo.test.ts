import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createStore } from './index.ts';

test('get: a key of a live project, with its rotation; none for an unknown key or a deleted project', async () => {
  const store = createStore(':memory:');
  store.projects.insert({ id: 'p1', name: 'p', plan: 'free', createdAt: 'now' });
  store.projects.insert({ id: 'p2', name: 'q', plan: 'free', createdAt: 'now' });
  store.apiKeys.insert({ id: 'k1', projectId: 'p1', environment: 'production', secretHash: 'h1', createdAt: 't0' });
  store.apiKeys.insert({ id: 'k2', projectId: 'p2', environment: 'development', secretHash: 'h2', createdAt: 't0' });
  assert.deepEqual(store.apiKeys.get('k1'), {
    id: 'k1',
    projectId: 'p1',
    environment: 'production',
    secretHash: 'h1',
    createdAt: 't0',
    rotatedAt: null,
  });
  assert.equal(store.apiKeys.get('k3'), undefined);
  await store.writer.write(() => store.apiKeys.rotate('k1', 'h1b', 't1'));
  assert.equal(store.apiKeys.get('k1')?.rotatedAt, 't1');
  assert.equal(store.apiKeys.get('k1')?.secretHash, 'h1b');
  assert.equal(store.apiKeys.get('k2')?.projectId, 'p2', 'each key is its own');
  await store.writer.write(() => store.projects.markDeleted('p2', 't2'));
  assert.equal(store.apiKeys.get('k2'), undefined, "a deleted project's key is not a live key");
  assert.equal(store.apiKeys.get('k1')?.id, 'k1');
  store.close();
});
