/**
 * `/v1/permissions-v2` policies and the operator's permission routes, black-box over HTTP against the whole service:
 * permissions off (lists empty, writes refused), CRUD, validation, revisions, versions, activation over the same
 * selector, deletion, ownership (another key's policy is a 404), development and production keys kept apart, and the
 * production review from ineligible to requested to published (and dismissed).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type Partner, startTestService, type TestService } from './helpers/service.ts';

let svc: TestService;

before(async () => {
  svc = await startTestService();
});
after(async () => {
  await svc?.stop();
});

const BASE = '/permissions-v2';

const capPolicy = (name: string, networks?: string[], cap = '1000') => ({
  name,
  layer: 'guardrail',
  scope: { walletType: 'EVM', ...(networks ? { networks } : {}) },
  rules: [
    {
      id: 'cap',
      effect: 'deny',
      actions: ['transfer'],
      conditions: [{ fact: 'value', op: 'gt', value: cap }],
    },
  ],
});

async function enable(keyId: string, enabled = true) {
  const r = await svc.admin('PUT', `/api-keys/${keyId}/permissions`, { enabled, approvals: false });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body;
}

/** A development key with permissions on. */
async function devPartner(): Promise<Partner> {
  const p = await svc.newPartner();
  await enable(p.keyId);
  return p;
}

async function create(p: Partner, policy: unknown) {
  const r = await svc.v1(p.secret, 'POST', `${BASE}/policies`, { policy });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  return r.body;
}

describe('permissions off', () => {
  test('lists are empty, POST /policies is refused with 403 PERMISSIONS_NOT_ENABLED, validation still answers', async () => {
    const p = await svc.newPartner();
    const list = await svc.v1(p.secret, 'GET', `${BASE}/policies`);
    assert.equal(list.status, 200);
    assert.deepEqual(list.body, { data: [], pagination: { cursor: null, hasMore: false, limit: 20 } });
    const post = await svc.v1(p.secret, 'POST', `${BASE}/policies`, { policy: capPolicy('x') });
    assert.equal(post.status, 403);
    assert.equal(post.body.code, 'PERMISSIONS_NOT_ENABLED');
    const v = await svc.v1(p.secret, 'POST', `${BASE}/policies/validate`, { policy: capPolicy('x') });
    assert.deepEqual(v.body, { valid: true, errors: [] });
    const perms = await svc.admin('GET', `/api-keys/${p.keyId}/permissions`);
    assert.equal(perms.body.enabled, false);
    assert.equal(perms.body.updatedAt, null);
  });

  test('turning permissions off hides existing policies: the list is empty and a read is 403', async () => {
    const p = await devPartner();
    const created = await create(p, capPolicy('hidden'));
    await enable(p.keyId, false);
    const list = await svc.v1(p.secret, 'GET', `${BASE}/policies`);
    assert.deepEqual(list.body.data, []);
    const read = await svc.v1(p.secret, 'GET', `${BASE}/policies/${created.id}`);
    assert.equal(read.status, 403);
    assert.equal(read.body.code, 'PERMISSIONS_NOT_ENABLED');
    await enable(p.keyId);
    assert.equal((await svc.v1(p.secret, 'GET', `${BASE}/policies/${created.id}`)).status, 200);
  });
});

