/**
 * Walks both OpenAPI documents (the public listener's and the admin listener's) and fails for any operation a
 * partner or an operator could not use from the document alone: no summary or description, a response without a
 * description or schema, an error response without its codes, a rate-limited answer without `Retry-After`, or a
 * code that is not in the error catalogue. What a test run observes is checked against the same documents when
 * each test service stops (test/helpers/contract-check.ts).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { statusesOf } from '../chains/domain/error-catalogue.ts';
import { startTestService, type TestService } from './helpers/service.ts';

type Response = { description?: string; content?: unknown; headers?: Record<string, unknown> };
type Operation = {
  operationId?: string;
  summary?: string;
  description?: string;
  security?: unknown[];
  responses?: Record<string, Response>;
  requestBody?: unknown;
};
type Doc = { openapi: string; paths: Record<string, Record<string, Operation>>; components?: Record<string, unknown> };

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
    if (!responses.some(([s]) => s.startsWith('2'))) problems.push(`${where}: no success response`);
    for (const [status, r] of responses) {
      if (!r.description || r.description === 'Default Response') problems.push(`${where} ${status}: no description`);
      if (status !== '204' && !r.content) problems.push(`${where} ${status}: no schema`);
      if (Number(status) >= 400) {
        const codes = [...(r.description ?? '').matchAll(/^- `([A-Z0-9_]+)`/gm)].map((m) => m[1]!);
        if (codes.length === 0) problems.push(`${where} ${status}: lists no error code`);
        for (const c of codes) {
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

test('every partner route answers the authentication and rate-limit codes; every admin route the admin token', () => {
  const problems: string[] = [];
  for (const { where, op } of operations()) {
    const all = Object.values(op.responses ?? {})
      .map((r) => r.description ?? '')
      .join('\n');
    const needed = where.startsWith('public')
      ? ['API_KEY_REQUIRED', 'INVALID_API_KEY', 'IP_NOT_ALLOWED', 'RATE_LIMITED', 'INVALID_REQUEST', 'INTERNAL_ERROR']
      : ['ADMIN_TOKEN_REQUIRED', 'INVALID_ADMIN_TOKEN', 'RATE_LIMITED', 'INVALID_REQUEST', 'INTERNAL_ERROR'];
    for (const c of needed) if (!all.includes(`\`${c}\``)) problems.push(`${where}: ${c} missing`);
  }
  assert.deepEqual(problems, []);
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
