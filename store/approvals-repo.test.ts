import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { HoldRequest, HoldResolver } from '../actors/signing/policy/policy-ports.ts';
import { ServiceError } from '../chains/domain/errors.ts';
import { caseStatusAt, reviewStatusAt } from './approvals-repo.ts';
import { createStore } from './index.ts';

const DAY = 24 * 3600_000;
const CASE_TTL = 7 * DAY;
const REVIEW_TTL = DAY;
const T0 = Date.UTC(2030, 0, 1);

/** A store with a project, a wallet, a scope the wallet is bound to, and users a (approver), b (approver), c (finance). */
async function setup(opts: { bind?: boolean } = {}) {
  const store = createStore(':memory:', { approvals: { caseTtlMs: CASE_TTL, reviewTtlMs: REVIEW_TTL } });
  const repo = store.approvals;
  store.projects.insert({ id: 'p1', name: 'p', plan: 'free', createdAt: 'now' });
  store.projects.insert({ id: 'p2', name: 'q', plan: 'free', createdAt: 'now' });
  for (const id of ['w1', 'w2']) {
    store.wallets.insert({
      id,
      projectId: 'p1',
      type: 'EVM',
      scheme: 'DKLS',
      status: 'ready',
      address: `0x${id}`,
      publicKey: '04',
      userIdentifier: id,
      userIdentifierType: 'CUSTOM_ID',
      createdAt: 'now',
      updatedAt: 'now',
      seq: store.wallets.nextSeq(),
    });
  }
  const w = <T>(fn: () => T) => store.writer.write(fn);
  const scope = await w(() => repo.insertScope({ projectId: 'p1', name: 'treasury', createdAt: 'now' }));
  const user = (name: string, projectId = 'p1') => w(() => repo.insertUser({ projectId, name, createdAt: 'now' }));
  const [a, b, c, d, outsider] = [
    await user('a'),
    await user('b'),
    await user('c'),
    await user('d'),
    await user('o', 'p2'),
  ];
  const assign = (userId: string, roles: string[]) =>
    w(() => {
      const rev = repo.getAssignment(scope.id, userId)?.revision ?? 0;
      return repo.putAssignment({ scopeId: scope.id, userId, roles, expectedRevision: rev, force: false, at: T0 });
    });
  await assign(a.id, ['approver']);
  await assign(b.id, ['approver']);
  await assign(c.id, ['finance']);
  await assign(d.id, ['approver', 'finance']);
  if (opts.bind !== false) await w(() => repo.bindWallet('w1', scope.id, T0));
  return { store, repo, w, scope, a, b, c, d, outsider, assign };
}

const hold = (over: Partial<HoldRequest> = {}): HoldRequest => ({
  apiKeyId: 'k1',
  projectId: 'p1',
  walletId: 'w1',
  reference: 'key:idem-1',
  bodyHash: 'h1',
  policyId: 'pol1',
  policyVersion: 1,
  ruleId: 'big',
  approval: { stages: [{ role: 'approver', threshold: 2 }] },
  initiatorUserId: null,
  at: T0,
  ...over,
});

const review = (over: Partial<HoldRequest> = {}): HoldRequest => {
  const { approval: _ignored, ...rest } = hold(over);
  return { ...rest, ...(over.approval ? { approval: over.approval } : {}) };
};

function codeOf(fn: () => unknown): { code: string; status: number; details?: Record<string, unknown> } {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof ServiceError, String(err));
    return { code: err.code, status: err.httpStatus, ...(err.details ? { details: err.details } : {}) };
  }
  assert.fail('expected a refusal');
}

test('the repository is the HoldResolver the decision point takes', async () => {
  const { store, repo } = await setup();
  const resolver: HoldResolver = repo;
  assert.equal(typeof resolver.resolve, 'function');
  store.close();
});