describe('policies', () => {
  test('create answers a 201 draft at version 1, revision 1; get and list show it', async () => {
    const p = await devPartner();
    const doc = capPolicy('base-cap', ['eip155:8453', 'eip155:1']);
    const created = await create(p, doc);
    assert.equal(created.status, 'draft');
    assert.equal(created.version, 1);
    assert.equal(created.revision, 1);
    assert.equal(created.apiKeyId, p.keyId);
    assert.equal(created.name, 'base-cap');
    assert.deepEqual(created.scope, doc.scope);
    assert.deepEqual(created.rules, doc.rules);
    const got = await svc.v1(p.secret, 'GET', `${BASE}/policies/${created.id}`);
    assert.deepEqual(got.body, created);
    const list = await svc.v1(p.secret, 'GET', `${BASE}/policies`);
    assert.deepEqual(
      list.body.data.map((x: { id: string }) => x.id),
      [created.id],
    );
  });

  test('the list pages with its cursor, oldest first, and filters by status', async () => {
    const p = await devPartner();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await create(p, capPolicy(`p${i}`, [`eip155:${i + 1}`]))).id);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const q: string = cursor ? `?limit=2&cursor=${cursor}` : '?limit=2';
      const page = await svc.v1(p.secret, 'GET', `${BASE}/policies${q}`);
      assert.equal(page.status, 200);
      seen.push(...page.body.data.map((x: { id: string }) => x.id));
      cursor = page.body.pagination.cursor;
    } while (cursor);
    assert.deepEqual(seen, ids);
    const r = await svc.v1(p.secret, 'POST', `${BASE}/policies/${ids[1]}/activate`, { expectedRevision: 1 });
    assert.equal(r.status, 200);
    const active = await svc.v1(p.secret, 'GET', `${BASE}/policies?status=active`);
    assert.deepEqual(
      active.body.data.map((x: { id: string }) => x.id),
      [ids[1]],
    );
    const bad = await svc.v1(p.secret, 'GET', `${BASE}/policies?cursor=bm9wZQ`);
    assert.equal(bad.status, 400);
    assert.equal(bad.body.code, 'INVALID_CURSOR');
  });

  test('validate answers 200 {valid:false, errors} with JSON pointers and saves nothing', async () => {
    const p = await devPartner();
    const bad = { ...capPolicy('x'), extra: 1, rules: [{ id: 'r', effect: 'allow', actions: ['all'] }] };
    const v = await svc.v1(p.secret, 'POST', `${BASE}/policies/validate`, { policy: bad });
    assert.equal(v.status, 200);
    assert.equal(v.body.valid, false);
    assert.ok(
      v.body.errors.some(
        (e: { code: string; path: string }) => e.code === 'policy_schema_field_unknown' && e.path === '/extra',
      ),
    );
    assert.ok(v.body.errors.some((e: { path: string }) => e.path.startsWith('/rules/0/actions')));
    const list = await svc.v1(p.secret, 'GET', `${BASE}/policies`);
    assert.deepEqual(list.body.data, []);
  });

  test('an invalid document is a 400 whose code is errors[0].code; delegation is permissions_v2_extension_unavailable', async () => {
    const p = await devPartner();
    const r = await svc.v1(p.secret, 'POST', `${BASE}/policies`, {
      policy: { ...capPolicy('x'), scope: { walletType: 'EVM', networks: ['eip155:1', 'eip155:1'] } },
    });
    assert.equal(r.status, 400);
    assert.equal(r.body.code, 'partner_policy_schema_invalid');
    assert.equal(r.body.code, r.body.errors[0].code);
    assert.equal(r.body.errors[0].path, '/scope/networks/1');
    assert.equal(typeof r.body.errors[0].message, 'string');
    const d = await svc.v1(p.secret, 'POST', `${BASE}/policies`, {
      policy: { ...capPolicy('x'), layer: 'delegation' },
    });
    assert.equal(d.status, 400);
    assert.equal(d.body.code, 'permissions_v2_extension_unavailable');
    assert.equal(d.body.errors[0].path, '/layer');
    const l = await svc.v1(p.secret, 'POST', `${BASE}/policies`, { policy: { ...capPolicy('x'), layer: 'other' } });
    assert.equal(l.body.code, 'layer_invalid');
    const notObject = await svc.v1(p.secret, 'POST', `${BASE}/policies`, { policy: 'a policy' });
    assert.equal(notObject.status, 400);
    const list = await svc.v1(p.secret, 'GET', `${BASE}/policies`);
    assert.deepEqual(list.body.data, [], 'nothing was saved');
  });

  test('PUT makes the next version; a stale expectedRevision is 409 REVISION_CONFLICT; versions list every one', async () => {
    const p = await devPartner();
    const created = await create(p, capPolicy('v', ['eip155:1']));
    const put = await svc.v1(p.secret, 'PUT', `${BASE}/policies/${created.id}`, {
      policy: capPolicy('v', ['eip155:1'], '2000'),
      expectedRevision: 1,
    });
    assert.equal(put.status, 200, JSON.stringify(put.body));
    assert.equal(put.body.version, 2);
    assert.equal(put.body.revision, 2);
    assert.equal(put.body.status, 'draft');
    assert.equal(put.body.rules[0].conditions[0].value, '2000');
    const stale = await svc.v1(p.secret, 'PUT', `${BASE}/policies/${created.id}`, {
      policy: capPolicy('v', ['eip155:1'], '3000'),
      expectedRevision: 1,
    });
    assert.equal(stale.status, 409);
    assert.equal(stale.body.code, 'REVISION_CONFLICT');
    assert.equal(stale.body.errors[0].code, 'REVISION_CONFLICT');
    assert.equal(stale.body.revision, 2);
    const staleActivate = await svc.v1(p.secret, 'POST', `${BASE}/policies/${created.id}/activate`, {
      expectedRevision: 1,
    });
    assert.equal(staleActivate.body.code, 'REVISION_CONFLICT');
    const versions = await svc.v1(p.secret, 'GET', `${BASE}/policies/${created.id}/versions`);
    assert.equal(versions.status, 200);
    assert.deepEqual(
      versions.body.data.map(
        (v: { version: number; policy: { rules: Array<{ conditions: Array<{ value: string }> }> } }) => [
          v.version,
          v.policy.rules[0]!.conditions[0]!.value,
        ],
      ),
      [
        [2, '2000'],
        [1, '1000'],
      ],
    );
    const page = await svc.v1(p.secret, 'GET', `${BASE}/policies/${created.id}/versions?limit=1`);
    assert.equal(page.body.data[0].version, 2);
    const next = await svc.v1(
      p.secret,
      'GET',
      `${BASE}/policies/${created.id}/versions?limit=1&cursor=${page.body.pagination.cursor}`,
    );
    assert.equal(next.body.data[0].version, 1);
    assert.equal(next.body.pagination.hasMore, false);
  });

  test('PUT on an active policy makes its next version, active at once', async () => {
    const p = await devPartner();
    const created = await create(p, capPolicy('live', ['eip155:8453']));
    const act = await svc.v1(p.secret, 'POST', `${BASE}/policies/${created.id}/activate`, { expectedRevision: 1 });
    assert.equal(act.body.status, 'active');
    assert.equal(act.body.revision, 2);
    const put = await svc.v1(p.secret, 'PUT', `${BASE}/policies/${created.id}`, {
      policy: capPolicy('live', ['eip155:8453'], '5'),
      expectedRevision: 2,
    });
    assert.equal(put.status, 200);
    assert.equal(put.body.status, 'active');
    assert.equal(put.body.version, 2);
    assert.equal(put.body.revision, 3);
    // Another active policy cannot be moved onto its selector.
    const other = await create(p, capPolicy('other', ['eip155:1']));
    await svc.v1(p.secret, 'POST', `${BASE}/policies/${other.id}/activate`, { expectedRevision: 1 });
    const clash = await svc.v1(p.secret, 'PUT', `${BASE}/policies/${other.id}`, {
      policy: capPolicy('other', ['eip155:8453']),
      expectedRevision: 2,
    });
    assert.equal(clash.status, 409);
    assert.equal(clash.body.code, 'POLICY_SELECTOR_ACTIVE');
    assert.equal(clash.body.policyId, created.id);
  });

  test('activating over an active policy of the same selector (order ignored) makes its next version', async () => {
    const p = await devPartner();
    const first = await create(p, capPolicy('first', ['eip155:1', 'eip155:8453']));
    await svc.v1(p.secret, 'POST', `${BASE}/policies/${first.id}/activate`, { expectedRevision: 1 });
    const second = await create(p, capPolicy('second', ['eip155:8453', 'eip155:1'], '7'));
    const act = await svc.v1(p.secret, 'POST', `${BASE}/policies/${second.id}/activate`, { expectedRevision: 1 });
    assert.equal(act.status, 200);
    assert.equal(act.body.id, first.id, 'the answer is the policy that was active');
    assert.equal(act.body.version, 2);
    assert.equal(act.body.name, 'second');
    assert.equal(act.body.rules[0].conditions[0].value, '7');
    const gone = await svc.v1(p.secret, 'GET', `${BASE}/policies/${second.id}`);
    assert.equal(gone.status, 404);
    const active = await svc.v1(p.secret, 'GET', `${BASE}/policies?status=active`);
    assert.deepEqual(
      active.body.data.map((x: { id: string }) => x.id),
      [first.id],
    );
    // A different wallet type or network set is a policy of its own.
    const third = await create(p, capPolicy('third', ['eip155:1']));
    const own = await svc.v1(p.secret, 'POST', `${BASE}/policies/${third.id}/activate`, { expectedRevision: 1 });
    assert.equal(own.body.id, third.id);
    assert.equal(own.body.status, 'active');
  });

  test('deactivate; delete a draft or inactive policy (204), an active one is 409 POLICY_ACTIVE', async () => {
    const p = await devPartner();
    const c = await create(p, capPolicy('d', ['eip155:10']));
    await svc.v1(p.secret, 'POST', `${BASE}/policies/${c.id}/activate`, { expectedRevision: 1 });
    const del = await svc.v1(p.secret, 'DELETE', `${BASE}/policies/${c.id}`);
    assert.equal(del.status, 409);
    assert.equal(del.body.code, 'POLICY_ACTIVE');
    const off = await svc.v1(p.secret, 'POST', `${BASE}/policies/${c.id}/deactivate`, { expectedRevision: 2 });
    assert.equal(off.body.status, 'inactive');
    assert.equal((await svc.v1(p.secret, 'DELETE', `${BASE}/policies/${c.id}`)).status, 204);
    assert.equal((await svc.v1(p.secret, 'GET', `${BASE}/policies/${c.id}`)).status, 404);
    const draft = await create(p, capPolicy('draft'));
    assert.equal((await svc.v1(p.secret, 'DELETE', `${BASE}/policies/${draft.id}`)).status, 204);
    assert.equal((await svc.v1(p.secret, 'DELETE', `${BASE}/policies/${draft.id}`)).status, 404);
  });

  test("another key's policy answers 404 exactly as a missing one, on every route", async () => {
    const owner = await devPartner();
    const other = await devPartner();
    const c = await create(owner, capPolicy('mine'));
    const missing = '00000000-0000-4000-8000-000000000000';
    const strip = (b: Record<string, unknown>) => ({ ...b, requestId: undefined });
    for (const [method, suffix, body] of [
      ['GET', '', undefined],
      ['GET', '/versions', undefined],
      ['PUT', '', { policy: capPolicy('x'), expectedRevision: 1 }],
      ['POST', '/activate', { expectedRevision: 1 }],
      ['POST', '/deactivate', { expectedRevision: 1 }],
      ['DELETE', '', undefined],
    ] as const) {
      const theirs = await svc.v1(other.secret, method, `${BASE}/policies/${c.id}${suffix}`, body);
      const none = await svc.v1(other.secret, method, `${BASE}/policies/${missing}${suffix}`, body);
      assert.equal(theirs.status, 404, `${method} ${suffix}`);
      assert.deepEqual(strip(theirs.body), strip(none.body), `${method} ${suffix}`);
    }
    assert.equal((await svc.v1(owner.secret, 'GET', `${BASE}/policies/${c.id}`)).body.revision, 1);
  });
});

