/**
 * Signing policies over HTTP: the service with its decision point reading policies from in-memory ports (the policy
 * and approvals stores are wired by the lead; these exercise the decision point, the ledger, the log, usage and
 * simulate through the routes that exist). No chain is needed: sign-only requests.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { ActivePolicy } from '../actors/signing/policy/evaluate-policies.ts';
import type { HoldResolver, PolicySource } from '../actors/signing/policy/policy-ports.ts';
import type { PolicyReader, StoredPolicy } from '../actors/signing/policy/policy-reader.ts';
import { validatePolicy } from '../actors/signing/policy/validate-policy.ts';
import { LOG_FLUSH_MS } from '../actors/signing/signature-policy.ts';
import { startTestService, type TestService } from './helpers/service.ts';

const TO = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';
const tx = (nonce: number, value: bigint, chainId = 31337) => ({
  to: TO,
  value: value.toString(),
  chainId,
  type: 2,
  nonce,
  gasLimit: '21000',
  maxFeePerGas: '30000000000',
  maxPriorityFeePerGas: '1000000000',
});

/** Policies of every key, by id: the switch is on for the keys in `on`. */
class Policies implements PolicySource, PolicyReader {
  on = new Set<string>();
  byKey = new Map<string, StoredPolicy[]>();
  permissions(apiKeyId: string) {
    return { enabled: this.on.has(apiKeyId), approvals: false };
  }
  activeGuardrails(apiKeyId: string): ActivePolicy[] {
    return (this.byKey.get(apiKeyId) ?? []).filter((p) => p.status === 'active');
  }
  policyAt(apiKeyId: string, id: string) {
    return (this.byKey.get(apiKeyId) ?? []).find((p) => p.id === id);
  }
  versionOf(apiKeyId: string, id: string, version: number) {
    const p = this.policyAt(apiKeyId, id);
    return p?.version === version ? p : undefined;
  }
  set(apiKeyId: string, id: string, doc: Record<string, unknown>, status: 'active' | 'draft' = 'active'): void {
    const checked = validatePolicy({ name: id, layer: 'guardrail', ...doc });
    assert.ok(checked.valid, JSON.stringify(!checked.valid && checked.errors));
    const list = (this.byKey.get(apiKeyId) ?? []).filter((p) => p.id !== id);
    list.push({ id, status, version: 1, createdAt: list.length + 1, document: checked.policy });
    this.byKey.set(apiKeyId, list);
  }
}

const holds: HoldResolver = {
  checkReference: () => undefined,
  resolve: () => ({ kind: 'required', reviewId: 'rev-http', status: 'pending', expiresAt: '2030-01-01T00:00:00.000Z' }),
};

const policies = new Policies();
let svc: TestService;
let partner: { keyId: string; secret: string };
let wallet: string;

before(async () => {
  svc = await startTestService({}, { api: { policies: { source: policies, holds, reader: policies } } });
  partner = await svc.newPartner();
  const r = await svc.v1(partner.secret, 'POST', '/wallets', {
    type: 'EVM',
    userIdentifier: 'policies@example.com',
    userIdentifierType: 'EMAIL',
  });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  wallet = r.body.id;
});
after(() => svc.stop());

const sign = (body: unknown, headers: Record<string, string> = {}) =>
  svc.v1(partner.secret, 'POST', `/wallets/${wallet}/sign-transaction`, body, headers);