test('case: unbound wallet is forbidden, and opens nothing', async () => {
  const { store, repo, w } = await setup({ bind: false });
  assert.deepEqual(await w(() => repo.resolve(hold())), { kind: 'forbidden' });
  assert.equal(repo.listCases({ by: 'key', owner: 'k1', limit: 10, at: T0 }).length, 0);
  store.close();
});

test('case: opened pending, then required with the same case while pending; two approvals complete the stage; used once', async () => {
  const { store, repo, w, a, b } = await setup();
  const first = await w(() => repo.resolve(hold()));
  assert.equal(first.kind, 'required');
  const caseId = (first as { caseId: string }).caseId;
  assert.equal((first as { status: string }).status, 'pending');
  assert.equal((first as { expiresAt: string }).expiresAt, new Date(T0 + CASE_TTL).toISOString());

  const again = await w(() => repo.resolve(hold({ at: T0 + 1000 })));
  assert.deepEqual(again, {
    kind: 'required',
    caseId,
    status: 'pending',
    expiresAt: new Date(T0 + CASE_TTL).toISOString(),
  });

  const one = await w(() => repo.decide(caseId, a.id, 'approve', T0 + 2000));
  assert.equal(caseStatusAt(one, T0 + 2000), 'pending', 'one approval of a threshold of two');
  const two = await w(() => repo.decide(caseId, b.id, 'approve', T0 + 3000));
  assert.equal(caseStatusAt(two, T0 + 3000), 'completed');

  assert.deepEqual(await w(() => repo.resolve(hold({ at: T0 + 4000 }))), { kind: 'proceed', caseId });
  assert.equal(repo.getCase(caseId)!.usedAt, T0 + 4000);
  // Used: the same case again, required.
  assert.deepEqual(await w(() => repo.resolve(hold({ at: T0 + 5000 }))), {
    kind: 'required',
    caseId,
    status: 'completed',
    expiresAt: new Date(T0 + CASE_TTL).toISOString(),
  });
  store.close();
});

test('case: completed but older than its lifetime is required with the same case, never used', async () => {
  const { store, repo, w, a, b } = await setup();
  const { caseId } = (await w(() => repo.resolve(hold()))) as { caseId: string };
  await w(() => repo.decide(caseId, a.id, 'approve', T0 + 1));
  await w(() => repo.decide(caseId, b.id, 'approve', T0 + 2));
  const late = await w(() => repo.resolve(hold({ at: T0 + CASE_TTL })));
  assert.deepEqual(late, {
    kind: 'required',
    caseId,
    status: 'completed',
    expiresAt: new Date(T0 + CASE_TTL).toISOString(),
  });
  assert.equal(repo.getCase(caseId)!.usedAt, null);
  store.close();
});

test('case: one rejection rejects it; rejected while young, required with the same case once older', async () => {
  const { store, repo, w, a, b } = await setup();
  const { caseId } = (await w(() => repo.resolve(hold()))) as { caseId: string };
  await w(() => repo.decide(caseId, a.id, 'approve', T0 + 1));
  const rejected = await w(() => repo.decide(caseId, b.id, 'reject', T0 + 2));
  assert.equal(caseStatusAt(rejected, T0 + 2), 'rejected');
  assert.deepEqual(await w(() => repo.resolve(hold({ at: T0 + CASE_TTL - 1 }))), { kind: 'rejected', caseId });
  assert.deepEqual(await w(() => repo.resolve(hold({ at: T0 + CASE_TTL }))), {
    kind: 'required',
    caseId,
    status: 'rejected',
    expiresAt: new Date(T0 + CASE_TTL).toISOString(),
  });
  store.close();
});

