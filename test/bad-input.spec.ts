import assert from 'node:assert/strict';
import { after, before, describe, type TestContext, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { snapshotChanges, snapshotDb } from './helpers/bad-input-db.ts';
import { envelopeProblems, rawRequest } from './helpers/bad-input-http.ts';
import {
  BAD_IDS,
  type BadCase,
  type BodyVariant,
  type FieldSpec,
  fieldVariants,
  JSON_CT,
  parseLevelVariants,
  runCases,
  shapeVariants,
  withBodies,
} from './helpers/bad-input-matrix.ts';
import { startTestService, type TestService } from './helpers/service.ts';

// Every route gets malformed, mistyped, oversized and mislabelled input. Each answer must be a 4xx
// carrying the error envelope and the request id, and the database must be exactly as it was: the
// row count and a digest of every row of every table are compared before and after each route's matrix.

let svc: TestService;
let partner: { projectId: string; keyId: string; secret: string };
let walletId: string;
/** An admin target that is not the partner's project (its allowlist and keys can be changed safely). */
let target: { projectId: string; keyId: string; secret: string };
let deleted: { projectId: string; keyId: string; secret: string };

const v1Auth = () => ({ 'x-api-key': partner.secret });
const adminAuth = () => ({ authorization: `Bearer ${svc.adminToken}` });

/** Sends a valid request through the same raw client: proves the route and auth work before the matrix. */
async function control(method: string, path: string, headers: Record<string, string>, body?: unknown) {
  const res = await rawRequest(svc.url, {
    method,
    path,
    headers: body === undefined ? headers : { ...headers, 'content-type': JSON_CT },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  assert.ok(res.status >= 200 && res.status < 300, `control ${method} ${path}: ${res.status} ${res.text}`);
  return res;
}

/** Runs the cases, then compares the database; reports every failing case at once. */
async function assertAllRefused(t: TestContext, cases: readonly BadCase[], minimum: number) {
  t.diagnostic(`${cases.length} cases`);
  assert.ok(cases.length >= minimum, `expected at least ${minimum} cases, built ${cases.length}`);
  const before = snapshotDb(svc.dataDir);
  const failures = await runCases(svc.url, cases, { forbidden: [partner.secret, target.secret, svc.adminToken] });
  await sleep(50); // a write wrongly started by a refused request would have committed by now
  const after = snapshotDb(svc.dataDir);
  for (const change of snapshotChanges(before, after)) failures.push(`database changed: ${change}`);
  assert.equal(failures.length, 0, `${failures.length} of ${cases.length} cases failed:\n  ${failures.join('\n  ')}`);
}

/** The same id matrix on a route whose path has one parameter, written `{id}` in `template`. */
function idCases(method: string, template: string, headers: Record<string, string>, body?: unknown): BadCase[] {
  return BAD_IDS.map(({ name, segment }) => ({
    name: `path id: ${name}`,
    method,
    path: template.replace('{id}', segment),
    headers: body === undefined ? headers : { ...headers, 'content-type': JSON_CT },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  }));
}

before(async () => {
  svc = await startTestService();
  partner = await svc.newPartner();
  const w = await svc.v1(partner.secret, 'POST', '/wallets', {
    type: 'EVM',
    userIdentifier: 'bad-input-target',
    userIdentifierType: 'CUSTOM_ID',
  });
  assert.equal(w.status, 201);
  walletId = w.body.id;
  target = await svc.newPartner();
  deleted = await svc.newPartner();
  assert.equal((await svc.admin('DELETE', `/projects/${deleted.projectId}`)).status, 204);
});

after(async () => {
  await svc?.stop();
});

const WALLET_TYPES = ['EVM', 'COSMOS', 'SOLANA', 'STELLAR', 'SUI'] as const;
const ID_TYPES = ['CUSTOM_ID', 'EMAIL', 'PHONE'] as const;

describe('/v1 wallet routes', () => {
  test('POST /v1/wallets: every malformed, mistyped, oversized or mislabelled body is refused and creates nothing', async (t) => {
    await control('POST', '/v1/wallets', v1Auth(), {
      type: 'SUI',
      userIdentifier: 'bad-input-control',
      userIdentifierType: 'CUSTOM_ID',
    });
    const valid = { type: 'EVM', userIdentifier: 'bad-input-create', userIdentifierType: 'CUSTOM_ID' };
    const fields: FieldSpec[] = [
      { name: 'type', kind: 'enum', required: true, values: WALLET_TYPES, bad: ['BITCOIN', 'ETH', 'evm '] },
      { name: 'userIdentifier', kind: 'string', required: true, maxLength: 256, notBlank: true },
      { name: 'userIdentifierType', kind: 'enum', required: true, values: ID_TYPES, bad: ['USERNAME', 'email'] },
      { name: 'scheme', kind: 'enum', required: false, values: ['DKLS', 'ED25519'], bad: ['RSA', 'SECP256K1'] },
    ];
    const cosmos = {
      type: 'COSMOS',
      userIdentifier: 'bad-input-cosmos',
      userIdentifierType: 'EMAIL',
      cosmosPrefix: 'osmo',
    };
    const cosmosField: FieldSpec[] = [
      { name: 'cosmosPrefix', kind: 'string', required: false, maxLength: 20, notBlank: true },
    ];
    const semantic: BodyVariant[] = [
      { name: 'scheme ED25519 on an EVM wallet', body: JSON.stringify({ ...valid, scheme: 'ED25519' }) },
      { name: 'scheme DKLS on a SOLANA wallet', body: JSON.stringify({ ...valid, type: 'SOLANA', scheme: 'DKLS' }) },
      { name: 'scheme DKLS on a SUI wallet', body: JSON.stringify({ ...valid, type: 'SUI', scheme: 'DKLS' }) },
      { name: 'cosmosPrefix on an EVM wallet', body: JSON.stringify({ ...valid, cosmosPrefix: 'cosmos' }) },
      { name: 'cosmosPrefix with punctuation', body: JSON.stringify({ ...cosmos, cosmosPrefix: 'Bad!' }) },
      { name: 'cosmosPrefix starting with a digit', body: JSON.stringify({ ...cosmos, cosmosPrefix: '1osmo' }) },
      { name: 'cosmosPrefix with a NUL', body: JSON.stringify({ ...cosmos, cosmosPrefix: 'os\u0000mo' }) },
      {
        name: 'duplicate key, the last one invalid',
        body: '{"type":"EVM","userIdentifier":"bad-input-dup","userIdentifierType":"CUSTOM_ID","type":"BITCOIN"}',
      },
    ].map((v) => ({ ...v, name: `semantic: ${v.name}`, status: 400 }));
    const route = { method: 'POST', path: '/v1/wallets', headers: v1Auth() };
    const cases = [
      ...withBodies(route, parseLevelVariants(valid)),
      ...withBodies(route, shapeVariants(valid)),
      ...withBodies(route, fieldVariants(valid, fields)),
      ...withBodies(route, fieldVariants(cosmos, cosmosField)),
      ...withBodies(route, semantic),
    ];
    await assertAllRefused(t, cases, 100);
  });

  test('GET /v1/wallets: bad limit, cursor, filters, repeated and unknown parameters are refused', async (t) => {
    await control('GET', '/v1/wallets?limit=1&type=EVM', v1Auth());
    const b64 = (s: string) => Buffer.from(s).toString('base64url');
    const queries: Array<[string, string]> = [
      ['limit 0', 'limit=0'],
      ['limit 101', 'limit=101'],
      ['limit not a number', 'limit=abc'],
      ['limit negative', 'limit=-1'],
      ['limit fraction', 'limit=1.5'],
      ['limit with a leading zero', 'limit=01'],
      ['limit in exponent form', 'limit=1e2'],
      ['limit hexadecimal', 'limit=0x10'],
      ['limit empty', 'limit='],
      ['limit with a space', 'limit=%205'],
      ['limit NUL', 'limit=%00'],
      ['limit fullwidth digit', 'limit=%EF%BC%95'],
      ['limit 20 digits', 'limit=99999999999999999999'],
      ['cursor empty', 'cursor='],
      ['cursor not issued by the service', 'cursor=not-a-cursor'],
      ['cursor of 201 characters', `cursor=${'a'.repeat(201)}`],
      ['cursor with a non-numeric position', `cursor=${b64('w:abc')}`],
      ['cursor with a negative position', `cursor=${b64('w:-1')}`],
      ['cursor with 16 digits', `cursor=${b64('w:1234567890123456')}`],
      ['cursor of another kind', `cursor=${b64('x:1')}`],
      ['cursor of punctuation only', 'cursor=!!!!'],
      ['type unknown', 'type=BITCOIN'],
      ['type lower case', 'type=evm'],
      ['type empty', 'type='],
      ['type without a value', 'type'],
      ['type with NUL', 'type=EVM%00'],
      ['status unknown', 'status=done'],
      ['status upper case', 'status=READY'],
      ['userIdentifierType unknown', 'userIdentifierType=USERNAME'],
      ['userIdentifier empty', 'userIdentifier='],
      ['userIdentifier 257 characters', `userIdentifier=${'u'.repeat(257)}`],
      ['address empty', 'address='],
      ['address 129 characters', `address=0x${'a'.repeat(127)}`],
      ['unknown filter', 'foo=bar'],
      ['scheme is not a filter', 'scheme=DKLS'],
      ['projectId is not a filter', `projectId=${target.projectId}`],
      ['walletId is not a filter', `walletId=${walletId}`],
      ['__proto__ parameter', '__proto__=x'],
      ['constructor parameter', 'constructor=x'],
      ['bracket array syntax', 'type[]=EVM'],
      ['bracket index syntax', 'type[0]=EVM'],
      ['parameter without a name', '=x'],
      ['repeated type', 'type=EVM&type=SUI'],
      ['repeated identical type', 'type=EVM&type=EVM'],
      ['repeated limit', 'limit=1&limit=2'],
      ['repeated cursor', `cursor=${b64('w:1')}&cursor=${b64('w:2')}`],
      ['valid filter plus an unknown one', 'type=EVM&sort=asc'],
    ];
    const cases: BadCase[] = queries.map(([name, q]) => ({
      name,
      method: 'GET',
      path: `/v1/wallets?${q}`,
      headers: v1Auth(),
      status: 400,
    }));
    await assertAllRefused(t, cases, 40);
  });

  test('GET /v1/wallets/{walletId}: long, NUL, dot-dot, unicode and malformed ids are refused', async (t) => {
    await control('GET', `/v1/wallets/${walletId}`, v1Auth());
    await assertAllRefused(t, idCases('GET', '/v1/wallets/{id}', v1Auth()), BAD_IDS.length);
  });

  test('PATCH /v1/wallets/{walletId}: bad bodies and bad ids are refused and change nothing', async (t) => {
    await control('PATCH', `/v1/wallets/${walletId}`, v1Auth(), { userIdentifierType: 'CUSTOM_ID' });
    const valid = { userIdentifier: 'bad-input-patched', userIdentifierType: 'EMAIL' };
    const fields: FieldSpec[] = [
      { name: 'userIdentifier', kind: 'string', required: false, maxLength: 256, notBlank: true },
      { name: 'userIdentifierType', kind: 'enum', required: false, values: ID_TYPES, bad: ['USERNAME', 'ADDRESS'] },
    ];
    const immutable: BodyVariant[] = [
      ['type', 'SUI'],
      ['scheme', 'ED25519'],
      ['address', '0x0000000000000000000000000000000000000000'],
      ['publicKey', '04ab'],
      ['status', 'creating'],
      ['createdAt', '2000-01-01T00:00:00.000Z'],
      ['projectId', target.projectId],
    ].map(([k, v]) => ({
      name: `immutable field ${k}`,
      body: JSON.stringify({ ...valid, [k as string]: v }),
      status: 400,
    }));
    const route = { method: 'PATCH', path: `/v1/wallets/${walletId}`, headers: v1Auth() };
    const cases = [
      ...withBodies(route, parseLevelVariants(valid)),
      ...withBodies(route, shapeVariants(valid)),
      ...withBodies(route, fieldVariants(valid, fields)),
      ...withBodies(route, immutable),
      ...idCases('PATCH', '/v1/wallets/{id}', v1Auth(), valid),
    ];
    await assertAllRefused(t, cases, 80);
  });
});

describe('/admin/v1 routes', () => {
  test('POST /admin/v1/projects: bad bodies, plans and limits are refused and create nothing', async (t) => {
    await control('POST', '/admin/v1/projects', adminAuth(), { name: 'bad-input-control', plan: 'growth' });
    const valid = { name: 'bad-input-project', plan: 'enterprise', rateLimitPerMinute: 5 };
    const fields: FieldSpec[] = [
      { name: 'name', kind: 'string', required: true, maxLength: 200, notBlank: true },
      {
        name: 'plan',
        kind: 'enum',
        required: false,
        values: ['free', 'starter', 'growth', 'scale', 'enterprise'],
        bad: ['gold', 'premium', 'Free'],
      },
      { name: 'rateLimitPerMinute', kind: 'integer', required: false, min: 1, max: 10_000_000 },
    ];
    const semantic: BodyVariant[] = [
      {
        name: 'free with rateLimitPerMinute',
        body: JSON.stringify({ name: 'p', plan: 'free', rateLimitPerMinute: 5 }),
      },
      {
        name: 'starter with rateLimitPerMinute',
        body: JSON.stringify({ name: 'p', plan: 'starter', rateLimitPerMinute: 5 }),
      },
      {
        name: 'growth with rateLimitPerMinute',
        body: JSON.stringify({ name: 'p', plan: 'growth', rateLimitPerMinute: 5 }),
      },
      { name: 'default plan with rateLimitPerMinute', body: JSON.stringify({ name: 'p', rateLimitPerMinute: 5 }) },
      { name: 'scale without rateLimitPerMinute', body: JSON.stringify({ name: 'p', plan: 'scale' }) },
      { name: 'enterprise without rateLimitPerMinute', body: JSON.stringify({ name: 'p', plan: 'enterprise' }) },
    ].map((v) => ({ ...v, name: `semantic: ${v.name}`, status: 400 }));
    const route = { method: 'POST', path: '/admin/v1/projects', headers: adminAuth() };
    const cases = [
      ...withBodies(route, parseLevelVariants(valid)),
      ...withBodies(route, shapeVariants(valid)),
      ...withBodies(route, fieldVariants(valid, fields)),
      ...withBodies(route, semantic),
    ];
    await assertAllRefused(t, cases, 70);
  });

  test('DELETE /admin/v1/projects/{projectId}: unparseable bodies and bad ids delete nothing', async (t) => {
    const throwaway = await svc.newPartner();
    await control('DELETE', `/admin/v1/projects/${throwaway.projectId}`, adminAuth());
    const route = { method: 'DELETE', path: `/admin/v1/projects/${target.projectId}`, headers: adminAuth() };
    const cases: BadCase[] = [
      ...withBodies(route, parseLevelVariants({})),
      ...idCases('DELETE', '/admin/v1/projects/{id}', adminAuth()),
      {
        name: 'already deleted project',
        ...{ method: 'DELETE', path: `/admin/v1/projects/${deleted.projectId}`, headers: adminAuth() },
        status: 404,
        code: 'PROJECT_NOT_FOUND',
      },
      {
        name: 'an API key id in place of a project id',
        ...{ method: 'DELETE', path: `/admin/v1/projects/${target.keyId}`, headers: adminAuth() },
        status: 404,
        code: 'PROJECT_NOT_FOUND',
      },
    ];
    await assertAllRefused(t, cases, 30);
  });

  test('POST /admin/v1/projects/{projectId}/api-keys: bad environments, bodies and ids create no key', async (t) => {
    await control('POST', `/admin/v1/projects/${target.projectId}/api-keys`, adminAuth(), {
      environment: 'production',
    });
    const valid = { environment: 'development' };
    const fields: FieldSpec[] = [
      {
        name: 'environment',
        kind: 'enum',
        required: true,
        values: ['development', 'production'],
        bad: ['staging', 'prod', 'live', 'test', 'beta'],
      },
    ];
    const route = { method: 'POST', path: `/admin/v1/projects/${target.projectId}/api-keys`, headers: adminAuth() };
    const cases: BadCase[] = [
      ...withBodies(route, parseLevelVariants(valid)),
      ...withBodies(route, shapeVariants(valid)),
      ...withBodies(route, fieldVariants(valid, fields)),
      ...idCases('POST', '/admin/v1/projects/{id}/api-keys', adminAuth(), valid),
      {
        name: 'deleted project',
        method: 'POST',
        path: `/admin/v1/projects/${deleted.projectId}/api-keys`,
        headers: { ...adminAuth(), 'content-type': JSON_CT },
        body: JSON.stringify(valid),
        status: 404,
        code: 'PROJECT_NOT_FOUND',
      },
    ];
    await assertAllRefused(t, cases, 60);
  });

  test('POST /admin/v1/api-keys/{keyId}/rotate: unparseable bodies and bad ids rotate nothing', async (t) => {
    const throwaway = await svc.newPartner();
    await control('POST', `/admin/v1/api-keys/${throwaway.keyId}/rotate`, adminAuth());
    const route = { method: 'POST', path: `/admin/v1/api-keys/${target.keyId}/rotate`, headers: adminAuth() };
    const cases: BadCase[] = [
      ...withBodies(route, parseLevelVariants({})),
      ...idCases('POST', '/admin/v1/api-keys/{id}/rotate', adminAuth()),
      {
        name: 'key of a deleted project',
        method: 'POST',
        path: `/admin/v1/api-keys/${deleted.keyId}/rotate`,
        headers: adminAuth(),
        status: 404,
        code: 'API_KEY_NOT_FOUND',
      },
      {
        name: 'a project id in place of a key id',
        method: 'POST',
        path: `/admin/v1/api-keys/${target.projectId}/rotate`,
        headers: adminAuth(),
        status: 404,
        code: 'API_KEY_NOT_FOUND',
      },
    ];
    await assertAllRefused(t, cases, 30);
    // The target key was never rotated: its original secret still authenticates.
    assert.equal((await svc.v1(target.secret, 'GET', '/wallets')).status, 200);
  });

  test('PUT /admin/v1/projects/{projectId}/ip-allowlist: bad CIDRs, bodies and ids leave the allowlist as it was', async (t) => {
    await control('PUT', `/admin/v1/projects/${target.projectId}/ip-allowlist`, adminAuth(), {
      cidrs: ['127.0.0.0/8'],
    });
    const valid = { cidrs: ['10.0.0.0/8'] };
    const fields: FieldSpec[] = [
      {
        name: 'cidrs',
        kind: 'string-array',
        required: true,
        maxItems: 1000,
        itemMaxLength: 64,
        bad: [
          ['300.1.1.1/8'],
          ['1.2.3.4/33'],
          ['abc'],
          ['10.0.0.0/8', 'abc'],
          ['::1/129'],
          ['10.0.0.0/'],
          ['/8'],
          ['10.0.0.0/8/8'],
          ['10.0.0.0/-1'],
          ['10.0.0.0/8,127.0.0.0/8'],
          ['127.0.0.1\u0000'],
          ['localhost'],
          ['*'],
          ['1.2.3.4.5'],
          ['gggg::1/64'],
        ],
      },
    ];
    const route = { method: 'PUT', path: `/admin/v1/projects/${target.projectId}/ip-allowlist`, headers: adminAuth() };
    const cases: BadCase[] = [
      ...withBodies(route, parseLevelVariants(valid)),
      ...withBodies(route, shapeVariants(valid)),
      ...withBodies(route, fieldVariants(valid, fields)),
      ...idCases('PUT', '/admin/v1/projects/{id}/ip-allowlist', adminAuth(), valid),
      {
        name: 'deleted project',
        method: 'PUT',
        path: `/admin/v1/projects/${deleted.projectId}/ip-allowlist`,
        headers: { ...adminAuth(), 'content-type': JSON_CT },
        body: JSON.stringify(valid),
        status: 404,
        code: 'PROJECT_NOT_FOUND',
      },
    ];
    await assertAllRefused(t, cases, 70);
    // The allowlist set by the control (127.0.0.0/8) still applies: the loopback caller is let in.
    assert.equal((await svc.v1(target.secret, 'GET', '/wallets')).status, 200);
  });
});

test('unknown routes and unknown methods on known paths answer a 4xx envelope', async (t) => {
  const admin = adminAuth();
  const v1 = v1Auth();
  const routes: Array<[string, string, Record<string, string>]> = [
    ['GET', '/v1/nope', v1],
    ['GET', '/v1/nope', {}],
    ['POST', '/v1/nope', v1],
    ['GET', '/admin/v1/nope', admin],
    ['GET', '/admin/v1/nope', {}],
    ['GET', '/nope', {}],
    ['GET', '/v1', v1],
    ['GET', '/v2/wallets', v1],
    ['GET', '/V1/WALLETS', v1],
    ['GET', '/v1//wallets', v1],
    ['GET', `/v1/wallets/${walletId}/extra`, v1],
    ['DELETE', '/v1/wallets', v1],
    ['PUT', '/v1/wallets', v1],
    ['PATCH', '/v1/wallets', v1],
    ['DELETE', `/v1/wallets/${walletId}`, v1],
    ['PUT', `/v1/wallets/${walletId}`, v1],
    ['POST', `/v1/wallets/${walletId}`, v1],
    ['OPTIONS', '/v1/wallets', v1],
    ['TRACE', '/v1/wallets', v1],
    ['PROPFIND', '/v1/wallets', v1],
    ['GET', '/admin/v1/projects', admin],
    ['PUT', '/admin/v1/projects', admin],
    ['GET', `/admin/v1/projects/${target.projectId}`, admin],
    ['PATCH', `/admin/v1/projects/${target.projectId}`, admin],
    ['GET', `/admin/v1/projects/${target.projectId}/api-keys`, admin],
    ['DELETE', `/admin/v1/projects/${target.projectId}/api-keys`, admin],
    ['GET', `/admin/v1/api-keys/${target.keyId}/rotate`, admin],
    ['DELETE', `/admin/v1/api-keys/${target.keyId}`, admin],
    ['GET', `/admin/v1/projects/${target.projectId}/ip-allowlist`, admin],
    ['POST', `/admin/v1/projects/${target.projectId}/ip-allowlist`, admin],
    ['DELETE', `/admin/v1/projects/${target.projectId}/ip-allowlist`, admin],
  ];
  const cases: BadCase[] = routes.map(([method, path, headers]) => ({
    name: `${Object.keys(headers).length ? 'authenticated' : 'anonymous'} unknown route or method`,
    method,
    path,
    headers,
    status: [404, 405],
  }));
  // A body on an unknown route changes nothing either.
  cases.push({
    name: 'malformed JSON to an unknown route',
    method: 'POST',
    path: '/v1/nope',
    headers: { ...v1, 'content-type': JSON_CT },
    body: '{"type":',
  });
  await assertAllRefused(t, cases, 30);
});

test('unicode edge cases in userIdentifier: never a 5xx, and what is stored reads back identically', async (t) => {
  const values: Array<[string, string]> = [
    ['lone high surrogate', '\ud800'],
    ['lone low surrogate', '\udfff'],
    ['lone surrogate between letters', 'a\ud800b'],
    ['reversed surrogate pair', '\udc00\ud800'],
    ['NUL alone', '\u0000'],
    ['NUL inside', 'a\u0000b'],
    ['zero-width space', '\u200b'],
    ['line separator', 'a\u2028b'],
    ['combining accent', 'e\u0301'],
    ['astral emoji', '\u{1F4A9}'],
    ['noncharacter U+FFFF', '\uffff'],
    ['right-to-left override', '\u202euser'],
  ];
  t.diagnostic(`${values.length * 2 + 1} cases`);
  const failures: string[] = [];
  const check = async (label: string, sent: string, answer: Awaited<ReturnType<TestService['v1']>>) => {
    if (answer.status >= 500) {
      failures.push(`${label}: server error ${answer.status} ${JSON.stringify(answer.body)}`);
      return;
    }
    if (answer.status >= 400) {
      if (typeof answer.body?.code !== 'string' || typeof answer.body?.message !== 'string') {
        failures.push(`${label}: ${answer.status} without the error envelope`);
      }
      return;
    }
    if (answer.body.userIdentifier !== sent) {
      failures.push(
        `${label}: answered userIdentifier ${JSON.stringify(answer.body.userIdentifier)}, sent ${JSON.stringify(sent)}`,
      );
    }
    const read = await svc.v1(partner.secret, 'GET', `/wallets/${answer.body.id}`);
    if (read.status !== 200 || read.body.userIdentifier !== sent) {
      failures.push(
        `${label}: read back ${read.status} ${JSON.stringify(read.body.userIdentifier)} ` +
          `(${[...String(read.body.userIdentifier)].map((c) => c.codePointAt(0)!.toString(16)).join(' ')}), ` +
          `sent ${JSON.stringify(sent)}`,
      );
    }
  };
  for (const [name, value] of values) {
    const created = await svc.v1(partner.secret, 'POST', '/wallets', {
      type: 'EVM',
      userIdentifier: value,
      userIdentifierType: 'CUSTOM_ID',
    });
    await check(`create, ${name}`, value, created);
    const holder = await svc.v1(partner.secret, 'POST', '/wallets', {
      type: 'SUI',
      userIdentifier: `unicode-patch-${name}`,
      userIdentifierType: 'CUSTOM_ID',
    });
    assert.equal(holder.status, 201);
    const patched = await svc.v1(partner.secret, 'PATCH', `/wallets/${holder.body.id}`, { userIdentifier: value });
    await check(`patch, ${name}`, value, patched);
  }
  // Bytes that are not UTF-8 at all: refused, or stored as exactly what the create answer says.
  const invalidUtf8 = Buffer.concat([
    Buffer.from('{"type":"STELLAR","userIdentifier":"x'),
    Buffer.from([0xff, 0xfe, 0xc3]),
    Buffer.from('","userIdentifierType":"CUSTOM_ID"}'),
  ]);
  const raw = await rawRequest(svc.url, {
    method: 'POST',
    path: '/v1/wallets',
    headers: { ...v1Auth(), 'content-type': JSON_CT },
    body: invalidUtf8,
  });
  if (raw.status >= 400) {
    failures.push(...envelopeProblems(raw).map((p) => `invalid UTF-8: ${p}`));
  } else {
    const created = raw.body as { id: string; userIdentifier: string };
    const read = await svc.v1(partner.secret, 'GET', `/wallets/${created.id}`);
    if (read.body.userIdentifier !== created.userIdentifier)
      failures.push('invalid UTF-8: read back differs from the create answer');
  }
  assert.equal(failures.length, 0, `${failures.length} unicode problem(s):\n  ${failures.join('\n  ')}`);
});
