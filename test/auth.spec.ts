import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { snapshotChanges, snapshotDb } from './helpers/bad-input-db.ts';
import { type EnvelopeExpectation, envelopeProblems, type RawResponse, rawRequest } from './helpers/bad-input-http.ts';
import { startTestService, type TestService } from './helpers/service.ts';

let svc: TestService;

before(async () => {
  svc = await startTestService();
});
after(async () => {
  await svc?.stop();
});

type Partner = { projectId: string; keyId: string; secret: string };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const MISSING = '00000000-0000-4000-8000-000000000000';
let counter = 0;
const uid = (p: string) => `${p}-${++counter}-${Date.now()}`;

/**
 * A request with exactly these headers (nothing added but a JSON content type when there is a body), to
 * the listener that serves `route` unless `base` names one.
 */
function call(method: string, route: string, headers: Record<string, string> = {}, body?: unknown, base?: string) {
  return rawRequest(base ?? svc.urlFor(route), {
    method,
    path: route,
    headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}
const key = (secret: string) => ({ 'x-api-key': secret });
const bearer = () => ({ authorization: `Bearer ${svc.adminToken}` });

/** The answer is this status and code, in the envelope `{code, message, requestId}` with `x-request-id`. */
function assertRefused(res: RawResponse, status: number, code: string, extra: EnvelopeExpectation = {}) {
  const problems = envelopeProblems(res, { ...extra, status, code });
  assert.deepEqual(problems, [], `${res.status} ${res.text}`);
}

async function createWallet(secret: string, type = 'EVM') {
  const r = await svc.v1(secret, 'POST', '/wallets', {
    type,
    userIdentifier: uid('auth'),
    userIdentifierType: 'CUSTOM_ID',
  });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  return r.body as { id: string; address: string; type: string };
}

async function newKey(projectId: string, environment: 'development' | 'production'): Promise<Partner> {
  const k = await svc.admin('POST', `/projects/${projectId}/api-keys`, { environment });
  assert.equal(k.status, 201, JSON.stringify(k.body));
  assert.equal(k.body.environment, environment);
  return { projectId, keyId: k.body.id, secret: k.body.secretKey };
}

const setAllowlist = (projectId: string, cidrs: unknown) =>
  svc.admin('PUT', `/projects/${projectId}/ip-allowlist`, { cidrs });
const listStatus = async (secret: string) => (await svc.v1(secret, 'GET', '/wallets')).status;

describe('API key authentication', () => {
  test('a missing key is 401 API_KEY_REQUIRED, an invalid one 403 INVALID_API_KEY, on every /v1 route, writing nothing', async () => {
    const p = await svc.newPartner();
    const w = await createWallet(p.secret);
    const fake = `sk_dev_${'A'.repeat(43)}`;
    const routes: Array<[string, string, unknown?]> = [
      ['GET', '/v1/wallets'],
      ['GET', `/v1/wallets/${w.id}`],
      ['POST', '/v1/wallets', { type: 'EVM', userIdentifier: uid('noauth'), userIdentifierType: 'EMAIL' }],
      ['PATCH', `/v1/wallets/${w.id}`, { userIdentifier: uid('noauth') }],
    ];
    const before = snapshotDb(svc.dataDir);
    for (const [method, route, body] of routes) {
      assertRefused(await call(method, route, {}, body), 401, 'API_KEY_REQUIRED');
      assertRefused(await call(method, route, key(''), body), 401, 'API_KEY_REQUIRED');
      // The secret sent as a bearer token is not an X-API-Key.
      assertRefused(await call(method, route, { authorization: `Bearer ${p.secret}` }, body), 401, 'API_KEY_REQUIRED', {
        forbidden: [p.secret],
      });
      for (const wrong of [fake, `${p.secret}x`, p.secret.slice(0, -1), 'k'.repeat(300), svc.adminToken]) {
        assertRefused(await call(method, route, key(wrong), body), 403, 'INVALID_API_KEY', { forbidden: [wrong] });
      }
    }
    assert.deepEqual(snapshotChanges(before, snapshotDb(svc.dataDir)), []);
    const r = await svc.v1(p.secret, 'GET', `/wallets/${w.id}`);
    assert.equal(r.status, 200);
  });

  test('development and production keys both work: create, read and list', async () => {
    const dev = await svc.newPartner({ environment: 'development' });
    const prod = await newKey(dev.projectId, 'production');
    for (const k of [dev, prod]) {
      const w = await createWallet(k.secret);
      const got = await svc.v1(k.secret, 'GET', `/wallets/${w.id}`);
      assert.equal(got.status, 200);
      assert.equal(got.body.address, w.address);
      const list = await svc.v1(k.secret, 'GET', '/wallets?limit=100');
      assert.equal(list.status, 200);
      assert.ok(list.body.data.some((x: { id: string }) => x.id === w.id));
    }
  });

  test('rotation: the old secret is refused at once; the new one sees the same wallets; sibling keys are untouched', async () => {
    const p = await svc.newPartner();
    const sibling = await newKey(p.projectId, 'production');
    const w1 = await createWallet(p.secret);
    const w2 = await createWallet(p.secret, 'SOLANA');
    const listBefore = await svc.v1(p.secret, 'GET', '/wallets?limit=100');
    assert.equal(listBefore.status, 200);

    const rot = await call('POST', `/admin/v1/api-keys/${p.keyId}/rotate`, bearer());
    assert.equal(rot.status, 200, rot.text);
    const body = rot.body as { id: string; secretKey: string };
    assert.deepEqual(Object.keys(body).sort(), ['id', 'secretKey']);
    assert.equal(body.id, p.keyId);
    assert.notEqual(body.secretKey, p.secret);

    for (const route of ['/v1/wallets', `/v1/wallets/${w1.id}`]) {
      assertRefused(await call('GET', route, key(p.secret)), 403, 'INVALID_API_KEY', { forbidden: [p.secret] });
    }
    for (const w of [w1, w2]) {
      const got = await svc.v1(body.secretKey, 'GET', `/wallets/${w.id}`);
      assert.equal(got.status, 200);
      assert.equal(got.body.address, w.address);
    }
    const listAfter = await svc.v1(body.secretKey, 'GET', '/wallets?limit=100');
    assert.equal(listAfter.status, 200);
    assert.deepEqual(listAfter.body, listBefore.body);
    assert.equal(await listStatus(sibling.secret), 200);

    // A second rotation retires the first new secret in turn.
    const again = await svc.admin('POST', `/api-keys/${p.keyId}/rotate`);
    assert.equal(again.status, 200);
    assert.equal(await listStatus(body.secretKey), 403);
    assert.equal(await listStatus(again.body.secretKey), 200);
  });

  test('deleting a project: 204, its keys are refused, another project keeps working, the wallets stay', async () => {
    const doomed = await svc.newPartner();
    const doomedProd = await newKey(doomed.projectId, 'production');
    const w = await createWallet(doomed.secret);
    const other = await svc.newPartner();
    const ow = await createWallet(other.secret);

    const del = await call('DELETE', `/admin/v1/projects/${doomed.projectId}`, bearer());
    assert.equal(del.status, 204);
    assert.equal(del.text, '');

    for (const k of [doomed, doomedProd]) {
      assertRefused(await call('GET', '/v1/wallets', key(k.secret)), 403, 'INVALID_API_KEY', { forbidden: [k.secret] });
      assertRefused(await call('GET', `/v1/wallets/${w.id}`, key(k.secret)), 403, 'INVALID_API_KEY');
    }
    const got = await svc.v1(other.secret, 'GET', `/wallets/${ow.id}`);
    assert.equal(got.status, 200);
    assert.equal(got.body.address, ow.address);

    // The deleted project is gone for the admin verbs too.
    assertRefused(await call('DELETE', `/admin/v1/projects/${doomed.projectId}`, bearer()), 404, 'PROJECT_NOT_FOUND');
    assertRefused(await call('POST', `/admin/v1/api-keys/${doomed.keyId}/rotate`, bearer()), 404, 'API_KEY_NOT_FOUND');
    assertRefused(
      await call('POST', `/admin/v1/projects/${doomed.projectId}/api-keys`, bearer(), { environment: 'development' }),
      404,
      'PROJECT_NOT_FOUND',
    );
    assertRefused(
      await call('PUT', `/admin/v1/projects/${doomed.projectId}/ip-allowlist`, bearer(), { cidrs: [] }),
      404,
      'PROJECT_NOT_FOUND',
    );

    // Wallets stay: the rows are still in the service database.
    const db = new Database(path.join(svc.dataDir, 'service.db'), { readonly: true });
    try {
      const row = db.prepare('select count(*) as n from wallets where project_id = ?').get(doomed.projectId) as {
        n: number;
      };
      assert.equal(row.n, 1);
    } finally {
      db.close();
    }
  });
});

describe('IP allowlist (callers come from 127.0.0.1)', () => {
  test('127.0.0.0/8 lets the caller in; 10.0.0.0/8 is 401 IP_NOT_ALLOWED, and X-Forwarded-For does not get around it', async () => {
    const p = await svc.newPartner();
    const set = await setAllowlist(p.projectId, ['127.0.0.0/8']);
    assert.equal(set.status, 200);
    assert.deepEqual(set.body, { projectId: p.projectId, cidrs: ['127.0.0.0/8'] });
    assert.equal(await listStatus(p.secret), 200);

    assert.equal((await setAllowlist(p.projectId, ['10.0.0.0/8'])).status, 200);
    assertRefused(await call('GET', '/v1/wallets', key(p.secret)), 401, 'IP_NOT_ALLOWED', { forbidden: [p.secret] });
    assertRefused(
      await call('POST', '/v1/wallets', key(p.secret), {
        type: 'EVM',
        userIdentifier: uid('ip'),
        userIdentifierType: 'EMAIL',
      }),
      401,
      'IP_NOT_ALLOWED',
    );
    assertRefused(
      await call('GET', '/v1/wallets', { ...key(p.secret), 'x-forwarded-for': '10.1.2.3', 'x-real-ip': '10.1.2.3' }),
      401,
      'IP_NOT_ALLOWED',
    );
    // An invalid key is still 403 from anywhere: the key is checked first.
    assertRefused(await call('GET', '/v1/wallets', key(`${p.secret}x`)), 403, 'INVALID_API_KEY');
  });

  test('an IPv6-only allowlist (::1/128) refuses the IPv4 loopback caller', async () => {
    const p = await svc.newPartner();
    const set = await setAllowlist(p.projectId, ['::1/128']);
    assert.equal(set.status, 200);
    assert.deepEqual(set.body.cidrs, ['::1/128']);
    assertRefused(await call('GET', '/v1/wallets', key(p.secret)), 401, 'IP_NOT_ALLOWED');
  });

  test('a bare address is one host: "127.0.0.1" is stored as 127.0.0.1/32 and lets the caller in', async () => {
    const p = await svc.newPartner();
    const set = await setAllowlist(p.projectId, ['127.0.0.1']);
    assert.equal(set.status, 200);
    assert.deepEqual(set.body.cidrs, ['127.0.0.1/32']);
    assert.equal(await listStatus(p.secret), 200);
    const other = await setAllowlist(p.projectId, ['127.0.0.2']);
    assert.deepEqual(other.body.cidrs, ['127.0.0.2/32']);
    assert.equal(await listStatus(p.secret), 401);
  });

  test('an IPv4-mapped entry (::ffff:127.0.0.1, bare or /128) admits the IPv4 caller it names', async () => {
    const failures: string[] = [];
    for (const entry of ['::ffff:127.0.0.1/128', '::ffff:127.0.0.1']) {
      const p = await svc.newPartner();
      const set = await setAllowlist(p.projectId, [entry]);
      const status = await listStatus(p.secret);
      if (set.status !== 200 || status !== 200) {
        failures.push(
          `${entry}: PUT answered ${set.status} ${JSON.stringify(set.body)}; GET /v1/wallets from 127.0.0.1 answered ${status}`,
        );
      }
    }
    assert.deepEqual(failures, []);
  });

  test('an empty list lifts the restriction', async () => {
    const p = await svc.newPartner();
    await setAllowlist(p.projectId, ['10.0.0.0/8']);
    assert.equal(await listStatus(p.secret), 401);
    const lifted = await setAllowlist(p.projectId, []);
    assert.equal(lifted.status, 200);
    assert.deepEqual(lifted.body.cidrs, []);
    assert.equal(await listStatus(p.secret), 200);
  });

  test('invalid CIDRs are a 400 naming the entry, and the previous allowlist still applies', async () => {
    const p = await svc.newPartner();
    const bad = ['300.1.1.1/8', '1.2.3.4/33', 'abc', '::1/129', '10.0.0.0/'];
    for (const previous of [['127.0.0.0/8'], ['10.0.0.0/8']]) {
      assert.equal((await setAllowlist(p.projectId, previous)).status, 200);
      const expected = previous[0] === '127.0.0.0/8' ? 200 : 401;
      assert.equal(await listStatus(p.secret), expected);
      for (const entry of bad) {
        for (const cidrs of [[entry], ['127.0.0.0/8', entry]]) {
          const r = await call('PUT', `/admin/v1/projects/${p.projectId}/ip-allowlist`, bearer(), { cidrs });
          assertRefused(r, 400, 'INVALID_REQUEST');
          assert.ok((r.body as { message: string }).message.includes(entry), `message names ${entry}: ${r.text}`);
          assert.equal(await listStatus(p.secret), expected, `after refusing ${JSON.stringify(cidrs)}`);
        }
      }
    }
  });

  test('IPv6 callers: a real ::1 listener is matched against IPv6 entries; an IPv4-mapped peer is matched as IPv4', async () => {
    const p = await svc.newPartner();
    const server = http.createServer((req, res) => svc.api.app.routing(req, res));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '::1', () => resolve());
    });
    const v6 = `http://[::1]:${(server.address() as AddressInfo).port}`;
    try {
      const from6 = async () => (await call('GET', '/v1/wallets', key(p.secret), undefined, v6)).status;
      const cases: Array<[string[], number, number]> = [
        // [allowlist, status from ::1, status from 127.0.0.1]
        [['::1/128'], 200, 401],
        [['::1'], 200, 401],
        [['::/0'], 200, 401],
        [['2001:db8::/32'], 401, 401],
        [['127.0.0.0/8'], 401, 200],
        [['127.0.0.0/8', '::1/128'], 200, 200],
        [[], 200, 200],
      ];
      for (const [cidrs, want6, want4] of cases) {
        assert.equal((await setAllowlist(p.projectId, cidrs)).status, 200);
        assert.equal(await from6(), want6, `from ::1 with ${JSON.stringify(cidrs)}`);
        assert.equal(await listStatus(p.secret), want4, `from 127.0.0.1 with ${JSON.stringify(cidrs)}`);
      }
      await setAllowlist(p.projectId, ['2001:db8::/32']);
      assertRefused(await call('GET', '/v1/wallets', key(p.secret), undefined, v6), 401, 'IP_NOT_ALLOWED');
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
    // A dual-stack socket reports an IPv4 peer as ::ffff:127.0.0.1; it must match IPv4 entries.
    const inject = (remoteAddress: string) =>
      svc.api.app.inject({ method: 'GET', url: '/v1/wallets', headers: key(p.secret), remoteAddress });
    await setAllowlist(p.projectId, ['127.0.0.0/8']);
    assert.equal((await inject('::ffff:127.0.0.1')).statusCode, 200);
    assert.equal((await inject('::1')).statusCode, 401);
    await setAllowlist(p.projectId, ['10.0.0.0/8']);
    assert.equal((await inject('::ffff:127.0.0.1')).statusCode, 401);
    assert.equal((await inject('::ffff:10.9.8.7')).statusCode, 200);
    await setAllowlist(p.projectId, ['2001:db8::/32']);
    assert.equal((await inject('2001:db8::5')).statusCode, 200);
    assert.equal((await inject('2001:db9::5')).statusCode, 401);
  });
});

