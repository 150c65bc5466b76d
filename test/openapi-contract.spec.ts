/**
 * Walks both OpenAPI documents (the public listener's and the admin listener's) and fails for any operation a
 * partner or an operator could not use from the document alone: no summary or description, a response without a
 * description or schema, an error response without its codes (as a `code` enum for generated clients, and the same
 * list in its description), a rate-limited answer without `Retry-After`, a code that is not in the error catalogue,
 * or an answer whose schema is not a named component. What a test run observes is checked against the same documents when
 * each test service stops (test/helpers/contract-check.ts).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { DEFAULT_ADMIN_HOST, DEFAULT_ADMIN_PORT, DEFAULT_HOST, DEFAULT_PORT } from '../api/config.ts';
import { statusesOf } from '../chains/domain/error-catalogue.ts';
import { EVENT_TYPES, type EventType, UNSENT_EVENT_TYPES } from '../chains/domain/events.ts';
import { documentedEventProblems, type EventsDoc } from './helpers/event-contract-check.ts';
import { describedCodes, enumCodes } from './helpers/openapi-codes.ts';
import { startTestService, type TestService } from './helpers/service.ts';

type Response = {
  description?: string;
  content?: Record<string, { schema?: { $ref?: string; allOf?: unknown[] } }>;
  headers?: Record<string, unknown>;
};
/** `x-always-error` (api/schemas/errors.ts alwaysError): every call of the operation answers this error. */
type AlwaysError = { status: number; code: string };
type Operation = {
  'x-always-error'?: AlwaysError;
  operationId?: string;
  summary?: string;
  description?: string;
  security?: unknown[];
  responses?: Record<string, Response>;
  requestBody?: unknown;
};
type Webhook = {
  operationId?: string;
  description?: string;
  tags?: string[];
  parameters?: Array<{ in: string; name: string; required?: boolean; description?: string }>;
  requestBody?: { required?: boolean; content?: Record<string, { schema?: { $ref?: string } }> };
  responses?: Record<string, { description?: string }>;
};
type Component = {
  allOf?: Array<{ $ref?: string; properties?: Record<string, { enum?: string[]; $ref?: string }> }>;
  properties?: Record<string, unknown>;
  required?: string[];
};
type Doc = {
  openapi: string;
  webhooks?: Record<string, { post?: Webhook }>;
  tags?: Array<{ name: string }>;
  servers?: Array<{ url: string; description?: string }>;
  paths: Record<string, Record<string, Operation>>;
  components?: Record<string, unknown>;
};

let svc: TestService;
let docs: Array<{ name: string; doc: Doc }>;

before(async () => {
  svc = await startTestService();
  docs = [
    { name: 'public', doc: (await (await fetch(`${svc.url}/openapi.json`)).json()) as Doc },
    { name: 'admin', doc: (await (await fetch(`${svc.adminUrl}/openapi.json`)).json()) as Doc },
  ];
});
after(async () => {
  await svc.stop();
});

function operations(): Array<{ where: string; op: Operation; method: string }> {
  const out: Array<{ where: string; op: Operation; method: string }> = [];
  for (const { name, doc } of docs) {
    for (const [path, methods] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(methods))
        out.push({ where: `${name} ${method.toUpperCase()} ${path}`, op, method });
    }
  }
  return out;
}

test('every operation has an operationId (camelCase, unique), a summary, a description and its security scheme', () => {
  const problems: string[] = [];
  const ids = new Map<string, string>();
  for (const { where, op } of operations()) {
    if (!op.operationId || !/^[a-z][A-Za-z0-9]*$/.test(op.operationId))
      problems.push(`${where}: no camelCase operationId`);
    else if (ids.has(op.operationId))
      problems.push(`${where}: operationId ${op.operationId} also names ${ids.get(op.operationId)}`);
    else ids.set(op.operationId, where);
    if (!op.summary) problems.push(`${where}: no summary`);
    if (!op.description || op.description.length < 20) problems.push(`${where}: no description`);
    if (!op.security?.length) problems.push(`${where}: no security scheme`);
  }
  assert.deepEqual(problems, []);
  assert.ok(operations().length >= 36, `${operations().length} operations documented`);
});