describe('development and production keys', () => {
  async function project() {
    const dev = await devPartner();
    const k = await svc.admin('POST', `/projects/${dev.projectId}/api-keys`, { environment: 'production' });
    assert.equal(k.status, 201);
    const prod: Partner = { projectId: dev.projectId, keyId: k.body.id, secret: k.body.secretKey };
    return { dev, prod };
  }

  test('a production key writes nothing and does not see the development key policies', async () => {
    const { dev, prod } = await project();
    const perms = await enable(prod.keyId);
    assert.equal(perms.productionReview.status, 'awaiting_review');
    await create(dev, capPolicy('dev-only'));
    const list = await svc.v1(prod.secret, 'GET', `${BASE}/policies`);
    assert.deepEqual(list.body.data, []);
    const post = await svc.v1(prod.secret, 'POST', `${BASE}/policies`, { policy: capPolicy('x') });
    assert.equal(post.status, 403);
    assert.equal(post.body.code, 'PRODUCTION_KEY_READ_ONLY');
  });

  test('production review: ineligible, then requested, then published; republishing makes next versions', async () => {
    const { dev, prod } = await project();
    // Permissions off on the production key: ineligible.
    let r = await svc.v1(prod.secret, 'POST', `${BASE}/production-review`);
    assert.equal(r.status, 409);
    assert.equal(r.body.code, 'PRODUCTION_REVIEW_INELIGIBLE');
    assert.equal(r.body.status, 'ineligible');
    await enable(prod.keyId);
    // Awaiting review, but no development policy is active: ineligible.
    await create(dev, capPolicy('draft-only'));
    r = await svc.v1(prod.secret, 'POST', `${BASE}/production-review`);
    assert.equal(r.body.status, 'ineligible');
    // A development key cannot ask.
    r = await svc.v1(dev.secret, 'POST', `${BASE}/production-review`);
    assert.equal(r.body.status, 'ineligible');
    const a = await create(dev, capPolicy('a', ['eip155:1']));
    await svc.v1(dev.secret, 'POST', `${BASE}/policies/${a.id}/activate`, { expectedRevision: 1 });
    // Not requested yet: the operator has nothing to publish.
    const early = await svc.admin('POST', `/api-keys/${prod.keyId}/production-review/publish`, {
      reason: 'ok',
      by: 'ops',
    });
    assert.equal(early.status, 409);
    assert.equal(early.body.code, 'PRODUCTION_REVIEW_NOT_REQUESTED');
    r = await svc.v1(prod.secret, 'POST', `${BASE}/production-review`);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.deepEqual(r.body, { status: 'requested' });
    r = await svc.v1(prod.secret, 'POST', `${BASE}/production-review`);
    assert.equal(r.body.status, 'ineligible', 'already requested');
    const pub = await svc.admin('POST', `/api-keys/${prod.keyId}/production-review/publish`, {
      reason: 'reviewed the caps',
      by: 'alice',
    });
    assert.equal(pub.status, 200, JSON.stringify(pub.body));
    assert.equal(pub.body.productionReview.status, 'published');
    assert.equal(pub.body.productionReview.decidedBy, 'alice');
    assert.equal(pub.body.productionReview.reason, 'reviewed the caps');
    assert.equal(pub.body.published.length, 1);
    assert.equal(pub.body.published[0].sourcePolicyId, a.id);
    const prodList = await svc.v1(prod.secret, 'GET', `${BASE}/policies`);
    assert.equal(prodList.body.data.length, 1);
    const copy = prodList.body.data[0];
    assert.notEqual(copy.id, a.id, 'the production key has its own record');
    assert.equal(copy.apiKeyId, prod.keyId);
    assert.equal(copy.status, 'active');
    assert.equal(copy.sourcePolicyId, a.id);
    assert.deepEqual(copy.rules, a.rules);
    assert.equal((await svc.v1(dev.secret, 'GET', `${BASE}/policies/${copy.id}`)).status, 404);
    assert.equal((await svc.v1(prod.secret, 'GET', `${BASE}/policies/${a.id}`)).status, 404);

    // The development policy changes; a new review republishes it as the copy's next version.
    await svc.v1(dev.secret, 'PUT', `${BASE}/policies/${a.id}`, {
      policy: capPolicy('a', ['eip155:1'], '1'),
      expectedRevision: 2,
    });
    await enable(prod.keyId); // the operator opens a new review window
    r = await svc.v1(prod.secret, 'POST', `${BASE}/production-review`);
    assert.equal(r.status, 200);
    const again = await svc.admin('POST', `/api-keys/${prod.keyId}/production-review/publish`, {
      reason: 'new cap',
      by: 'alice',
    });
    assert.equal(again.body.published[0].id, copy.id);
    assert.equal(again.body.published[0].version, 2);
    const after = await svc.v1(prod.secret, 'GET', `${BASE}/policies/${copy.id}`);
    assert.equal(after.body.rules[0].conditions[0].value, '1');
  });

  test('production review dismissed: nothing is published', async () => {
    const { dev, prod } = await project();
    await enable(prod.keyId);
    const a = await create(dev, capPolicy('a'));
    await svc.v1(dev.secret, 'POST', `${BASE}/policies/${a.id}/activate`, { expectedRevision: 1 });
    assert.equal((await svc.v1(prod.secret, 'POST', `${BASE}/production-review`)).status, 200);
    const d = await svc.admin('POST', `/api-keys/${prod.keyId}/production-review/dismiss`, {
      reason: 'cap too high',
      by: 'bob',
    });
    assert.equal(d.status, 200);
    assert.equal(d.body.productionReview.status, 'dismissed');
    assert.equal(d.body.productionReview.decidedBy, 'bob');
    assert.deepEqual((await svc.v1(prod.secret, 'GET', `${BASE}/policies`)).body.data, []);
    const twice = await svc.admin('POST', `/api-keys/${prod.keyId}/production-review/dismiss`, {
      reason: 'x',
      by: 'bob',
    });
    assert.equal(twice.body.code, 'PRODUCTION_REVIEW_NOT_REQUESTED');
    assert.equal((await svc.v1(prod.secret, 'POST', `${BASE}/production-review`)).body.status, 'ineligible');
  });
});