test('case: expired, cancelled and invalidated cases answer required with the same case', async () => {
  const { store, repo, w } = await setup();
  // expired: pending past its lifetime
  const { caseId: expired } = (await w(() => repo.resolve(hold({ reference: 'key:e' })))) as { caseId: string };
  assert.deepEqual(await w(() => repo.resolve(hold({ reference: 'key:e', at: T0 + CASE_TTL }))), {
    kind: 'required',
    caseId: expired,
    status: 'expired',
    expiresAt: new Date(T0 + CASE_TTL).toISOString(),
  });
  // cancelled
  const { caseId: cancelled } = (await w(() => repo.resolve(hold({ reference: 'key:c' })))) as { caseId: string };
  await w(() => repo.cancelCase(cancelled, T0 + 1));
  const c = (await w(() => repo.resolve(hold({ reference: 'key:c', at: T0 + 2 })))) as {
    caseId: string;
    status: string;
  };
  assert.equal(c.caseId, cancelled);
  assert.equal(c.status, 'cancelled');
  // invalidated (the policy was replaced)
  const { caseId: inv } = (await w(() => repo.resolve(hold({ reference: 'key:i', policyId: 'pol2' })))) as {
    caseId: string;
  };
  assert.deepEqual(repo.pendingCasesOf('pol2', T0 + 1), [inv]);
  assert.deepEqual(await w(() => repo.invalidateUncompletedCases('pol2', T0 + 1)), [inv]);
  assert.deepEqual(repo.pendingCasesOf('pol2', T0 + 1), []);
  const i = (await w(() => repo.resolve(hold({ reference: 'key:i', policyId: 'pol2', at: T0 + 2 })))) as {
    caseId: string;
    status: string;
  };
  assert.equal(i.caseId, inv);
  assert.equal(i.status, 'invalidated');
  store.close();
});

test('invalidation ends uncompleted cases of the policy only; completed ones survive and still let through', async () => {
  const { store, repo, w, a, b } = await setup();
  const { caseId: done } = (await w(() => repo.resolve(hold({ reference: 'key:done' })))) as { caseId: string };
  await w(() => repo.decide(done, a.id, 'approve', T0 + 1));
  await w(() => repo.decide(done, b.id, 'approve', T0 + 2));
  const { caseId: open } = (await w(() => repo.resolve(hold({ reference: 'key:open' })))) as { caseId: string };
  const { caseId: other } = (await w(() => repo.resolve(hold({ reference: 'key:other', policyId: 'polX' })))) as {
    caseId: string;
  };
  assert.deepEqual(repo.pendingCasesOf('pol1', T0 + 3), [open]);
  assert.deepEqual(await w(() => repo.invalidateUncompletedCases('pol1', T0 + 3)), [open]);
  assert.equal(caseStatusAt(repo.getCase(open)!, T0 + 3), 'invalidated');
  assert.equal(caseStatusAt(repo.getCase(other)!, T0 + 3), 'pending');
  assert.deepEqual(await w(() => repo.resolve(hold({ reference: 'key:done', at: T0 + 4 }))), {
    kind: 'proceed',
    caseId: done,
  });
  store.close();
});

test('stages complete at their threshold in order; a stage-one approver cannot decide again at stage two', async () => {
  const { store, repo, w, a, c, d } = await setup();
  const stages = [
    { role: 'approver', threshold: 1 },
    { role: 'finance', threshold: 2 },
  ];
  const { caseId } = (await w(() => repo.resolve(hold({ approval: { stages } })))) as { caseId: string };
  // c holds only finance: not the current stage's role.
  assert.deepEqual(
    codeOf(() => repo.decide(caseId, c.id, 'approve', T0 + 1)),
    { code: 'APPROVAL_DECISION_NOT_ALLOWED', status: 403, details: { reason: 'not-an-approver' } },
  );
  const s1 = await w(() => repo.decide(caseId, d.id, 'approve', T0 + 1));
  assert.deepEqual(
    s1.decisions.map((x) => [x.userId, x.stage]),
    [[d.id, 0]],
  );
  // d decided already (once per case), though it holds finance too; a holds no finance.
  assert.deepEqual(codeOf(() => repo.decide(caseId, d.id, 'approve', T0 + 2)).details, { reason: 'already-decided' });
  assert.deepEqual(codeOf(() => repo.decide(caseId, a.id, 'approve', T0 + 2)).details, { reason: 'not-an-approver' });
  await w(() => repo.decide(caseId, c.id, 'approve', T0 + 2));
  assert.equal(caseStatusAt(repo.getCase(caseId)!, T0 + 2), 'pending', 'finance needs two');
  store.close();
});

