/**
 * The README's three worked policies ("Signing policies: three worked examples"), read from between their markers and
 * run as a partner and an operator would: the operator turns permissions on for the key, the partner creates and
 * activates the policy, then sends the requests the README describes. The real service with its real stores (policy
 * store, approvals store, spend ledger), sign-only EVM transactions on chain 31337 (no node needed: every field given).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { parseTransaction, recoverTransactionAddress } from 'viem';
import { ROOT, startTestService, type TestService } from './helpers/service.ts';

const BASE = '/permissions-v2';
const ETH = 10n ** 18n;
const LISTED = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';
const UNLISTED = '0x90F79bf6EB2c4f870365E785982E1f101E93b906';

let svc: TestService;

before(async () => {
  svc = await startTestService();
});
after(() => svc.stop());

/** The JSON block after `<!-- policy:<name> -->` in the README. */
function readmePolicy(name: string): unknown {
  const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const block = new RegExp(`<!-- policy:${name} -->\\n\`\`\`json\\n([\\s\\S]*?)\`\`\``).exec(readme)?.[1];
  assert.ok(block, `README.md has the policy block ${name}`);
  return JSON.parse(block);
}

/** A key with permissions on, a ready EVM wallet, and the README's policy `name` active on it. */
async function keyWithPolicy(name: string) {
  const partner = await svc.newPartner();
  const on = await svc.admin('PUT', `/api-keys/${partner.keyId}/permissions`, { enabled: true, approvals: true });
  assert.equal(on.status, 200, JSON.stringify(on.body));
  const created = await svc.v1(partner.secret, 'POST', `${BASE}/policies`, { policy: readmePolicy(name) });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const active = await svc.v1(partner.secret, 'POST', `${BASE}/policies/${created.body.id}/activate`, {
    expectedRevision: created.body.revision,
  });
  assert.equal(active.status, 200, JSON.stringify(active.body));
  assert.equal(active.body.status, 'active');
  const w = await svc.v1(partner.secret, 'POST', '/wallets', {
    type: 'EVM',
    userIdentifier: `readme-${name}`,
    userIdentifierType: 'CUSTOM_ID',
  });
  assert.equal(w.status, 201, JSON.stringify(w.body));
  const sign = (to: string, value: bigint, nonce: number, headers: Record<string, string> = {}) =>
    svc.v1(
      partner.secret,
      'POST',
      `/wallets/${w.body.id}/sign-transaction`,
      {
        transaction: {
          to,
          value: value.toString(),
          chainId: 31337,
          type: 2,
          nonce,
          gasLimit: '21000',
          maxFeePerGas: '30000000000',
          maxPriorityFeePerGas: '1000000000',
        },
      },
      headers,
    );
  return { partner, policyId: created.body.id as string, wallet: w.body as { id: string; address: string }, sign };
}

/** The signed transaction's sender, as viem recovers it. */
async function senderOf(signed: string): Promise<string> {
  const hex = (signed.startsWith('0x') ? signed : `0x${signed}`) as `0x${string}`;
  parseTransaction(hex);
  return recoverTransactionAddress({ serializedTransaction: hex as never });
}

test('a daily cap on one chain: 0.6 ETH signed, a second 0.6 ETH refused, 0.3 ETH still fits; usage shows the day', async () => {
  const { partner, policyId, wallet, sign } = await keyWithPolicy('daily-cap');
  const first = await sign(LISTED, (6n * ETH) / 10n, 0);
  assert.equal(first.status, 200, JSON.stringify(first.body));
  assert.equal((await senderOf(first.body.signedTransaction)).toLowerCase(), wallet.address.toLowerCase());

  const over = await sign(LISTED, (6n * ETH) / 10n, 1);
  assert.equal(over.status, 403, JSON.stringify(over.body));
  assert.equal(over.body.code, 'POLICY_DENIED');
  assert.deepEqual(over.body.deniedBy, [{ reason: 'denied-by-rule', policyId, ruleId: 'daily-cap' }]);
  assert.equal(over.body.signedTransaction, undefined);

  const fits = await sign(LISTED, (3n * ETH) / 10n, 1);
  assert.equal(fits.status, 200, JSON.stringify(fits.body));

  const usage = await svc.v1(
    partner.secret,
    'GET',
    `${BASE}/wallets/${wallet.id}/policies/${policyId}/usage?network=eip155:31337`,
  );
  assert.equal(usage.status, 200, JSON.stringify(usage.body));
  const meter = usage.body.meters.find((m: { ruleId: string }) => m.ruleId === 'daily-cap');
  assert.ok(meter, JSON.stringify(usage.body));
  assert.equal(meter.used, ((9n * ETH) / 10n).toString(), 'the two signed values; gas never counts');
  assert.equal(meter.limit, ETH.toString());
  const midnight = new Date();
  midnight.setUTCHours(24, 0, 0, 0);
  assert.equal(meter.resetsAt, midnight.toISOString());
});