describe('bad input', () => {
  test('bad ids, bodies, revisions and admin calls answer 4xx with codes and change nothing', async () => {
    const p = await devPartner();
    const c = await create(p, capPolicy('keep'));
    const cases: Array<[string, string, unknown, number, string]> = [
      ['PUT', `${BASE}/policies/${c.id}`, { policy: capPolicy('x') }, 400, 'INVALID_REQUEST'],
      ['PUT', `${BASE}/policies/${c.id}`, { policy: capPolicy('x'), expectedRevision: 0 }, 400, 'INVALID_REQUEST'],
      ['PUT', `${BASE}/policies/${c.id}`, { policy: capPolicy('x'), expectedRevision: '1' }, 400, 'INVALID_REQUEST'],
      [
        'PUT',
        `${BASE}/policies/${c.id}`,
        { policy: capPolicy('x'), expectedRevision: 1, x: 1 },
        400,
        'INVALID_REQUEST',
      ],
      ['POST', `${BASE}/policies/${c.id}/activate`, {}, 400, 'INVALID_REQUEST'],
      ['POST', `${BASE}/policies/${c.id}/activate`, { expectedRevision: 1, force: 'yes' }, 400, 'INVALID_REQUEST'],
      ['POST', `${BASE}/policies`, {}, 400, 'INVALID_REQUEST'],
      ['POST', `${BASE}/policies`, { policy: [] }, 400, 'INVALID_REQUEST'],
      ['POST', `${BASE}/policies`, { policy: { name: 'x' } }, 400, 'layer_invalid'],
      [
        'POST',
        `${BASE}/policies`,
        { policy: { ...capPolicy('x'), rules: 'none' } },
        400,
        'partner_policy_schema_invalid',
      ],
      ['GET', `${BASE}/policies/${'x'.repeat(129)}`, undefined, 400, 'INVALID_REQUEST'],
      ['GET', `${BASE}/policies?limit=0`, undefined, 400, 'INVALID_REQUEST'],
      ['GET', `${BASE}/policies?status=deleted`, undefined, 400, 'INVALID_REQUEST'],
      ['GET', `${BASE}/policies/${c.id}/versions?cursor=zz`, undefined, 400, 'INVALID_CURSOR'],
    ];
    for (const [method, route, body, status, code] of cases) {
      const r = await svc.v1(p.secret, method, route, body);
      assert.equal(r.status, status, `${method} ${route} ${JSON.stringify(body)}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.code, code, `${method} ${route} ${JSON.stringify(body)}`);
    }
    const after = await svc.v1(p.secret, 'GET', `${BASE}/policies/${c.id}`);
    assert.equal(after.body.revision, 1);
    assert.equal(after.body.version, 1);
    const admin: Array<[string, string, unknown, number, string]> = [
      ['PUT', `/api-keys/${p.keyId}/permissions`, { enabled: true }, 400, 'INVALID_REQUEST'],
      ['PUT', `/api-keys/${p.keyId}/permissions`, { enabled: 'yes', approvals: false }, 400, 'INVALID_REQUEST'],
      ['PUT', '/api-keys/nope/permissions', { enabled: true, approvals: false }, 404, 'API_KEY_NOT_FOUND'],
      ['GET', '/api-keys/nope/permissions', undefined, 404, 'API_KEY_NOT_FOUND'],
      ['POST', `/api-keys/${p.keyId}/production-review/publish`, { reason: ' ', by: 'x' }, 400, 'INVALID_REQUEST'],
      ['POST', `/api-keys/${p.keyId}/production-review/publish`, { reason: 'r' }, 400, 'INVALID_REQUEST'],
      [
        'POST',
        `/api-keys/${p.keyId}/production-review/publish`,
        { reason: 'r', by: 'b' },
        409,
        'PRODUCTION_REVIEW_NOT_REQUESTED',
      ],
      ['POST', '/api-keys/nope/production-review/dismiss', { reason: 'r', by: 'b' }, 404, 'API_KEY_NOT_FOUND'],
    ];
    for (const [method, route, body, status, code] of admin) {
      const r = await svc.admin(method, route, body);
      assert.equal(r.status, status, `${method} ${route}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.code, code, `${method} ${route}`);
    }
    assert.equal((await svc.admin('GET', `/api-keys/${p.keyId}/permissions`)).body.enabled, true);
  });
});

