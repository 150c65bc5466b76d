/**
 * People, authorization scopes, approval cases and reviews over HTTP, against the whole appliance in-process: the
 * operator's admin routes (users, scopes, role assignments, wallet bindings, case decisions) and the partner's
 * `/v1/permissions-v2` routes (cases, reviews, the user-owned layer's routes).
 *
 * Until the signing decision point calls the approvals store (issue 23's other part), the held requests are opened
 * here the way it will open them: through the store's HoldResolver (`resolve`), on a second connection to the
 * service's own database file, inside a writer transaction. Everything else goes through HTTP.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { HoldRequest } from '../actors/signing/policy/policy-ports.ts';
import { createStore, type Store } from '../store/index.ts';
import { type Partner, startTestService, type TestService } from './helpers/service.ts';

const DAY = 24 * 3600_000;

let svc: TestService;
let store: Store;
let partner: Partner;
let other: Partner;
let walletId: string;
let unboundWalletId: string;
let otherWalletId: string;
let scopeId: string;
/** a: the initiator; b, d: approvers; c: finance only. */
const users: Record<'a' | 'b' | 'c' | 'd', string> = { a: '', b: '', c: '', d: '' };
/** The switch the permissions helper will own; this spec turns it off for one test. */

const v1 = (method: string, route: string, body?: unknown, secret = partner.secret) =>
  svc.v1(secret, method, `/permissions-v2${route}`, body);

/** Opens (or resolves) a held request as the decision point does: one writer transaction on the service's file. */
const hold = (over: Partial<HoldRequest> = {}) =>
  store.writer.write(() =>
    store.approvals.resolve({
      apiKeyId: partner.keyId,
      projectId: partner.projectId,
      walletId,
      reference: `key:${Math.random()}`,
      bodyHash: 'body-1',
      policyId: 'policy-1',
      policyVersion: 1,
      ruleId: 'big',
      approval: { stages: [{ role: 'approver', threshold: 2 }] },
      initiatorUserId: users.a,
      at: Date.now(),
      ...over,
    }),
  );
const openCase = async (over: Partial<HoldRequest> = {}) => {
  const o = await hold(over);
  assert.equal(o.kind, 'required');
  return (o as { caseId: string }).caseId;
};
/** Opens (or resolves) a held request without an approval block: a review. */
const review = (over: Partial<Omit<HoldRequest, 'approval'>> = {}) =>
  store.writer.write(() =>
    store.approvals.resolve({
      apiKeyId: partner.keyId,
      projectId: partner.projectId,
      walletId,
      reference: `key:${Math.random()}`,
      bodyHash: 'body-1',
      policyId: 'policy-1',
      policyVersion: 1,
      ruleId: 'review',
      initiatorUserId: null,
      at: Date.now(),
      ...over,
    }),
  );
const openReview = async (over: Partial<Omit<HoldRequest, 'approval'>> = {}) => {
  const o = await review(over);
  assert.equal(o.kind, 'required');
  return (o as { reviewId: string }).reviewId;
};
/** The key's signing-policy switch, as the operator sets it. */
const permissions = async (keyId: string, enabled: boolean) => {
  const r = await svc.admin('PUT', `/api-keys/${keyId}/permissions`, { enabled, approvals: true });
  assert.equal(r.status, 200, JSON.stringify(r.body));
};
const decide = (caseId: string, userId: string, decision: 'approve' | 'reject') =>
  svc.admin('POST', `/approval-cases/${caseId}/decisions`, { userId, decision });

before(async () => {
  svc = await startTestService();
  store = createStore(path.join(svc.dataDir, 'service.db'));
  partner = await svc.newPartner();
  other = await svc.newPartner();
  await permissions(partner.keyId, true);
  await permissions(other.keyId, true);
  const wallet = async (p: Partner, id: string) => {
    const r = await svc.v1(p.secret, 'POST', '/wallets', {
      type: 'EVM',
      userIdentifier: id,
      userIdentifierType: 'CUSTOM_ID',
    });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    return r.body.id as string;
  };
  walletId = await wallet(partner, 'treasury');
  unboundWalletId = await wallet(partner, 'unbound');
  otherWalletId = await wallet(other, 'theirs');
});

after(async () => {
  store?.close();
  await svc?.stop();
});