describe('rate limits per API key and minute', () => {
  const assertLimited = (r: RawResponse, requestId?: string) => {
    assertRefused(r, 429, 'RATE_LIMITED', requestId ? { requestId } : {});
    const retry = r.headers['retry-after'];
    assert.match(String(retry), /^\d+$/, `Retry-After is integer seconds: ${String(retry)}`);
    assert.ok(Number(retry) > 0 && Number(retry) <= 60, `Retry-After ${String(retry)} within the minute`);
  };

  test('free: 30 mixed requests pass, the 31st is 429 with Retry-After; a refused create writes nothing; a second key has its own 30', async () => {
    const free = await svc.newPartner({ plan: 'free' });
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) {
      const c = await svc.v1(free.secret, 'POST', '/wallets', {
        type: i % 2 ? 'SOLANA' : 'EVM',
        userIdentifier: uid('free'),
        userIdentifierType: 'CUSTOM_ID',
      });
      const g = await svc.v1(free.secret, 'GET', `/wallets/${c.body.id}`);
      const l = await svc.v1(free.secret, 'GET', '/wallets?limit=5');
      statuses.push(c.status, g.status, l.status);
    }
    assert.deepEqual(statuses, Array.from({ length: 10 }, () => [201, 200, 200]).flat());

    assertLimited(await call('GET', '/v1/wallets', { ...key(free.secret), 'x-request-id': 'rate-31' }), 'rate-31');
    const before = snapshotDb(svc.dataDir);
    assertLimited(
      await call('POST', '/v1/wallets', key(free.secret), {
        type: 'EVM',
        userIdentifier: uid('over'),
        userIdentifierType: 'EMAIL',
      }),
    );
    assert.deepEqual(snapshotChanges(before, snapshotDb(svc.dataDir)), []);

    const second = await newKey(free.projectId, 'production');
    const secondStatuses: number[] = [];
    for (let i = 0; i < 30; i++) secondStatuses.push(await listStatus(second.secret));
    assert.deepEqual(
      secondStatuses,
      Array.from({ length: 30 }, () => 200),
    );
    assertLimited(await call('GET', '/v1/wallets', key(second.secret)));
    assertLimited(await call('GET', '/v1/wallets', key(free.secret)));
  });

  test('growth allows more than 30 a minute', async () => {
    const growth = await svc.newPartner({ plan: 'growth' });
    const statuses: number[] = [];
    for (let i = 0; i < 40; i++) statuses.push(await listStatus(growth.secret));
    assert.deepEqual(
      statuses,
      Array.from({ length: 40 }, () => 200),
    );
  });

  test('enterprise and scale are limited at the project own figure', async () => {
    for (const [plan, limit] of [
      ['enterprise', 5],
      ['scale', 3],
    ] as const) {
      const p = await svc.newPartner({ plan, rateLimitPerMinute: limit });
      const statuses: number[] = [];
      for (let i = 0; i < limit; i++) statuses.push(await listStatus(p.secret));
      assert.deepEqual(
        statuses,
        Array.from({ length: limit }, () => 200),
        plan,
      );
      assertLimited(await call('GET', '/v1/wallets', key(p.secret)));
    }
  });

  test('rotation keeps the key budget: the counter belongs to the key id, not to the secret', async () => {
    const p = await svc.newPartner({ plan: 'enterprise', rateLimitPerMinute: 5 });
    for (let i = 0; i < 3; i++) assert.equal(await listStatus(p.secret), 200);
    const rot = await svc.admin('POST', `/api-keys/${p.keyId}/rotate`);
    assert.equal(rot.status, 200);
    assert.equal(await listStatus(rot.body.secretKey), 200);
    assert.equal(await listStatus(rot.body.secretKey), 200);
    assertLimited(await call('GET', '/v1/wallets', key(rot.body.secretKey)));
    // The retired secret is refused as invalid, not counted.
    assertRefused(await call('GET', '/v1/wallets', key(p.secret)), 403, 'INVALID_API_KEY');
  });
});