test('every response has a description and a schema; every error response lists catalogued codes of its status', () => {
  const problems: string[] = [];
  for (const { where, op } of operations()) {
    const responses = Object.entries(op.responses ?? {});
    const always = op['x-always-error'];
    if (always) {
      // A route no call of which can succeed: no success response, its error documented (and sent, below).
      if (responses.some(([s]) => /^[23]/.test(s))) problems.push(`${where}: x-always-error with a success response`);
      const documented = op.responses?.[String(always.status)];
      if (!documented || !enumCodes(documented)?.includes(always.code)) {
        problems.push(`${where}: x-always-error ${always.status} ${always.code} is not among its responses`);
      }
      if (!/not available in this service/i.test(op.description ?? '')) {
        problems.push(`${where}: x-always-error, and the description does not say it is not available`);
      }
    } else if (!responses.some(([s]) => s.startsWith('2'))) problems.push(`${where}: no success response`);
    for (const [status, r] of responses) {
      if (!r.description || r.description === 'Default Response') problems.push(`${where} ${status}: no description`);
      if (status !== '204' && !r.content) problems.push(`${where} ${status}: no schema`);
      if (Number(status) >= 400) {
        const codes = enumCodes(r);
        if (!codes?.length) problems.push(`${where} ${status}: no code enum`);
        const described = describedCodes(r);
        if (described.length === 0) problems.push(`${where} ${status}: describes no error code`);
        if (codes && JSON.stringify(codes) !== JSON.stringify(described)) {
          problems.push(`${where} ${status}: code enum ${codes} differs from the described ${described}`);
        }
        for (const c of codes ?? []) {
          if (!statusesOf(c).includes(Number(status))) problems.push(`${where} ${status}: ${c} is not a ${status}`);
        }
      }
      if ((status === '429' || status === '503') && !r.headers?.['retry-after']) {
        problems.push(`${where} ${status}: no Retry-After header`);
      }
    }
  }
  assert.deepEqual(problems, []);
});

test('every operation marked x-always-error answers exactly its documented error, whatever the body', async () => {
  const partner = await svc.newPartner();
  const marked = operations().filter(({ op }) => op['x-always-error']);
  assert.ok(marked.length >= 10, `${marked.length} operations marked x-always-error`);
  const problems: string[] = [];
  for (const { where, op, method } of marked) {
    const always = op['x-always-error']!;
    assert.ok(where.startsWith('public '), `${where}: only partner routes are marked`);
    const route = where
      .slice(`public ${method.toUpperCase()} /v1`.length)
      .replace(/\{(\w+)\}/g, (_m, name: string) => `${name}-1`);
    const bodies = method === 'get' || method === 'delete' ? [undefined] : [{}, { consent: true, userId: 'u-1' }];
    for (const body of bodies) {
      const r = await svc.v1(partner.secret, method.toUpperCase(), route, body);
      const seen = `${r.status} ${r.body?.code}`;
      if (seen !== `${always.status} ${always.code}`) problems.push(`${where} ${JSON.stringify(body)}: ${seen}`);
      else if (r.body.errors?.[0]?.code !== always.code) problems.push(`${where}: errors[0].code is not the code`);
    }
  }
  assert.deepEqual(problems, []);
});

test('every answer is a named component: a success schema refers to one, an error one extends Error', () => {
  const problems: string[] = [];
  for (const { where, op } of operations()) {
    for (const [status, r] of Object.entries(op.responses ?? {})) {
      const schema = r.content?.['application/json']?.schema;
      if (!schema) continue;
      const named = Number(status) >= 400 ? (schema.allOf?.[0] as { $ref?: string } | undefined)?.$ref : schema.$ref;
      const expected = Number(status) >= 400 ? '#/components/schemas/Error' : /^#\/components\/schemas\/[A-Z]\w+$/;
      if (typeof expected === 'string' ? named !== expected : !expected.test(named ?? '')) {
        problems.push(`${where} ${status}: ${JSON.stringify(schema).slice(0, 80)} is not a named component`);
      }
    }
  }
  assert.deepEqual(problems, []);
  const names = Object.keys((docs.find((d) => d.name === 'public')!.doc.components?.['schemas'] ?? {}) as object);
  for (const name of [
    'Error',
    'Pagination',
    'Wallet',
    'WalletListItem',
    'WalletList',
    'Signature',
    'SignedTransaction',
    'SuiSignedTransaction',
    'SignedAuthorization',
    'TransactionRecord',
    'TransactionList',
    'FeeEstimate',
  ]) {
    assert.ok(names.includes(name), `the public document has no ${name} component`);
  }
});

test('every partner route answers the authentication and rate-limit codes; every admin route the admin token', () => {
  const problems: string[] = [];
  for (const { where, op } of operations()) {
    const all = new Set(Object.values(op.responses ?? {}).flatMap((r) => enumCodes(r) ?? []));
    const needed = where.startsWith('public')
      ? ['API_KEY_REQUIRED', 'INVALID_API_KEY', 'IP_NOT_ALLOWED', 'RATE_LIMITED', 'INVALID_REQUEST', 'INTERNAL_ERROR']
      : ['ADMIN_TOKEN_REQUIRED', 'INVALID_ADMIN_TOKEN', 'RATE_LIMITED', 'INVALID_REQUEST', 'INTERNAL_ERROR'];
    for (const c of needed) if (!all.has(c)) problems.push(`${where}: ${c} missing`);
  }
  assert.deepEqual(problems, []);
});