describe('signing policies over HTTP', () => {
  test('permissions off: signs as before; usage of an unknown policy is a 404', async () => {
    const r = await sign({ transaction: tx(1, 5n) });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const u = await svc.v1(partner.secret, 'GET', `/permissions-v2/wallets/${wallet}/policies/nope/usage`);
    assert.equal(u.status, 404);
    assert.equal(u.body.code, 'POLICY_NOT_FOUND');
  });

  test('on with no policy: sign-raw refused with raw-signature-not-allowed; sign-message allowed', async () => {
    policies.on.add(partner.keyId);
    const raw = await svc.v1(partner.secret, 'POST', `/wallets/${wallet}/sign-raw`, { data: 'ab'.repeat(32) });
    assert.equal(raw.status, 403);
    assert.equal(raw.body.code, 'POLICY_DENIED');
    assert.deepEqual(raw.body.deniedBy, [{ reason: 'raw-signature-not-allowed' }]);
    assert.equal(raw.body.signature, undefined);
    const message = await svc.v1(partner.secret, 'POST', `/wallets/${wallet}/sign-message`, { message: 'hi' });
    assert.equal(message.status, 200);
  });

  test('a deny over a value on one chain id; the same on another chain id is signed', async () => {
    policies.set(partner.keyId, 'limits', {
      scope: { walletType: 'EVM', networks: ['eip155:31337'] },
      rules: [
        {
          id: 'big',
          effect: 'deny',
          actions: ['sign_transaction'],
          conditions: [{ fact: 'value', op: 'gt', value: '100' }],
        },
      ],
    });
    const denied = await sign({ transaction: tx(2, 101n) });
    assert.equal(denied.status, 403);
    assert.deepEqual(denied.body.deniedBy, [{ reason: 'denied-by-rule', policyId: 'limits', ruleId: 'big' }]);
    assert.equal(denied.body.policyId, 'limits');
    assert.equal(denied.body.ruleId, 'big');
    assert.equal((await sign({ transaction: tx(2, 101n, 1) })).status, 200);
    policies.byKey.delete(partner.keyId);
  });

  test('a policy 403 is not stored as the idempotent answer: the resend is decided again', async () => {
    policies.set(partner.keyId, 'stop-all', {
      scope: { walletType: 'EVM' },
      rules: [{ id: 'all', effect: 'deny', actions: ['sign_transaction'] }],
    });
    const body = { transaction: tx(3, 1n) };
    const first = await sign(body, { 'idempotency-key': 'policy-resend-1' });
    assert.equal(first.status, 403);
    policies.byKey.delete(partner.keyId);
    const again = await sign(body, { 'idempotency-key': 'policy-resend-1' });
    assert.equal(again.status, 200, JSON.stringify(again.body));
    assert.equal(again.headers.get('idempotent-replayed'), null);
  });

  test('a hold answers 403 POLICY_REVIEW_REQUIRED with the review', async () => {
    policies.set(partner.keyId, 'review-all', {
      scope: { walletType: 'EVM' },
      rules: [{ id: 'r', effect: 'require_approval', actions: ['sign_transaction'] }],
    });
    const r = await sign({ transaction: tx(4, 1n) });
    assert.equal(r.status, 403);
    assert.equal(r.body.code, 'POLICY_REVIEW_REQUIRED');
    assert.equal(r.body.reviewId, 'rev-http');
    assert.equal(r.body.status, 'pending');
    assert.equal(r.body.expiresAt, '2030-01-01T00:00:00.000Z');
    policies.byKey.delete(partner.keyId);
  });

  test('twenty parallel signatures against a cap that allows ten: exactly ten signed; usage shows the ten', async () => {
    policies.set(partner.keyId, 'cap', {
      scope: { walletType: 'EVM', networks: ['eip155:31337'] },
      rules: [
        {
          id: 'daily',
          effect: 'deny',
          actions: ['sign_transaction'],
          conditions: [{ spend: { asset: 'native', window: '24h' }, op: 'gt', value: '10001' }],
        },
      ],
    });
    // Earlier tests signed 5 (before permissions were on: not counted), 101 on chain 1 (another network) and 1 (the
    // resend, counted): the cap leaves room for ten of 1000.
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => sign({ transaction: tx(100 + i, 1000n) })));
    assert.equal(answers.filter((a) => a.status === 200).length, 10);
    assert.equal(answers.filter((a) => a.status === 403 && a.body.code === 'POLICY_DENIED').length, 10);
    const u = await svc.v1(partner.secret, 'GET', `/permissions-v2/wallets/${wallet}/policies/cap/usage`);
    assert.equal(u.status, 200, JSON.stringify(u.body));
    assert.equal(u.body.meters.length, 1);
    assert.deepEqual(
      { ...u.body.meters[0], resetsAt: undefined },
      { ruleId: 'daily', asset: 'native', window: '24h', limit: '10001', used: '10001', resetsAt: undefined },
    );
    assert.ok(u.body.meters[0].resetsAt.endsWith('T00:00:00.000Z'));
    // A replay of a signed body is re-checked and not counted again: at the cap, it still passes (10001 - 1000 + 1000).
    const replay = await sign({ transaction: tx(100, 1000n) });
    const signedFirst = answers[0]!.status === 200;
    assert.equal(replay.status, signedFirst ? 200 : 403);
    const after = await svc.v1(partner.secret, 'GET', `/permissions-v2/wallets/${wallet}/policies/cap/usage`);
    assert.equal(after.body.meters[0].used, '10001');
  });

  test('simulate: a draft counts what it would have denied over the logged traffic', async () => {
    policies.set(
      partner.keyId,
      'draft',
      {
        scope: { walletType: 'EVM' },
        rules: [{ id: 'no-tx', effect: 'deny', actions: ['sign_transaction'] }],
      },
      'draft',
    );
    // Rows of answers that waited for no write (messages, denials) reach the log within LOG_FLUSH_MS.
    await new Promise((resolve) => setTimeout(resolve, LOG_FLUSH_MS * 3));
    const r = await svc.v1(partner.secret, 'POST', '/permissions-v2/policies/draft/simulate', {
      from: new Date(Date.now() - 3_600_000).toISOString(),
      to: new Date(Date.now() + 60_000).toISOString(),
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.ok(r.body.evaluated >= 22, `evaluated ${r.body.evaluated}`);
    // Every logged sign-transaction would be denied; the sign-raw and sign-message ones are no business of the draft.
    const txs = r.body.items.filter((i: { action: string }) => i.action === 'sign_transaction');
    assert.ok(txs.length >= 20);
    assert.ok(txs.every((i: { simulated: { effect: string; ruleId: string } }) => i.simulated.effect === 'deny'));
    assert.equal(r.body.wouldDeny, txs.length + 1, 'and the raw signature, denied again');
    const bad = await svc.v1(partner.secret, 'POST', '/permissions-v2/policies/draft/simulate', { from: 'yesterday' });
    assert.equal(bad.status, 400);
  });
});