test('the initiator cannot decide; users of another project and decisions on ended cases are refused', async () => {
  const { store, repo, w, a, b, outsider } = await setup();
  const { caseId } = (await w(() => repo.resolve(hold({ initiatorUserId: a.id })))) as { caseId: string };
  const initiator = codeOf(() => repo.decide(caseId, a.id, 'approve', T0 + 1));
  assert.deepEqual(initiator, { code: 'INITIATOR_CANNOT_REVIEW', status: 403, details: { reason: 'initiator' } });
  assert.deepEqual(codeOf(() => repo.decide(caseId, outsider.id, 'approve', T0 + 1)).details, {
    reason: 'user-of-another-project',
  });
  assert.equal(codeOf(() => repo.decide(caseId, 'nobody', 'approve', T0 + 1)).code, 'USER_NOT_FOUND');
  assert.equal(codeOf(() => repo.decide('no-case', b.id, 'approve', T0 + 1)).code, 'APPROVAL_CASE_NOT_FOUND');
  // Expired: refused, whoever asks.
  assert.deepEqual(codeOf(() => repo.decide(caseId, b.id, 'approve', T0 + CASE_TTL)).details, {
    reason: 'case-not-pending',
  });
  await w(() => repo.decide(caseId, b.id, 'reject', T0 + 2));
  assert.equal(caseStatusAt(repo.getCase(caseId)!, T0 + 3), 'rejected');
  store.close();
});

test('same reference with another body: 409 CONFLICT, for a case and for a review; the same body passes', async () => {
  const { store, repo, w } = await setup();
  await w(() => repo.resolve(hold({ reference: 'key:x', bodyHash: 'h1' })));
  assert.deepEqual(
    codeOf(() => repo.checkReference('k1', 'key:x', 'h2')),
    { code: 'CONFLICT', status: 409 },
  );
  repo.checkReference('k1', 'key:x', 'h1');
  repo.checkReference('k2', 'key:x', 'h2'); // another key's reference is its own
  await w(() => repo.resolve(review({ reference: 'key:y', bodyHash: 'h1' })));
  assert.deepEqual(
    codeOf(() => repo.checkReference('k1', 'key:y', 'h2')),
    { code: 'CONFLICT', status: 409 },
  );
  repo.checkReference('k1', 'key:y', 'h1');
  store.close();
});

test('review: pending required with reviewId; approved within five minutes proceeds once; then a new review', async () => {
  const { store, repo, w } = await setup({ bind: false });
  const first = (await w(() => repo.resolve(review()))) as { kind: string; reviewId: string; status: string };
  assert.equal(first.kind, 'required');
  assert.equal(first.status, 'pending');
  const again = (await w(() => repo.resolve(review({ at: T0 + 1 })))) as { reviewId: string };
  assert.equal(again.reviewId, first.reviewId);
  const approved = await w(() => repo.decideReview(first.reviewId, 'approve', T0 + 10));
  assert.equal(reviewStatusAt(approved!, T0 + 10), 'approved');
  // A later reject leaves it approved.
  assert.equal(
    reviewStatusAt((await w(() => repo.decideReview(first.reviewId, 'reject', T0 + 11)))!, T0 + 11),
    'approved',
  );
  assert.deepEqual(await w(() => repo.resolve(review({ at: T0 + 10 + 5 * 60_000 - 1 }))), {
    kind: 'proceed',
    reviewId: first.reviewId,
  });
  assert.equal(reviewStatusAt(repo.getReview(first.reviewId)!, T0 + 400_000), 'consumed');
  const next = (await w(() => repo.resolve(review({ at: T0 + 400_000 })))) as { reviewId: string; status: string };
  assert.notEqual(next.reviewId, first.reviewId, 'consumed: a new review');
  assert.equal(next.status, 'pending');
  store.close();
});