describe('admin: users, scopes, assignments, bindings', () => {
  test('users and scopes are created and listed per project', async () => {
    for (const name of ['a', 'b', 'c', 'd'] as const) {
      const r = await svc.admin('POST', `/projects/${partner.projectId}/users`, { name: `person ${name}` });
      assert.equal(r.status, 201, JSON.stringify(r.body));
      assert.equal(r.body.projectId, partner.projectId);
      assert.equal(r.body.name, `person ${name}`);
      users[name] = r.body.id;
    }
    const list = await svc.admin('GET', `/projects/${partner.projectId}/users?limit=3`);
    assert.equal(list.status, 200);
    assert.deepEqual(
      list.body.data.map((u: { id: string }) => u.id),
      [users.a, users.b, users.c],
    );
    assert.equal(list.body.pagination.hasMore, true);
    const rest = await svc.admin(
      'GET',
      `/projects/${partner.projectId}/users?cursor=${encodeURIComponent(list.body.pagination.cursor)}`,
    );
    assert.deepEqual(
      rest.body.data.map((u: { id: string }) => u.id),
      [users.d],
    );
    assert.equal((await svc.admin('POST', '/projects/nope/users', { name: 'x' })).body.code, 'PROJECT_NOT_FOUND');
    assert.equal((await svc.admin('POST', `/projects/${partner.projectId}/users`, {})).status, 400);

    const scope = await svc.admin('POST', `/projects/${partner.projectId}/authorization-scopes`, { name: 'treasury' });
    assert.equal(scope.status, 201, JSON.stringify(scope.body));
    assert.deepEqual(scope.body.assignments, []);
    scopeId = scope.body.id;
    const scopes = await svc.admin('GET', `/projects/${partner.projectId}/authorization-scopes`);
    assert.deepEqual(
      scopes.body.data.map((s: { id: string }) => s.id),
      [scopeId],
    );
  });

  test('role assignments take the current revision; a stale one is 409 REVISION_CONFLICT with the revision', async () => {
    const put = (userId: string, roles: string[], expectedRevision: number) =>
      svc.admin('PUT', `/authorization-scopes/${scopeId}/assignments/${userId}`, { roles, expectedRevision });
    const first = await put(users.a, ['approver'], 0);
    assert.equal(first.status, 200, JSON.stringify(first.body));
    assert.deepEqual(first.body.roles, ['approver']);
    assert.equal(first.body.revision, 1);
    const stale = await put(users.a, ['approver'], 0);
    assert.equal(stale.status, 409);
    assert.equal(stale.body.code, 'REVISION_CONFLICT');
    assert.equal(stale.body.revision, 1);
    assert.equal((await put(users.b, ['approver'], 0)).status, 200);
    assert.equal((await put(users.c, ['finance'], 0)).status, 200);
    assert.equal((await put(users.d, ['approver', 'finance', 'approver'], 0)).body.roles.length, 2, 'deduplicated');
    const scope = await svc.admin('GET', `/authorization-scopes/${scopeId}`);
    assert.equal(scope.status, 200);
    assert.deepEqual(
      scope.body.assignments.map((x: { userId: string; revision: number }) => [x.userId, x.revision]).sort(),
      [users.a, users.b, users.c, users.d].map((u) => [u, 1]).sort(),
    );
    assert.equal((await put('no-such-user', ['approver'], 0)).body.code, 'USER_NOT_FOUND');
    assert.equal(
      (await svc.admin('PUT', `/authorization-scopes/nope/assignments/${users.a}`, { roles: [], expectedRevision: 0 }))
        .body.code,
      'AUTHORIZATION_SCOPE_NOT_FOUND',
    );
    const badRole = await put(users.a, ['has space'], 1);
    assert.equal(badRole.status, 400);
    assert.equal(badRole.body.code, 'INVALID_REQUEST');
  });

  test('a wallet is bound to a scope of its project, read back, and unbound with null', async () => {
    const bind = (w: string, s: string | null) => svc.admin('PUT', `/wallets/${w}/authorization-scope`, { scopeId: s });
    const r = await bind(walletId, scopeId);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.deepEqual(r.body, { walletId, scopeId });
    assert.deepEqual((await svc.admin('GET', `/wallets/${walletId}/authorization-scope`)).body, { walletId, scopeId });
    assert.deepEqual((await svc.admin('GET', `/wallets/${unboundWalletId}/authorization-scope`)).body, {
      walletId: unboundWalletId,
      scopeId: null,
    });
    const foreign = await bind(otherWalletId, scopeId);
    assert.equal(foreign.status, 400, 'a scope of another project');
    assert.equal(foreign.body.field, 'body.scopeId');
    assert.equal((await bind('no-such-wallet', scopeId)).body.code, 'WALLET_NOT_FOUND');
    assert.equal((await bind(walletId, 'no-such-scope')).body.code, 'AUTHORIZATION_SCOPE_NOT_FOUND');
    assert.equal((await svc.admin('PUT', `/wallets/${walletId}/authorization-scope`, {})).status, 400);
    // An approval rule on the unbound wallet: the decision point answers 403 FORBIDDEN for this outcome.
    assert.deepEqual(await hold({ walletId: unboundWalletId }), { kind: 'forbidden' });
  });
});

