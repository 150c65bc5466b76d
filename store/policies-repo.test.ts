import assert from 'node:assert/strict';
import { test } from 'node:test';
import { evaluatePolicies } from '../actors/signing/policy/evaluate-policies.ts';
import type { PolicyDocument } from '../actors/signing/policy/policy-document.ts';
import { policySourceOf } from '../actors/signing/policy/policy-source.ts';
import { NO_CHAIN_FACTS } from '../chains/domain/policies.ts';
import { createStore } from './index.ts';
import { selectorOf } from './policies-repo.ts';

const at = '2026-01-01T00:00:00.000Z';

const doc = (name: string, networks?: string[], cap = '10'): PolicyDocument => ({
  name,
  layer: 'guardrail',
  scope: { walletType: 'EVM', ...(networks ? { networks } : {}) },
  rules: [{ id: 'cap', effect: 'deny', actions: ['transfer'], conditions: [{ fact: 'value', op: 'gt', value: cap }] }],
});

/** A store with project P and its development key A, production key B; and project Q with key C. */
async function setup() {
  const store = createStore(':memory:');
  await store.writer.write(() => {
    for (const p of ['P', 'Q']) store.projects.insert({ id: p, name: p, plan: 'free', createdAt: at });
    for (const [id, projectId, environment] of [
      ['A', 'P', 'development'],
      ['B', 'P', 'production'],
      ['C', 'Q', 'development'],
    ] as const) {
      store.apiKeys.insert({ id, projectId, environment, secretHash: `h${id}`, createdAt: at });
    }
  });
  return store;
}

test('the selector is the network set sorted, whatever the order; no networks is the empty selector', () => {
  assert.equal(selectorOf(['eip155:8453', 'eip155:1']), selectorOf(['eip155:1', 'eip155:8453']));
  assert.equal(selectorOf(['eip155:8453', 'eip155:1']), 'eip155:1,eip155:8453');
  assert.equal(selectorOf(undefined), '');
});

test('permissions: off until set, then what was set; cached, and dropped by the write', async () => {
  const store = await setup();
  const repo = store.policies;
  assert.deepEqual(repo.permissions('A'), { enabled: false, approvals: false });
  assert.equal(repo.permissionsRecord('A'), undefined);
  await store.writer.write(() =>
    repo.setPermissions('A', { enabled: true, approvals: true, productionReview: null }, 1),
  );
  assert.deepEqual(repo.permissions('A'), { enabled: true, approvals: true });
  assert.equal(repo.permissions('A'), repo.permissions('A'), 'served from the cache');
  await store.writer.write(() =>
    repo.setPermissions('A', { enabled: false, approvals: true, productionReview: null }, 2),
  );
  assert.deepEqual(repo.permissions('A'), { enabled: false, approvals: true });
  store.close();
});

test('activeGuardrails: oldest first, one parsed document object per version, rebuilt after each write', async () => {
  const store = await setup();
  const repo = store.policies;
  const [p1, p2, draft] = await store.writer.write(() => [
    repo.insert({
      id: 'p1',
      apiKeyId: 'A',
      projectId: 'P',
      document: doc('one', ['eip155:1']),
      status: 'active',
      at: 200,
    }),
    repo.insert({
      id: 'p2',
      apiKeyId: 'A',
      projectId: 'P',
      document: doc('two', ['eip155:2']),
      status: 'active',
      at: 100,
    }),
    repo.insert({ id: 'p3', apiKeyId: 'A', projectId: 'P', document: doc('three'), status: 'draft', at: 300 }),
  ]);
  assert.ok(p1 && p2 && draft);
  const first = repo.activeGuardrails('A');
  assert.deepEqual(
    first.map((p) => [p.id, p.version, p.createdAt]),
    [
      ['p2', 1, 100],
      ['p1', 1, 200],
    ],
  );
  assert.equal(repo.activeGuardrails('A'), first, 'the same list until a write');
  assert.ok(Object.isFrozen(first[0]!.document), 'documents are frozen: evaluation compiles them once per object');
  assert.deepEqual(repo.activeGuardrails('C'), []);

  // A new version: the list is rebuilt, the untouched policy keeps its document object, the new one is the new text.
  await store.writer.write(() => repo.newVersion('p1', doc('one', ['eip155:1'], '99'), 400));
  const second = repo.activeGuardrails('A');
  assert.notEqual(second, first);
  assert.equal(second[0]!.document, first[0]!.document);
  assert.equal(second[1]!.version, 2);
  const cond = policySourceOf(repo).activeGuardrails('A')[1]!.document.rules[0]!.conditions![0] as { value: string };
  assert.equal(cond.value, '99');

  // Activation, deactivation and deletion each show at once.
  await store.writer.write(() => repo.setStatus('p3', 'active', 500));
  assert.deepEqual(
    repo.activeGuardrails('A').map((p) => p.id),
    ['p2', 'p1', 'p3'],
  );
  await store.writer.write(() => repo.setStatus('p2', 'inactive', 600));
  assert.deepEqual(
    repo.activeGuardrails('A').map((p) => p.id),
    ['p1', 'p3'],
  );
  await store.writer.write(() => {
    repo.setStatus('p3', 'inactive', 700);
    repo.softDelete('p3', 700);
  });
  assert.deepEqual(
    repo.activeGuardrails('A').map((p) => p.id),
    ['p1'],
  );
  assert.equal(repo.get('p3'), undefined, 'deleted: gone from reads');
  assert.equal(repo.document('p3', 1)?.name, 'three', 'its versions stay readable');
  assert.equal((repo.document('p1', 1) as PolicyDocument | undefined)?.rules[0]?.id, 'cap');
  store.close();
});