test('review: an approval not used within five minutes expires, and the resend opens a new review', async () => {
  const { store, repo, w } = await setup({ bind: false });
  const { reviewId } = (await w(() => repo.resolve(review()))) as { reviewId: string };
  await w(() => repo.decideReview(reviewId, 'approve', T0 + 10));
  const at = T0 + 10 + 5 * 60_000;
  assert.equal(reviewStatusAt(repo.getReview(reviewId)!, at), 'expired');
  const next = (await w(() => repo.resolve(review({ at })))) as { kind: string; reviewId: string };
  assert.equal(next.kind, 'required');
  assert.notEqual(next.reviewId, reviewId);
  store.close();
});

test('review: a late approval leaves it expired; rejected answers rejected for its lifetime, then a new review', async () => {
  const { store, repo, w } = await setup({ bind: false });
  const { reviewId: late } = (await w(() => repo.resolve(review({ reference: 'key:late' })))) as { reviewId: string };
  const lateAnswer = await w(() => repo.decideReview(late, 'approve', T0 + REVIEW_TTL));
  assert.equal(reviewStatusAt(lateAnswer!, T0 + REVIEW_TTL), 'expired');
  const { reviewId: rej } = (await w(() => repo.resolve(review({ reference: 'key:rej' })))) as { reviewId: string };
  await w(() => repo.decideReview(rej, 'reject', T0 + 5));
  assert.deepEqual(await w(() => repo.resolve(review({ reference: 'key:rej', at: T0 + REVIEW_TTL - 1 }))), {
    kind: 'rejected',
    reviewId: rej,
  });
  const after = (await w(() => repo.resolve(review({ reference: 'key:rej', at: T0 + REVIEW_TTL })))) as {
    kind: string;
    reviewId: string;
  };
  assert.equal(after.kind, 'required');
  assert.notEqual(after.reviewId, rej);
  store.close();
});

test('assignments: expectedRevision, and a change that strands pending cases needs force, which invalidates them', async () => {
  const { store, repo, w, scope, a, b } = await setup();
  assert.deepEqual(
    codeOf(() =>
      repo.putAssignment({ scopeId: scope.id, userId: a.id, roles: [], expectedRevision: 0, force: false, at: T0 }),
    ),
    { code: 'REVISION_CONFLICT', status: 409, details: { revision: 1 } },
  );
  const { caseId } = (await w(() => repo.resolve(hold()))) as { caseId: string };
  // a, b and d hold approver: without a, two remain (threshold 2): not affected.
  const ok = await w(() =>
    repo.putAssignment({ scopeId: scope.id, userId: a.id, roles: [], expectedRevision: 1, force: false, at: T0 + 1 }),
  );
  assert.equal(ok.assignment.revision, 2);
  assert.deepEqual(ok.invalidatedCaseIds, []);
  // Without b too, only d: the case could never complete.
  const refusal = codeOf(() =>
    repo.putAssignment({ scopeId: scope.id, userId: b.id, roles: [], expectedRevision: 1, force: false, at: T0 + 2 }),
  );
  assert.deepEqual(refusal, { code: 'APPROVAL_CASES_AFFECTED', status: 409, details: { affectedCaseIds: [caseId] } });
  assert.equal(repo.getAssignment(scope.id, b.id)!.revision, 1, 'refused: nothing written');
  const forced = await w(() =>
    repo.putAssignment({ scopeId: scope.id, userId: b.id, roles: [], expectedRevision: 1, force: true, at: T0 + 2 }),
  );
  assert.deepEqual(forced.invalidatedCaseIds, [caseId]);
  assert.equal(caseStatusAt(repo.getCase(caseId)!, T0 + 3), 'invalidated');
  store.close();
});