describe('X-Request-Id', () => {
  test('a sane X-Request-Id comes back in the header of every answer and in the requestId of error bodies', async () => {
    const p = await svc.newPartner();
    const requests: Array<[string, string, Record<string, string>, unknown?]> = [
      ['GET', '/v1/wallets', key(p.secret)],
      ['GET', '/v1/wallets', {}],
      ['GET', '/v1/wallets', key('sk_dev_wrong')],
      ['GET', `/v1/wallets/${MISSING}`, key(p.secret)],
      ['POST', '/v1/wallets', key(p.secret), { type: 'BITCOIN' }],
      ['POST', '/admin/v1/projects', bearer(), { name: uid('rid') }],
      ['POST', '/admin/v1/projects', {}, { name: uid('rid') }],
      ['GET', '/v1/nope', {}],
      ['GET', '/healthz', {}],
    ];
    for (const [i, [method, route, headers, body]] of requests.entries()) {
      for (const rid of [`req-${i}.abc_DEF:1`, '0f8fad5b-d9cb-469f-a165-70867728950e']) {
        const r = await call(method, route, { ...headers, 'x-request-id': rid }, body);
        assert.equal(r.headers['x-request-id'], rid, `${method} ${route}`);
        if (r.status >= 400) assert.equal((r.body as { requestId: string }).requestId, rid, `${method} ${route}`);
      }
    }
  });

  test('without X-Request-Id every answer gets a fresh UUID, also in error bodies', async () => {
    const seen = new Set<string>();
    for (const [method, route, headers] of [
      ['GET', '/v1/wallets', {}],
      ['GET', '/v1/wallets', {}],
      ['GET', '/admin/v1/nope', bearer()],
      ['GET', '/healthz', {}],
    ] as Array<[string, string, Record<string, string>]>) {
      const r = await call(method, route, headers);
      const rid = String(r.headers['x-request-id']);
      assert.match(rid, UUID);
      if (r.status >= 400) assert.equal((r.body as { requestId: string }).requestId, rid);
      seen.add(rid);
    }
    assert.equal(seen.size, 4);
  });

  test('a garbage X-Request-Id (500 characters, spaces, quotes, non-ASCII, empty) is replaced by a UUID', async () => {
    const garbage = ['x'.repeat(500), 'has spaces', 'quote"d', 'semi;colon', '<script>', 'caf\u00e9', ''];
    for (const g of garbage) {
      const r = await call('GET', '/v1/wallets', { 'x-request-id': g });
      const rid = String(r.headers['x-request-id']);
      assert.match(rid, UUID, `for ${JSON.stringify(g.slice(0, 20))}`);
      assert.equal((r.body as { requestId: string }).requestId, rid);
      if (g) assert.ok(!r.text.includes(g), 'the garbage is not echoed');
    }
  });
});