test('a write that rolls back leaves the cache to be rebuilt from what committed', async () => {
  const store = await setup();
  const repo = store.policies;
  await store.writer.write(() =>
    repo.insert({ id: 'p1', apiKeyId: 'A', projectId: 'P', document: doc('one'), status: 'active', at: 1 }),
  );
  assert.equal(repo.activeGuardrails('A').length, 1);
  await assert.rejects(
    store.writer.write(() => {
      repo.setStatus('p1', 'inactive', 2);
      // Read inside the transaction: it sees the uncommitted change and caches it.
      assert.equal(repo.activeGuardrails('A').length, 0);
      throw new Error('rolled back');
    }),
    /rolled back/,
  );
  // The service drops the key's entries once a write settles (api/services/policies.ts `write`).
  repo.invalidate('A');
  assert.equal(repo.activeGuardrails('A').length, 1);
  assert.equal(repo.get('p1')?.status, 'active');
  store.close();
});

test('one active policy per key, wallet type and selector: the database refuses a second', async () => {
  const store = await setup();
  const repo = store.policies;
  await store.writer.write(() =>
    repo.insert({
      id: 'p1',
      apiKeyId: 'A',
      projectId: 'P',
      document: doc('one', ['eip155:1', 'eip155:2']),
      status: 'active',
      at: 1,
    }),
  );
  await assert.rejects(
    store.writer.write(() =>
      repo.insert({
        id: 'p2',
        apiKeyId: 'A',
        projectId: 'P',
        document: doc('two', ['eip155:2', 'eip155:1']),
        status: 'active',
        at: 2,
      }),
    ),
  );
  // Another key, a draft, another selector: fine.
  await store.writer.write(() => {
    repo.insert({
      id: 'p3',
      apiKeyId: 'C',
      projectId: 'Q',
      document: doc('c', ['eip155:1', 'eip155:2']),
      status: 'active',
      at: 3,
    });
    repo.insert({
      id: 'p4',
      apiKeyId: 'A',
      projectId: 'P',
      document: doc('d', ['eip155:2', 'eip155:1']),
      status: 'draft',
      at: 4,
    });
    repo.insert({ id: 'p5', apiKeyId: 'A', projectId: 'P', document: doc('e'), status: 'active', at: 5 });
  });
  assert.equal(repo.activeBySelector('A', 'EVM', 'eip155:1,eip155:2')?.id, 'p1');
  assert.equal(repo.activeBySelector('A', 'EVM', '')?.id, 'p5');
  assert.equal(repo.activeBySelector('A', 'SOLANA', '')?.id, undefined);
  store.close();
});

test('lists page by position; versions newest first; developmentActive reads only development keys', async () => {
  const store = await setup();
  const repo = store.policies;
  await store.writer.write(() => {
    for (let i = 0; i < 5; i++) {
      repo.insert({
        id: `a${i}`,
        apiKeyId: 'A',
        projectId: 'P',
        document: doc(`a${i}`, [`eip155:${i + 1}`]),
        status: i < 2 ? 'active' : 'draft',
        at: i,
      });
    }
    repo.insert({ id: 'b0', apiKeyId: 'B', projectId: 'P', document: doc('b0'), status: 'active', at: 9 });
    repo.newVersion('a0', doc('a0', ['eip155:1'], '5'), 10);
  });
  const page1 = repo.list('A', { limit: 3 });
  const page2 = repo.list('A', { after: page1.at(-1)!.seq, limit: 3 });
  assert.deepEqual(
    [...page1, ...page2].map((p) => p.id),
    ['a0', 'a1', 'a2', 'a3', 'a4'],
  );
  assert.deepEqual(
    repo.list('A', { limit: 10, status: 'active' }).map((p) => p.id),
    ['a0', 'a1'],
  );
  assert.deepEqual(
    repo.versions('a0', { limit: 10 }).map((v) => v.version),
    [2, 1],
  );
  assert.deepEqual(
    repo.versions('a0', { before: 2, limit: 10 }).map((v) => v.version),
    [1],
  );
  assert.deepEqual(
    repo.developmentActive('P').map((p) => p.id),
    ['a0', 'a1'],
  );
  store.close();
});

test('activeGuardrails feeds the engine without parsing per request (20 policies x 10 rules)', async () => {
  const store = await setup();
  const repo = store.policies;
  const rules = Array.from({ length: 10 }, (_, i) => ({
    id: `r${i}`,
    effect: 'deny' as const,
    actions: ['sign_message' as const],
    conditions: [{ fact: 'wallet.id' as const, op: 'eq' as const, value: `other-${i}` }],
  }));
  await store.writer.write(() => {
    for (let i = 0; i < 20; i++) {
      const document: PolicyDocument = {
        name: `p${i}`,
        layer: 'guardrail',
        scope: { walletType: 'EVM', networks: [`eip155:${i + 1}`] },
        rules,
      };
      repo.insert({ id: `p${i}`, apiKeyId: 'A', projectId: 'P', document, status: 'active', at: i });
    }
  });
  const source = policySourceOf(repo);
  const parse = JSON.parse;
  let parses = 0;
  JSON.parse = ((...args: Parameters<typeof JSON.parse>) => {
    parses++;
    return parse(...args);
  }) as typeof JSON.parse;
  try {
    source.activeGuardrails('A');
    const afterFirst = parses;
    for (let i = 0; i < 100; i++) {
      const d = evaluatePolicies(
        source.activeGuardrails('A'),
        {
          wallet: { id: 'w', type: 'EVM' },
          action: 'sign_message',
          rawSignature: false,
          chain: NO_CHAIN_FACTS,
          at: 0,
        },
        () => 0n,
      );
      assert.equal(d.effect, 'allow');
    }
    assert.equal(parses, afterFirst, 'no JSON.parse once the list is built');
  } finally {
    JSON.parse = parse;
  }
  store.close();
});