test('a case keeps the scope it opened with; unbinding the wallet forbids new holds on it', async () => {
  const { store, repo, w } = await setup();
  const { caseId } = (await w(() => repo.resolve(hold()))) as { caseId: string };
  await w(() => repo.bindWallet('w1', null, T0 + 1));
  assert.equal(repo.scopeOfWallet('w1'), undefined);
  assert.deepEqual(await w(() => repo.resolve(hold({ at: T0 + 2 }))), { kind: 'forbidden' });
  assert.ok(repo.getCase(caseId)!.scopeId);
  store.close();
});

test('lists: by key or project, newest first, filtered by status as of now and by wallet', async () => {
  const { store, repo, w } = await setup();
  await w(() => repo.bindWallet('w2', repo.scopeOfWallet('w1')!, T0));
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) {
    const o = (await w(() => repo.resolve(hold({ reference: `key:${i}`, walletId: i === 2 ? 'w2' : 'w1' })))) as {
      caseId: string;
    };
    ids.push(o.caseId);
  }
  await w(() => repo.resolve(hold({ apiKeyId: 'k2', reference: 'key:z' })));
  await w(() => repo.cancelCase(ids[0]!, T0 + 1));
  const list = (q: Partial<Parameters<typeof repo.listCases>[0]>) =>
    repo.listCases({ by: 'key', owner: 'k1', limit: 10, at: T0 + 2, ...q }).map((c) => c.id);
  assert.deepEqual(list({}), [ids[2], ids[1], ids[0]]);
  assert.deepEqual(list({ status: 'cancelled' }), [ids[0]]);
  assert.deepEqual(list({ status: 'pending' }), [ids[2], ids[1]]);
  assert.deepEqual(list({ status: 'expired', at: T0 + CASE_TTL }), [ids[2], ids[1]]);
  assert.deepEqual(list({ walletId: 'w2' }), [ids[2]]);
  assert.deepEqual(list({ before: repo.getCase(ids[2]!)!.seq, limit: 1 }), [ids[1]]);
  assert.equal(repo.listCases({ by: 'project', owner: 'p1', limit: 10, at: T0 }).length, 4);
  store.close();
});

test('restore: a use whose signature failed is undone, and the approval lets the next identical request through', async () => {
  const { store, repo, w, a, b } = await setup();
  const { caseId } = (await w(() => repo.resolve(hold()))) as { caseId: string };
  await w(() => repo.decide(caseId, a.id, 'approve', T0 + 1));
  await w(() => repo.decide(caseId, b.id, 'approve', T0 + 2));
  assert.deepEqual(await w(() => repo.resolve(hold({ at: T0 + 3 }))), { kind: 'proceed', caseId });
  // Another key's restore, or a restore of another use, changes nothing.
  await w(() => repo.restore('k2', { caseId }, T0 + 3));
  await w(() => repo.restore('k1', { caseId }, T0 + 4));
  assert.equal(repo.getCase(caseId)!.usedAt, T0 + 3);
  await w(() => repo.restore('k1', { caseId }, T0 + 3));
  assert.equal(repo.getCase(caseId)!.usedAt, null);
  assert.deepEqual(await w(() => repo.resolve(hold({ at: T0 + 5 }))), { kind: 'proceed', caseId });

  const { reviewId } = (await w(() => repo.resolve(review({ reference: 'key:r' })))) as { reviewId: string };
  await w(() => repo.decideReview(reviewId, 'approve', T0 + 10));
  assert.deepEqual(await w(() => repo.resolve(review({ reference: 'key:r', at: T0 + 11 }))), {
    kind: 'proceed',
    reviewId,
  });
  await w(() => repo.restore('k1', { reviewId }, T0 + 11));
  assert.equal(reviewStatusAt(repo.getReview(reviewId)!, T0 + 12), 'approved');
  assert.deepEqual(await w(() => repo.resolve(review({ reference: 'key:r', at: T0 + 12 }))), {
    kind: 'proceed',
    reviewId,
  });
  store.close();
});