describe('admin API authentication and validation', () => {
  test('every admin route: no Authorization is 401, a wrong one 403, an API key never admits; nothing is written', async () => {
    const t = await svc.newPartner();
    const routes: Array<[string, string, unknown?]> = [
      ['POST', '/admin/v1/projects', { name: uid('adm'), plan: 'free' }],
      ['DELETE', `/admin/v1/projects/${t.projectId}`],
      ['POST', `/admin/v1/projects/${t.projectId}/api-keys`, { environment: 'development' }],
      ['POST', `/admin/v1/api-keys/${t.keyId}/rotate`],
      ['PUT', `/admin/v1/projects/${t.projectId}/ip-allowlist`, { cidrs: ['10.0.0.0/8'] }],
    ];
    const token = svc.adminToken;
    const refusals: Array<[Record<string, string>, number, string]> = [
      [{}, 401, 'ADMIN_TOKEN_REQUIRED'],
      [key(t.secret), 401, 'ADMIN_TOKEN_REQUIRED'],
      [key(token), 401, 'ADMIN_TOKEN_REQUIRED'],
      [{ authorization: 'Bearer wrong-token-0123456789' }, 403, 'INVALID_ADMIN_TOKEN'],
      [{ authorization: `Bearer ${token}x` }, 403, 'INVALID_ADMIN_TOKEN'],
      [{ authorization: `Bearer ${token.slice(0, -1)}` }, 403, 'INVALID_ADMIN_TOKEN'],
      [{ authorization: token }, 403, 'INVALID_ADMIN_TOKEN'],
      [{ authorization: 'Bearer' }, 403, 'INVALID_ADMIN_TOKEN'],
      [{ authorization: `Basic ${Buffer.from(`admin:${token}`).toString('base64')}` }, 403, 'INVALID_ADMIN_TOKEN'],
      [{ authorization: `Bearer ${t.secret}` }, 403, 'INVALID_ADMIN_TOKEN'],
      [{ ...key(t.secret), authorization: `Bearer ${t.secret}` }, 403, 'INVALID_ADMIN_TOKEN'],
    ];
    const before = snapshotDb(svc.dataDir);
    for (const [method, route, body] of routes) {
      for (const [headers, status, code] of refusals) {
        const r = await call(method, route, headers, body);
        assertRefused(r, status, code, { forbidden: [token, t.secret] });
      }
    }
    assert.deepEqual(snapshotChanges(before, snapshotDb(svc.dataDir)), []);
    assert.equal(await listStatus(t.secret), 200);
  });

  test('project creation: plan, rateLimitPerMinute and name rules', async () => {
    const refused: Array<[Record<string, unknown>, string]> = [
      [{ name: 'p', plan: 'gold' }, 'body.plan'],
      [{ name: 'p', plan: 'scale' }, 'body.rateLimitPerMinute'],
      [{ name: 'p', plan: 'enterprise' }, 'body.rateLimitPerMinute'],
      [{ name: 'p', plan: 'free', rateLimitPerMinute: 10 }, 'body.rateLimitPerMinute'],
      [{ name: 'p', plan: 'starter', rateLimitPerMinute: 10 }, 'body.rateLimitPerMinute'],
      [{ name: 'p', plan: 'growth', rateLimitPerMinute: 10 }, 'body.rateLimitPerMinute'],
      [{ name: 'p', rateLimitPerMinute: 10 }, 'body.rateLimitPerMinute'],
      [{ name: 'p', plan: 'enterprise', rateLimitPerMinute: 0 }, 'body.rateLimitPerMinute'],
      [{ name: 'p', plan: 'enterprise', rateLimitPerMinute: 2.5 }, 'body.rateLimitPerMinute'],
      [{ name: '', plan: 'free' }, 'body.name'],
      [{ name: '   ', plan: 'free' }, 'body.name'],
      [{ plan: 'free' }, 'body.name'],
    ];
    const before = snapshotDb(svc.dataDir);
    for (const [body, field] of refused) {
      const r = await call('POST', '/admin/v1/projects', bearer(), body);
      assertRefused(r, 400, 'INVALID_REQUEST');
      assert.equal((r.body as { field?: string }).field, field, JSON.stringify(body));
    }
    assert.deepEqual(snapshotChanges(before, snapshotDb(svc.dataDir)), []);

    const accepted: Array<[Record<string, unknown>, string, number]> = [
      [{ name: 'default' }, 'free', 30],
      [{ name: 'starter', plan: 'starter' }, 'starter', 30],
      [{ name: 'growth', plan: 'growth' }, 'growth', 1000],
      [{ name: 'scale', plan: 'scale', rateLimitPerMinute: 250 }, 'scale', 250],
      [{ name: 'enterprise', plan: 'enterprise', rateLimitPerMinute: 5 }, 'enterprise', 5],
    ];
    for (const [body, plan, limit] of accepted) {
      const r = await svc.admin('POST', '/projects', body);
      assert.equal(r.status, 201, JSON.stringify(r.body));
      assert.deepEqual(Object.keys(r.body).sort(), ['createdAt', 'id', 'name', 'plan', 'rateLimitPerMinute']);
      assert.equal(r.body.name, body['name']);
      assert.equal(r.body.plan, plan);
      assert.equal(r.body.rateLimitPerMinute, limit);
    }
  });

  test('unknown project and key ids are 404 with a code', async () => {
    const t = await svc.newPartner();
    const cases: Array<[string, string, unknown, string]> = [
      ['DELETE', `/admin/v1/projects/${MISSING}`, undefined, 'PROJECT_NOT_FOUND'],
      ['DELETE', `/admin/v1/projects/${t.keyId}`, undefined, 'PROJECT_NOT_FOUND'],
      ['POST', `/admin/v1/projects/${MISSING}/api-keys`, { environment: 'production' }, 'PROJECT_NOT_FOUND'],
      ['POST', `/admin/v1/projects/${t.keyId}/api-keys`, { environment: 'production' }, 'PROJECT_NOT_FOUND'],
      ['POST', `/admin/v1/api-keys/${MISSING}/rotate`, undefined, 'API_KEY_NOT_FOUND'],
      ['POST', `/admin/v1/api-keys/${t.projectId}/rotate`, undefined, 'API_KEY_NOT_FOUND'],
      ['PUT', `/admin/v1/projects/${MISSING}/ip-allowlist`, { cidrs: [] }, 'PROJECT_NOT_FOUND'],
      ['PUT', `/admin/v1/projects/${t.keyId}/ip-allowlist`, { cidrs: [] }, 'PROJECT_NOT_FOUND'],
    ];
    const before = snapshotDb(svc.dataDir);
    for (const [method, route, body, code] of cases)
      assertRefused(await call(method, route, bearer(), body), 404, code);
    assert.deepEqual(snapshotChanges(before, snapshotDb(svc.dataDir)), []);
  });
});