test('an allow-list of destinations: a listed payee is signed, another is outside-boundary; messages stay allowed', async () => {
  const { partner, policyId, wallet, sign } = await keyWithPolicy('allow-list');
  const listed = await sign(LISTED.toLowerCase(), ETH, 0);
  assert.equal(listed.status, 200, JSON.stringify(listed.body));
  const other = await sign(UNLISTED, ETH, 0);
  assert.equal(other.status, 403, JSON.stringify(other.body));
  assert.equal(other.body.code, 'POLICY_DENIED');
  assert.deepEqual(other.body.deniedBy, [{ reason: 'outside-boundary', policyId }]);
  const message = await svc.v1(partner.secret, 'POST', `/wallets/${wallet.id}/sign-message`, { message: 'hello' });
  assert.equal(message.status, 200, 'an action the policy does not cover stays allowed');
});

test('two people approve large transfers: held with a case, the initiator refused, two approvals, signed once on resend', async () => {
  const { partner, wallet, sign } = await keyWithPolicy('two-approvers');
  const user = async (name: string) => {
    const r = await svc.admin('POST', `/projects/${partner.projectId}/users`, { name });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    return r.body.id as string;
  };
  const [alice, bob, carol] = [await user('alice'), await user('bob'), await user('carol')];
  const scope = await svc.admin('POST', `/projects/${partner.projectId}/authorization-scopes`, { name: 'treasury' });
  assert.equal(scope.status, 201, JSON.stringify(scope.body));
  for (const u of [alice, bob, carol]) {
    const a = await svc.admin('PUT', `/authorization-scopes/${scope.body.id}/assignments/${u}`, {
      roles: ['approver'],
      expectedRevision: 0,
    });
    assert.equal(a.status, 200, JSON.stringify(a.body));
  }

  // Below the threshold: no approval needed.
  assert.equal((await sign(LISTED, ETH, 0)).status, 200);

  // Unbound wallet: an approval rule cannot be met.
  const unbound = await sign(LISTED, 5n * ETH, 1, { 'idempotency-key': 'unbound-1' });
  assert.equal(unbound.status, 403, JSON.stringify(unbound.body));
  assert.equal(unbound.body.code, 'FORBIDDEN');

  const bind = await svc.admin('PUT', `/wallets/${wallet.id}/authorization-scope`, { scopeId: scope.body.id });
  assert.equal(bind.status, 200, JSON.stringify(bind.body));

  const headers = { 'idempotency-key': 'payout-7', 'x-initiator-user-id': alice };
  const held = await sign(LISTED, 5n * ETH, 1, headers);
  assert.equal(held.status, 403, JSON.stringify(held.body));
  assert.equal(held.body.code, 'POLICY_REVIEW_REQUIRED');
  assert.equal(held.body.status, 'pending');
  const caseId = held.body.caseId as string;
  assert.ok(caseId);
  assert.equal(held.body.signedTransaction, undefined);

  const elsewhere = await sign(UNLISTED, 5n * ETH, 1, headers);
  assert.equal(elsewhere.status, 409, 'the same key with another transaction, while its case is open');
  assert.equal(elsewhere.body.code, 'CONFLICT');

  const decide = (userId: string) =>
    svc.admin('POST', `/approval-cases/${caseId}/decisions`, { userId, decision: 'approve' });
  const byInitiator = await decide(alice);
  assert.equal(byInitiator.status, 403);
  assert.equal(byInitiator.body.code, 'INITIATOR_CANNOT_REVIEW');

  assert.equal((await decide(bob)).status, 200);
  const halfway = await sign(LISTED, 5n * ETH, 1, headers);
  assert.equal(halfway.status, 403, 'one approval of two: still held');
  assert.equal(halfway.body.caseId, caseId);

  assert.equal((await decide(carol)).status, 200);
  const signed = await sign(LISTED, 5n * ETH, 1, headers);
  assert.equal(signed.status, 200, JSON.stringify(signed.body));
  assert.equal((await senderOf(signed.body.signedTransaction)).toLowerCase(), wallet.address.toLowerCase());

  const replay = await sign(LISTED, 5n * ETH, 1, headers);
  assert.equal(replay.status, 200);
  assert.equal(replay.headers.get('idempotent-replayed'), 'true');
  assert.equal(replay.body.signedTransaction, signed.body.signedTransaction, 'signed once: the resend replays it');

  const otherBody = await sign(LISTED, 6n * ETH, 1, headers);
  assert.equal(otherBody.status, 409, JSON.stringify(otherBody.body));
  assert.equal(otherBody.body.code, 'IDEMPOTENCY_CONFLICT', 'once signed, the key names its answer');

  const c = await svc.v1(partner.secret, 'GET', `${BASE}/approval-cases/${caseId}`);
  assert.equal(c.status, 200);
  assert.equal(c.body.status, 'completed');
  assert.ok(c.body.usedAt, 'the case let its request through once');
  assert.equal(c.body.initiatorUserId, alice);
});