test("both documents name their listener's default address as the server; the docs page tries its own first", async () => {
  const expected = {
    public: `http://${DEFAULT_HOST}:${DEFAULT_PORT}`,
    admin: `http://${DEFAULT_ADMIN_HOST}:${DEFAULT_ADMIN_PORT}`,
  };
  for (const { name, doc } of docs) {
    const servers = doc.servers ?? [];
    assert.equal(servers.length, 1, name);
    assert.equal(servers[0]?.url, expected[name as keyof typeof expected], name);
    assert.match(servers[0]?.description ?? '', /default address/, name);
  }
  const page = (await (await fetch(`${svc.url}/docs/json`)).json()) as Doc;
  assert.deepEqual(
    page.servers?.map((s) => s.url),
    ['/', expected.public],
  );
});

test('every event the service sends is a webhook of the public document: its payload, headers, signing rule, 2xx', () => {
  const doc = docs.find((d) => d.name === 'public')!.doc;
  const schemas = (doc.components?.['schemas'] ?? {}) as Record<string, Component>;
  const component = (ref: string | undefined) => schemas[(ref ?? '').replace('#/components/schemas/', '')];
  assert.deepEqual(Object.keys(doc.webhooks ?? {}).sort(), [...EVENT_TYPES].sort());
  for (const unsent of UNSENT_EVENT_TYPES) assert.equal(doc.webhooks?.[unsent], undefined, unsent);
  assert.deepEqual(schemas['WebhookEvent']?.required, ['id', 'type', 'createdAt', 'data']);
  const pathIds = new Set(operations().map(({ op }) => op.operationId));
  const tags = new Set((doc.tags ?? []).map((t) => t.name));
  const problems: string[] = [];
  for (const type of EVENT_TYPES) {
    const op = doc.webhooks?.[type]?.post;
    if (!op) {
      problems.push(`${type}: no POST`);
      continue;
    }
    if (!op.operationId || !/^[a-z][A-Za-z0-9]*$/.test(op.operationId) || pathIds.has(op.operationId)) {
      problems.push(`${type}: operationId ${op.operationId} missing, not camelCase or taken`);
    }
    if (!op.tags?.length || !op.tags.every((t) => tags.has(t))) problems.push(`${type}: no defined tag`);
    const event = component(op.requestBody?.content?.['application/json']?.schema?.$ref);
    if (!op.requestBody?.required || !event) problems.push(`${type}: no named payload schema`);
    const [envelope, own] = event?.allOf ?? [];
    if (envelope?.$ref !== '#/components/schemas/WebhookEvent') problems.push(`${type}: not the envelope`);
    if (JSON.stringify(own?.properties?.['type']?.enum) !== JSON.stringify([type])) problems.push(`${type}: type`);
    const data = component(own?.properties?.['data']?.$ref);
    if (!data || Object.keys(data.properties ?? {}).length === 0) problems.push(`${type}: no named data schema`);
    for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) {
      const header = op.parameters?.find((p) => p.in === 'header' && p.name === name);
      if (!header?.required || !header.description) problems.push(`${type}: header ${name} not described`);
    }
    for (const rule of [
      '`<webhook-timestamp>.<raw body>`',
      'HMAC-SHA256',
      '`whsec_',
      'base64',
      '`v1,`',
      '300 seconds',
      '`<webhook-id>.<webhook-timestamp>.<raw body>`',
    ]) {
      if (!op.description?.includes(rule)) problems.push(`${type}: the description does not say ${rule}`);
    }
    if (!op.responses?.['2XX']?.description) problems.push(`${type}: no 2XX response`);
  }
  assert.deepEqual(problems, []);
});