describe('secrets never leak', () => {
  test('a key secret appears only in its create or rotate answer: not in errors, other answers, operational endpoints or the data directory', async () => {
    const proj = await call('POST', '/admin/v1/projects', bearer(), {
      name: 'secrets',
      plan: 'enterprise',
      rateLimitPerMinute: 1000,
    });
    assert.equal(proj.status, 201);
    const projectId = (proj.body as { id: string }).id;
    const devAnswer = await call('POST', `/admin/v1/projects/${projectId}/api-keys`, bearer(), {
      environment: 'development',
    });
    const prodAnswer = await call('POST', `/admin/v1/projects/${projectId}/api-keys`, bearer(), {
      environment: 'production',
    });
    const dev = devAnswer.body as { id: string; secretKey: string };
    const prod = (prodAnswer.body as { secretKey: string }).secretKey;
    assert.equal(devAnswer.status, 201);
    assert.equal(prodAnswer.status, 201);
    const slow = await svc.newPartner({ plan: 'enterprise', rateLimitPerMinute: 1 });

    const answers: Array<[string, RawResponse]> = [['create project', proj]];
    const v1 = async (label: string, method: string, route: string, secret: string, body?: unknown, headers = {}) =>
      answers.push([label, await call(method, route, { ...key(secret), ...headers }, body)]);
    const wallet = { type: 'EVM', userIdentifier: uid('secret'), userIdentifierType: 'CUSTOM_ID' };
    await v1('create wallet', 'POST', '/v1/wallets', dev.secretKey, wallet);
    const walletId = (answers.at(-1)![1].body as { id: string }).id;
    await v1('duplicate 409', 'POST', '/v1/wallets', dev.secretKey, wallet);
    await v1('invalid body 400', 'POST', '/v1/wallets', dev.secretKey, { ...wallet, type: 'BITCOIN' });
    await v1('list', 'GET', '/v1/wallets', prod);
    await v1('get', 'GET', `/v1/wallets/${walletId}`, dev.secretKey);
    await v1('patch', 'PATCH', `/v1/wallets/${walletId}`, dev.secretKey, { userIdentifierType: 'EMAIL' });
    await v1('missing wallet 404', 'GET', `/v1/wallets/${MISSING}`, dev.secretKey);
    await v1('unknown route 404', 'GET', '/v1/nope', dev.secretKey);
    await v1('bad query 400', 'GET', '/v1/wallets?limit=0', dev.secretKey);
    await v1('unsupported media type 415', 'POST', '/v1/wallets', dev.secretKey, wallet, {
      'content-type': 'text/plain',
    });
    await v1('rate limit ok', 'GET', '/v1/wallets', slow.secret);
    await v1('rate limit 429', 'GET', '/v1/wallets', slow.secret);

    const rotated = await call('POST', `/admin/v1/api-keys/${dev.id}/rotate`, bearer());
    assert.equal(rotated.status, 200);
    const fresh = (rotated.body as { secretKey: string }).secretKey;
    await v1('retired secret 403', 'GET', '/v1/wallets', dev.secretKey);
    await svc.admin('PUT', `/projects/${projectId}/ip-allowlist`, { cidrs: ['10.0.0.0/8'] });
    await v1('outside the allowlist 401', 'GET', '/v1/wallets', fresh);
    answers.push([
      'allowlist answer',
      await call('PUT', `/admin/v1/projects/${projectId}/ip-allowlist`, bearer(), { cidrs: [] }),
    ]);
    answers.push(['admin 404', await call('POST', `/admin/v1/api-keys/${MISSING}/rotate`, bearer())]);
    for (const route of ['/metrics', '/openapi.json', '/healthz', '/readyz'])
      answers.push([route, await call('GET', route)]);

    const secrets = { 'development secret': dev.secretKey, 'production secret': prod, 'rotated secret': fresh };
    const leaks: string[] = [];
    for (const [label, r] of answers) {
      const seen = `${r.text}\n${JSON.stringify(r.headers)}`;
      for (const [name, s] of Object.entries({
        ...secrets,
        'admin token': svc.adminToken,
        'rate-limited secret': slow.secret,
      })) {
        if (seen.includes(s)) leaks.push(`${label} (${r.status}) contains the ${name}`);
      }
    }
    // Each create/rotate answer holds its own secret and no other.
    for (const [label, r, own] of [
      ['development key', devAnswer, dev.secretKey],
      ['production key', prodAnswer, prod],
      ['rotation', rotated, fresh],
    ] as const) {
      assert.ok(r.text.includes(own), `${label} answer shows its secret`);
      for (const [name, s] of Object.entries(secrets)) {
        if (s !== own && r.text.includes(s)) leaks.push(`${label} answer contains the ${name}`);
      }
    }
    // At rest: no file of the data directory holds a secret in clear.
    const walk = (dir: string): string[] =>
      fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
        const full = path.join(dir, e.name);
        if (e.isDirectory()) return walk(full);
        return e.isFile() ? [full] : [];
      });
    const files = walk(svc.dataDir);
    assert.ok(
      files.some((f) => path.basename(f) === 'service.db'),
      'the walk reaches the service database',
    );
    for (const file of files) {
      const bytes = fs.readFileSync(file);
      for (const [name, s] of Object.entries(secrets)) {
        if (bytes.includes(Buffer.from(s))) leaks.push(`${path.relative(svc.dataDir, file)} contains the ${name}`);
      }
    }
    assert.deepEqual(leaks, []);
  });
});