describe('approval cases', () => {
  test("the partner lists and reads its key's cases; another key's case is a 404 like a missing one", async () => {
    const caseId = await openCase();
    const list = await v1('GET', '/approval-cases');
    assert.equal(list.status, 200, JSON.stringify(list.body));
    const listed = list.body.data.find((c: { id: string }) => c.id === caseId);
    assert.ok(listed, 'the case is listed');
    const read = await v1('GET', `/approval-cases/${caseId}`);
    assert.equal(read.status, 200);
    assert.deepEqual(read.body, listed);
    assert.equal(read.body.status, 'pending');
    assert.equal(read.body.walletId, walletId);
    assert.equal(read.body.policyId, 'policy-1');
    assert.equal(read.body.ruleId, 'big');
    assert.equal(read.body.initiatorUserId, users.a);
    assert.equal(read.body.usedAt, null);
    assert.ok(Date.parse(read.body.expiresAt) - Date.now() > 6.9 * DAY, 'seven days by default');
    assert.deepEqual(read.body.stages, [
      { role: 'approver', threshold: 2, status: 'pending', approvals: 0, decisions: [] },
    ]);
    const theirs = await v1('GET', `/approval-cases/${caseId}`, undefined, other.secret);
    const missing = await v1('GET', '/approval-cases/no-such-case');
    assert.equal(theirs.status, 404);
    assert.deepEqual([theirs.body.code, theirs.body.message], [missing.body.code, missing.body.message]);
    assert.equal(missing.body.code, 'APPROVAL_CASE_NOT_FOUND');
    assert.equal((await v1('GET', '/approval-cases', undefined, other.secret)).body.data.length, 0);
    assert.equal((await v1('POST', `/approval-cases/${caseId}/cancel`, {}, other.secret)).status, 404);
  });

  test('two approvals complete a two-threshold stage; the initiator and non-holders are refused; a user decides once', async () => {
    const caseId = await openCase();
    const initiator = await decide(caseId, users.a, 'approve');
    assert.equal(initiator.status, 403);
    assert.equal(initiator.body.code, 'INITIATOR_CANNOT_REVIEW');
    assert.equal(initiator.body.message, 'approval decision is not allowed');
    const finance = await decide(caseId, users.c, 'approve');
    assert.equal(finance.status, 403);
    assert.equal(finance.body.code, 'APPROVAL_DECISION_NOT_ALLOWED');
    assert.equal(finance.body.message, 'approval decision is not allowed');
    assert.equal(finance.body.reason, 'not-an-approver');

    const one = await decide(caseId, users.b, 'approve');
    assert.equal(one.status, 200, JSON.stringify(one.body));
    assert.equal(one.body.status, 'pending');
    assert.equal(one.body.stages[0].approvals, 1);
    const twice = await decide(caseId, users.b, 'approve');
    assert.equal(twice.body.code, 'APPROVAL_DECISION_NOT_ALLOWED');
    assert.equal(twice.body.reason, 'already-decided');
    const two = await decide(caseId, users.d, 'approve');
    assert.equal(two.body.status, 'completed');
    assert.equal(two.body.stages[0].status, 'completed');
    assert.deepEqual(
      two.body.stages[0].decisions.map((x: { userId: string }) => x.userId),
      [users.b, users.d],
    );
    // The decision point's resend: the completed case lets it through once, and the partner sees it used.
    const reference = (await svc.admin('GET', `/approval-cases/${caseId}`)).body.reference;
    assert.deepEqual(await hold({ reference }), { kind: 'proceed', caseId });
    const used = await v1('GET', `/approval-cases/${caseId}`);
    assert.equal(used.body.status, 'completed');
    assert.ok(used.body.usedAt);
    assert.equal((await hold({ reference })).kind, 'required', 'used: never twice');
    const late = await decide(caseId, users.c, 'reject');
    assert.equal(late.body.reason, 'case-not-pending');
  });

  test('one rejection rejects the case; API keys have no route to decide one', async () => {
    const caseId = await openCase();
    assert.equal((await decide(caseId, users.b, 'approve')).status, 200);
    const rejected = await decide(caseId, users.d, 'reject');
    assert.equal(rejected.body.status, 'rejected');
    assert.equal(rejected.body.stages[0].status, 'rejected');
    const reference = rejected.body.reference;
    assert.deepEqual(await hold({ reference }), { kind: 'rejected', caseId });
    const byKey = await v1('POST', `/approval-cases/${caseId}/decisions`, { userId: users.b, decision: 'approve' });
    assert.equal(byKey.status, 404);
    const keyAsAdmin = await fetch(`${svc.adminUrl}/admin/v1/approval-cases/${caseId}/decisions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${partner.secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ userId: users.b, decision: 'approve' }),
    });
    assert.equal(keyAsAdmin.status, 403);
  });

  test('cancel: a pending case becomes cancelled; any other is answered unchanged, 200', async () => {
    const caseId = await openCase();
    const cancelled = await v1('POST', `/approval-cases/${caseId}/cancel`, {});
    assert.equal(cancelled.status, 200, JSON.stringify(cancelled.body));
    assert.equal(cancelled.body.status, 'cancelled');
    const again = await v1('POST', `/approval-cases/${caseId}/cancel`, {});
    assert.equal(again.status, 200);
    assert.equal(again.body.status, 'cancelled');
    assert.equal((await decide(caseId, users.b, 'approve')).body.reason, 'case-not-pending');
    const expired = await openCase({ at: Date.now() - 8 * DAY });
    const e = await v1('POST', `/approval-cases/${expired}/cancel`, {});
    assert.equal(e.status, 200);
    assert.equal(e.body.status, 'expired');
  });

  test('filters: status as of now, walletId; a bad status or cursor is a 400', async () => {
    const fresh = await openCase();
    const expired = await openCase({ at: Date.now() - 8 * DAY });
    const ids = async (q: string) =>
      ((await v1('GET', `/approval-cases?${q}`)).body.data as Array<{ id: string; status: string }>).map((c) => c.id);
    assert.ok((await ids('status=pending')).includes(fresh));
    assert.ok(!(await ids('status=pending')).includes(expired));
    assert.ok((await ids('status=expired')).includes(expired));
    assert.deepEqual(await ids(`walletId=${unboundWalletId}`), []);
    const page = await v1('GET', '/approval-cases?limit=1');
    assert.equal(page.body.data.length, 1);
    assert.equal(page.body.pagination.hasMore, true);
    const next = await v1('GET', `/approval-cases?limit=1&cursor=${encodeURIComponent(page.body.pagination.cursor)}`);
    assert.notEqual(next.body.data[0].id, page.body.data[0].id);
    assert.equal((await v1('GET', '/approval-cases?status=approved')).status, 400);
    assert.equal((await v1('GET', '/approval-cases?cursor=nonsense')).body.code, 'INVALID_CURSOR');
    const admin = await svc.admin('GET', `/projects/${partner.projectId}/approval-cases?status=expired`);
    assert.equal(admin.status, 200);
    assert.ok(
      admin.body.data.some((c: { id: string; apiKeyId: string }) => c.id === expired && c.apiKeyId === partner.keyId),
    );
  });

  test('the list is empty while permissions are off for the key; reads of a case still answer', async () => {
    const caseId = await openCase();
    await permissions(partner.keyId, false);
    try {
      const off = await v1('GET', '/approval-cases');
      assert.equal(off.status, 200);
      assert.deepEqual(off.body.data, []);
      assert.equal(off.body.pagination.hasMore, false);
      assert.equal((await v1('GET', `/approval-cases/${caseId}`)).status, 200);
    } finally {
      await permissions(partner.keyId, true);
    }
    assert.ok((await v1('GET', '/approval-cases')).body.data.length > 0);
  });

  test('an assignment that strands a pending case is 409 APPROVAL_CASES_AFFECTED; force writes it and invalidates the case', async () => {
    const caseId = await openCase({ approval: { stages: [{ role: 'finance', threshold: 2 }] } });
    const scope = (await svc.admin('GET', `/authorization-scopes/${scopeId}`)).body;
    const revisionOf = (u: string) =>
      scope.assignments.find((x: { userId: string }) => x.userId === u).revision as number;
    const body = { roles: [], expectedRevision: revisionOf(users.c) };
    const refused = await svc.admin('PUT', `/authorization-scopes/${scopeId}/assignments/${users.c}`, body);
    assert.equal(refused.status, 409, JSON.stringify(refused.body));
    assert.equal(refused.body.code, 'APPROVAL_CASES_AFFECTED');
    assert.ok(refused.body.affectedCaseIds.includes(caseId));
    const forced = await svc.admin('PUT', `/authorization-scopes/${scopeId}/assignments/${users.c}`, {
      ...body,
      force: true,
    });
    assert.equal(forced.status, 200, JSON.stringify(forced.body));
    assert.ok(forced.body.invalidatedCaseIds.includes(caseId));
    assert.equal((await v1('GET', `/approval-cases/${caseId}`)).body.status, 'invalidated');
    // Given back, so later tests keep their finance holder.
    await svc.admin('PUT', `/authorization-scopes/${scopeId}/assignments/${users.c}`, {
      roles: ['finance'],
      expectedRevision: forced.body.revision,
    });
  });
});

describe('reviews', () => {
  test('approve answers approved, and a later reject leaves it so; another key is a 404', async () => {
    const reviewId = await openReview();
    assert.equal((await v1('POST', `/reviews/${reviewId}/approve`, {}, other.secret)).body.code, 'REVIEW_NOT_FOUND');
    const approved = await v1('POST', `/reviews/${reviewId}/approve`, {});
    assert.equal(approved.status, 200, JSON.stringify(approved.body));
    assert.equal(approved.body.id, reviewId);
    assert.equal(approved.body.status, 'approved');
    const window = Date.parse(approved.body.expiresAt) - Date.now();
    assert.ok(window > 4 * 60_000 && window <= 5 * 60_000, 'valid five minutes');
    const rejectAfter = await v1('POST', `/reviews/${reviewId}/reject`, {});
    assert.equal(rejectAfter.status, 200);
    assert.equal(rejectAfter.body.status, 'approved');
  });

  test('reject answers rejected; a late approval answers expired; consumed stays consumed', async () => {
    const rejected = await openReview();
    const r = await v1('POST', `/reviews/${rejected}/reject`, {});
    assert.equal(r.body.status, 'rejected');
    assert.equal((await v1('POST', `/reviews/${rejected}/approve`, {})).body.status, 'rejected');

    const old = await openReview({ at: Date.now() - DAY - 1000 });
    const late = await v1('POST', `/reviews/${old}/approve`, {});
    assert.equal(late.status, 200);
    assert.equal(late.body.status, 'expired');

    const reference = `key:consumed-${Math.random()}`;
    const used = await openReview({ reference });
    await v1('POST', `/reviews/${used}/approve`, {});
    assert.deepEqual(await review({ reference }), { kind: 'proceed', reviewId: used });
    const after = await v1('POST', `/reviews/${used}/approve`, {});
    assert.equal(after.body.status, 'consumed');
  });
});

test('delegation consents and user parameters answer 400 permissions_v2_extension_unavailable to every method', async () => {
  for (const route of ['delegation-consents', 'user-parameters']) {
    for (const method of ['GET', 'POST', 'PUT', 'PATCH', 'DELETE']) {
      const body = method === 'GET' || method === 'DELETE' ? undefined : {};
      const r = await v1(method, `/users/${users.a}/${route}`, body);
      assert.equal(r.status, 400, `${method} ${route}`);
      assert.equal(r.body.code, 'permissions_v2_extension_unavailable');
      assert.ok(r.body.requestId);
    }
  }
  assert.equal((await svc.v1(undefined, 'GET', `/permissions-v2/users/${users.a}/user-parameters`)).status, 401);
});