/** One event of each type as its emitter writes it (actors/, api/services/): what the documents must accept. */
const SAMPLE_DATA: Record<EventType, Record<string, unknown>> = {
  'wallet.created': {
    userId: 'user-1',
    walletId: 'w1',
    walletAddress: '0xabc',
    walletType: 'EVM',
    walletCreatedAt: '2030-01-01T00:00:00.000Z',
  },
  'wallet.pregen_claimed': {
    userId: 'user-1',
    walletId: 'w1',
    walletAddress: 'So1ana',
    walletType: 'SOLANA',
    claimedAt: '2030-01-01T00:00:00.000Z',
  },
  'transaction.signed': {
    userId: 'user-1',
    walletId: 'w1',
    walletAddress: '0xabc',
    chainId: null,
    signedAt: '2030-01-01T00:00:00.000Z',
  },
  'send.broadcasted': {
    userId: 'user-1',
    walletId: 'w1',
    txHash: '0xh',
    type: 'EVM',
    evmChainId: '8453',
    isDevnet: false,
    broadcastedAt: '2030-01-01T00:00:00.000Z',
  },
  'send.confirmed': {
    userId: 'user-1',
    walletId: 'w1',
    txHash: 'sig',
    type: 'SOLANA',
    isDevnet: true,
    confirmedAt: '2030-01-01T00:00:00.000Z',
  },
  'send.failed': {
    userId: 'user-1',
    walletId: 'w1',
    txHash: null,
    type: 'EVM',
    evmChainId: '1',
    isDevnet: false,
    error: 'the enclave could not sign',
    failedAt: '2030-01-01T00:00:00.000Z',
  },
  'rest.transaction.confirmed': {
    transactionId: 't1',
    walletId: 'w1',
    partnerId: 'p1',
    intentKind: 'transfer',
    type: 'EVM',
    hash: '0xh',
    blockNumber: '12',
    blockHash: '0xb',
    resolvedAt: '2030-01-01T00:00:00.000Z',
  },
  'rest.transaction.failed': {
    transactionId: 't1',
    walletId: 'w1',
    partnerId: 'p1',
    intentKind: 'sign_transaction',
    type: 'SOLANA',
    status: 'failed',
    hash: null,
    resolvedAt: '2030-01-01T00:00:00.000Z',
    failureStage: 'mpc_sign',
    failureCode: 'SIGNING_FAILED',
    failureMessage: 'the enclave could not sign',
  },
  'test.ping': { apiKeyId: 'k1', pingedAt: '2030-01-01T00:00:00.000Z' },
};

const stored = (type: string, data: unknown) => ({
  id: 'evt_00000000-0000-4000-8000-000000000000',
  type,
  createdAt: '2030-01-01T00:00:00.000Z',
  data: JSON.stringify(data),
});

test("the event check accepts each event type's emitted shape and names a field out of its schema", async () => {
  const doc = docs.find((d) => d.name === 'public')!.doc as EventsDoc;
  assert.deepEqual(
    await documentedEventProblems(
      doc,
      EVENT_TYPES.map((t) => stored(t, SAMPLE_DATA[t])),
    ),
    [],
  );
  const { error: _error, ...withoutError } = SAMPLE_DATA['send.failed'];
  assert.deepEqual(await documentedEventProblems(doc, [stored('send.failed', withoutError)]), []);
  const wrong = await documentedEventProblems(doc, [
    stored('wallet.created', { ...SAMPLE_DATA['wallet.created'], walletType: 'BITCOIN' }),
    stored('send.confirmed', { ...SAMPLE_DATA['send.confirmed'], isDevnet: 'true' }),
    stored('test.ping', { apiKeyId: 'k1' }),
    stored('transaction.signed', { ...SAMPLE_DATA['transaction.signed'], signedAt: 'yesterday' }),
    stored('rest.transaction.failed', { ...SAMPLE_DATA['rest.transaction.failed'], chainOutcome: 'revert' }),
    stored('user.created', { userId: 'u' }),
  ]);
  for (const expected of [
    /^wallet\.created: .*walletType/,
    /^send\.confirmed: .*isDevnet/,
    /^test\.ping: .*pingedAt/,
    /^transaction\.signed: .*signedAt/,
    /^rest\.transaction\.failed: data\.chainOutcome is not documented$/,
    /^user\.created: no webhooks entry/,
  ]) {
    assert.ok(
      wrong.some((p) => expected.test(p)),
      `${expected} among ${JSON.stringify(wrong)}`,
    );
  }
});

test('every request example of the public document passes the route it documents', async () => {
  const partner = await svc.newPartner();
  const wallet = await svc.v1(partner.secret, 'POST', '/wallets', {
    type: 'EVM',
    userIdentifier: 'examples',
    userIdentifierType: 'CUSTOM_ID',
  });
  assert.equal(wallet.status, 201);
  const publicDoc = docs.find((d) => d.name === 'public')!.doc;
  let sent = 0;
  for (const [path, methods] of Object.entries(publicDoc.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      const body = op.requestBody as {
        content?: Record<string, { example?: unknown; schema?: { examples?: unknown[] } }>;
      };
      const media = body?.content?.['application/json'];
      for (const example of [media?.example, ...(media?.schema?.examples ?? [])].filter((e) => e !== undefined)) {
        const route = path.replace('/v1', '').replace('{walletId}', wallet.body.id);
        const r = await svc.v1(partner.secret, method.toUpperCase(), route, example);
        sent += 1;
        assert.ok(
          !['INVALID_REQUEST', 'INVALID_JSON'].includes(r.body?.code),
          `${method.toUpperCase()} ${path}: its example is refused: ${JSON.stringify(r.body)}`,
        );
      }
    }
  }
  assert.ok(sent >= 3, `${sent} examples sent`);
});
