import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { PolicyDocument } from '../../actors/signing/policy/policy-document.ts';
import { ServiceError } from '../../chains/domain/errors.ts';
import { createStore } from '../../store/index.ts';
import type { PolicyCases } from '../../store/policies-repo.ts';
import { createPolicyService, type PolicyCaller } from './policies.ts';

const doc = (cap: string, networks = ['eip155:1']): PolicyDocument => ({
  name: 'p',
  layer: 'guardrail',
  scope: { walletType: 'EVM', networks },
  rules: [{ id: 'cap', effect: 'deny', actions: ['transfer'], conditions: [{ fact: 'value', op: 'gt', value: cap }] }],
});

/** A development key A with permissions on, and an approvals store stand-in with pending cases per policy. */
async function setup() {
  const store = createStore(':memory:');
  const at = '2026-01-01T00:00:00.000Z';
  await store.writer.write(() => {
    store.projects.insert({ id: 'P', name: 'P', plan: 'free', createdAt: at });
    store.apiKeys.insert({ id: 'A', projectId: 'P', environment: 'development', secretHash: 'h', createdAt: at });
    store.policies.setPermissions('A', { enabled: true, approvals: true, productionReview: null }, 1);
  });
  const pending = new Map<string, string[]>();
  const invalidated: string[] = [];
  const cases: PolicyCases = {
    pendingCasesOf: (id) => pending.get(id) ?? [],
    invalidateCases: (id) => {
      invalidated.push(id);
      pending.delete(id);
    },
  };
  const caller: PolicyCaller = { keyId: 'A', projectId: 'P', environment: 'development' };
  return { store, pending, invalidated, caller, policies: createPolicyService({ store, cases }) };
}

const code = (err: unknown) => (err instanceof ServiceError ? { code: err.code, details: err.details } : err);

test('a write over pending cases is 409 APPROVAL_CASES_AFFECTED naming them; force invalidates them', async () => {
  const { store, pending, invalidated, caller, policies } = await setup();
  const p = await policies.create(caller, doc('1'));
  await policies.activate(caller, p.id, { expectedRevision: 1 });
  pending.set(p.id, ['case-1', 'case-2']);
  for (const attempt of [
    () => policies.replace(caller, p.id, { policy: doc('2'), expectedRevision: 2 }),
    () => policies.deactivate(caller, p.id, { expectedRevision: 2 }),
  ]) {
    await assert.rejects(attempt(), (err) => {
      assert.deepEqual(code(err), {
        code: 'APPROVAL_CASES_AFFECTED',
        details: {
          affectedCaseIds: ['case-1', 'case-2'],
          errors: [{ code: 'APPROVAL_CASES_AFFECTED', path: '/force', message: (err as Error).message }],
        },
      });
      return true;
    });
  }
  assert.equal(policies.get(caller, p.id).revision, 2, 'nothing changed');
  assert.deepEqual(invalidated, []);
  const replaced = await policies.replace(caller, p.id, { policy: doc('2'), expectedRevision: 2, force: true });
  assert.equal(replaced.version, 2);
  assert.deepEqual(invalidated, [p.id]);
  // Activating another policy over it ends its cases too.
  pending.set(p.id, ['case-3']);
  const q = await policies.create(caller, doc('3'));
  await assert.rejects(policies.activate(caller, q.id, { expectedRevision: 1 }), /force/);
  const merged = await policies.activate(caller, q.id, { expectedRevision: 1, force: true });
  assert.equal(merged.id, p.id);
  assert.equal(merged.version, 3);
  assert.deepEqual(invalidated, [p.id, p.id]);
  // The decision point sees the new version at once.
  assert.equal(store.policies.activeGuardrails('A')[0]?.version, 3);
  store.close();
});

test('a draft has no cases: replacing it never asks for force', async () => {
  const { store, pending, caller, policies } = await setup();
  const p = await policies.create(caller, doc('1'));
  pending.set(p.id, ['stale']);
  const r = await policies.replace(caller, p.id, { policy: doc('2'), expectedRevision: 1 });
  assert.equal(r.version, 2);
  store.close();
});
