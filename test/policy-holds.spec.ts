/**
 * Holds end to end, with the service's own stores (policy store, approvals store, decision point): reviews approved,
 * rejected and approved too late, each resend of the identical request decided again; and a policy replaced over a
 * pending approval case (409 APPROVAL_CASES_AFFECTED, `force` invalidates it). Sign-only EVM transactions on chain
 * 31337 with every field given: no node is needed.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startTestService, type TestService } from './helpers/service.ts';
import { createActivePolicy } from './helpers/spec-steps.ts';

const BASE = '/permissions-v2';
const ETH = 10n ** 18n;
const TO = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';
/** Short enough to wait out in a test. */
const REVIEW_TTL_MS = 2_500;

let svc: TestService;

before(async () => {
  svc = await startTestService({ REVIEW_TTL_MS: String(REVIEW_TTL_MS) });
});
after(() => svc.stop());

const holdOver = (threshold: bigint, approval?: unknown) => ({
  name: 'large',
  layer: 'guardrail',
  scope: { walletType: 'EVM', networks: ['eip155:31337'] },
  rules: [
    {
      id: 'large',
      effect: 'require_approval',
      actions: ['sign_transaction'],
      conditions: [{ fact: 'value', op: 'gte', value: threshold.toString() }],
      ...(approval ? { approval } : {}),
    },
  ],
});

/** A key with permissions on, an EVM wallet, and `policy` active. */
async function setUp(policy: unknown) {
  const partner = await svc.newPartner();
  assert.equal(
    (await svc.admin('PUT', `/api-keys/${partner.keyId}/permissions`, { enabled: true, approvals: true })).status,
    200,
  );
  const active = await createActivePolicy(svc, partner.secret, policy);
  const w = await svc.v1(partner.secret, 'POST', '/wallets', {
    type: 'EVM',
    userIdentifier: 'holds',
    userIdentifierType: 'CUSTOM_ID',
  });
  assert.equal(w.status, 201);
  const sign = (value: bigint, nonce: number, key: string) =>
    svc.v1(
      partner.secret,
      'POST',
      `/wallets/${w.body.id}/sign-transaction`,
      {
        transaction: {
          to: TO,
          value: value.toString(),
          chainId: 31337,
          type: 2,
          nonce,
          gasLimit: '21000',
          maxFeePerGas: '30000000000',
          maxPriorityFeePerGas: '1000000000',
        },
      },
      { 'idempotency-key': key },
    );
  return { partner, wallet: w.body as { id: string }, policy: active, sign };
}

describe('reviews (a require_approval rule without an approval block)', () => {
  test('approved: the resend signs once, a further resend replays it; rejected: review-rejected on resend', async () => {
    const { partner, sign } = await setUp(holdOver(ETH));
    const held = await sign(2n * ETH, 0, 'review-approve');
    assert.equal(held.status, 403, JSON.stringify(held.body));
    assert.equal(held.body.code, 'POLICY_REVIEW_REQUIRED');
    assert.equal(held.body.status, 'pending');
    const reviewId = held.body.reviewId as string;
    assert.ok(reviewId && held.body.expiresAt);
    assert.equal((await sign(2n * ETH, 0, 'review-approve')).body.reviewId, reviewId, 'still pending: same review');

    const approved = await svc.v1(partner.secret, 'POST', `${BASE}/reviews/${reviewId}/approve`);
    assert.equal(approved.status, 200);
    assert.equal(approved.body.status, 'approved');
    const signed = await sign(2n * ETH, 0, 'review-approve');
    assert.equal(signed.status, 200, JSON.stringify(signed.body));
    const replay = await sign(2n * ETH, 0, 'review-approve');
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
    assert.equal(replay.body.signedTransaction, signed.body.signedTransaction);
    const after = await svc.v1(partner.secret, 'POST', `${BASE}/reviews/${reviewId}/approve`);
    assert.equal(after.status, 200, 'a review that ended still answers 200 with its status');
    assert.equal(after.body.status, 'consumed');

    const second = await sign(3n * ETH, 1, 'review-reject');
    assert.equal(second.body.code, 'POLICY_REVIEW_REQUIRED');
    assert.notEqual(second.body.reviewId, reviewId, 'a new key: a new review');
    const rejected = await svc.v1(partner.secret, 'POST', `${BASE}/reviews/${second.body.reviewId}/reject`);
    assert.equal(rejected.body.status, 'rejected');
    const denied = await sign(3n * ETH, 1, 'review-reject');
    assert.equal(denied.status, 403);
    assert.equal(denied.body.code, 'POLICY_DENIED');
    assert.equal(denied.body.deniedBy[0].reason, 'review-rejected');
    assert.equal(denied.body.signedTransaction, undefined);
  });

  test('approved after its lifetime: answered 200 expired; the resend opens a new review, nothing signed', async () => {
    const { partner, sign } = await setUp(holdOver(ETH));
    const held = await sign(2n * ETH, 0, 'review-late');
    assert.equal(held.body.code, 'POLICY_REVIEW_REQUIRED');
    await new Promise((r) => setTimeout(r, REVIEW_TTL_MS + 300));
    const late = await svc.v1(partner.secret, 'POST', `${BASE}/reviews/${held.body.reviewId}/approve`);
    assert.equal(late.status, 200);
    assert.equal(late.body.status, 'expired');
    const resend = await sign(2n * ETH, 0, 'review-late');
    assert.equal(resend.status, 403);
    assert.equal(resend.body.code, 'POLICY_REVIEW_REQUIRED');
    assert.notEqual(resend.body.reviewId, held.body.reviewId);
    assert.equal(resend.body.status, 'pending');
  });
});