describe('the CLI verbs', () => {
  test('set-permissions, show-permissions, publish-review and dismiss-review as an operator runs them', async () => {
    const { execFile } = await import('node:child_process');
    const { promisify } = await import('node:util');
    const { ROOT } = await import('./helpers/service.ts');
    const cli = async (...args: string[]) =>
      (
        await promisify(execFile)(
          process.execPath,
          ['--import', 'tsx', 'bin/admin.ts', ...args, '--url', svc.adminUrl],
          {
            cwd: ROOT,
            env: { ...process.env, ADMIN_TOKEN: svc.adminToken },
          },
        )
      ).stdout;
    const dev = await devPartner();
    const k = await svc.admin('POST', `/projects/${dev.projectId}/api-keys`, { environment: 'production' });
    const prod: Partner = { projectId: dev.projectId, keyId: k.body.id, secret: k.body.secretKey };
    const set = await cli('set-permissions', prod.keyId, '--enabled', 'on');
    assert.match(set, /^policies\s+on/m);
    assert.match(set, /^review\s+awaiting_review$/m);
    const a = await create(dev, capPolicy('cli'));
    await svc.v1(dev.secret, 'POST', `${BASE}/policies/${a.id}/activate`, { expectedRevision: 1 });
    assert.equal((await svc.v1(prod.secret, 'POST', `${BASE}/production-review`)).status, 200);
    const pub = await cli('publish-review', prod.keyId, '--reason', 'checked', '--by', 'carol');
    assert.match(pub, /^review\s+published \(by carol at .*: checked\)$/m);
    assert.match(pub, new RegExp(`^published\\s+\\S+ version 1 \\(from ${a.id}\\)$`, 'm'));
    const show = await cli('show-permissions', prod.keyId, '--json');
    assert.equal(JSON.parse(show).productionReview.status, 'published');
    await assert.rejects(
      cli('dismiss-review', prod.keyId, '--reason', 'x', '--by', 'carol'),
      /PRODUCTION_REVIEW_NOT_REQUESTED/,
    );
    const off = await cli('set-permissions', dev.keyId, '--enabled', 'off');
    assert.match(off, /^policies\s+off/m);
  });
});