describe('a policy replaced over a pending approval case', () => {
  test('409 APPROVAL_CASES_AFFECTED naming the case; with force the case is invalidated and the resend says so', async () => {
    const approval = { stages: [{ role: 'approver', threshold: 1 }] };
    const { partner, wallet, policy, sign } = await setUp(holdOver(ETH, approval));
    const user = await svc.admin('POST', `/projects/${partner.projectId}/users`, { name: 'ann' });
    const scope = await svc.admin('POST', `/projects/${partner.projectId}/authorization-scopes`, { name: 'ops' });
    assert.equal(
      (
        await svc.admin('PUT', `/authorization-scopes/${scope.body.id}/assignments/${user.body.id}`, {
          roles: ['approver'],
          expectedRevision: 0,
        })
      ).status,
      200,
    );
    assert.equal(
      (await svc.admin('PUT', `/wallets/${wallet.id}/authorization-scope`, { scopeId: scope.body.id })).status,
      200,
    );
    const held = await sign(2n * ETH, 0, 'case-replaced');
    assert.equal(held.body.code, 'POLICY_REVIEW_REQUIRED', JSON.stringify(held.body));
    const caseId = held.body.caseId as string;

    const replacement = holdOver(5n * ETH, approval);
    const refused = await svc.v1(partner.secret, 'PUT', `${BASE}/policies/${policy.id}`, {
      policy: replacement,
      expectedRevision: policy.revision,
    });
    assert.equal(refused.status, 409, JSON.stringify(refused.body));
    assert.equal(refused.body.code, 'APPROVAL_CASES_AFFECTED');
    assert.deepEqual(refused.body.affectedCaseIds, [caseId]);

    const stale = await svc.v1(partner.secret, 'PUT', `${BASE}/policies/${policy.id}`, {
      policy: replacement,
      expectedRevision: policy.revision - 1,
      force: true,
    });
    assert.equal(stale.status, 409);
    assert.equal(stale.body.code, 'REVISION_CONFLICT');

    const forced = await svc.v1(partner.secret, 'PUT', `${BASE}/policies/${policy.id}`, {
      policy: replacement,
      expectedRevision: policy.revision,
      force: true,
    });
    assert.equal(forced.status, 200, JSON.stringify(forced.body));
    const c = await svc.v1(partner.secret, 'GET', `${BASE}/approval-cases/${caseId}`);
    assert.equal(c.body.status, 'invalidated');
    const decided = await svc.admin('POST', `/approval-cases/${caseId}/decisions`, {
      userId: user.body.id,
      decision: 'approve',
    });
    assert.equal(decided.status, 403, 'an invalidated case takes no decision');
    // Under the new version 2 ETH needs no approval: the identical resend is signed.
    const resend = await sign(2n * ETH, 0, 'case-replaced');
    assert.equal(resend.status, 200, JSON.stringify(resend.body));
  });
});
