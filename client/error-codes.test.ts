/**
 * The generated client narrows an error's `code` to the codes its route declares. The `@ts-expect-error` lines are the
 * type-level half: `npm run typecheck` fails once a code the route cannot answer compiles (the narrowing is lost) or
 * a real code stops compiling. The runtime half reads the committed document the types come from.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { type CustodyErrorCode, createCustodyClient } from './src/index.ts';

type CodedSchema = { allOf?: [{ $ref: string }, { properties: { code: { enum: string[] } } }] };
type Doc = {
  paths: Record<
    string,
    Record<string, { responses: Record<string, { content?: { 'application/json'?: { schema: CodedSchema } } }> }>
  >;
};

const here = path.dirname(fileURLToPath(import.meta.url));
const doc = JSON.parse(fs.readFileSync(path.join(here, 'openapi.json'), 'utf8')) as Doc;

/** The `code` enum of a response of the committed document (none for a success response). */
function codeEnum(pathName: string, method: string, status: string): string[] | undefined {
  const schema = doc.paths[pathName]?.[method]?.responses[status]?.content?.['application/json']?.schema;
  return schema?.allOf?.[1].properties.code.enum;
}

/** A client whose every call answers `status` with `body`, as the service would. */
function answering(status: number, body: unknown) {
  return createCustodyClient({
    baseUrl: 'http://custody.test',
    apiKey: 'sk_dev_test',
    fetch: async () => new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } }),
  });
}

test('a create-wallet error narrows to the route codes: a code it cannot answer does not compile', async () => {
  const custody = answering(409, { code: 'WALLET_ALREADY_EXISTS', message: 'exists', walletId: 'w1' });
  const { data, error } = await custody.POST('/v1/wallets', {
    body: { type: 'EVM', userIdentifier: 'user-1', userIdentifierType: 'CUSTOM_ID' },
  });
  assert.equal(data, undefined);
  assert.ok(error);
  let seen = '';
  switch (error.code) {
    case 'WALLET_ALREADY_EXISTS': {
      const code: 'WALLET_ALREADY_EXISTS' = error.code;
      seen = code;
      break;
    }
    // @ts-expect-error: not a code at all
    case 'NOT_A_CODE':
      seen = 'impossible';
      break;
    // @ts-expect-error: a catalogued code, but not one creating a wallet answers
    case 'TRANSACTION_NOT_FOUND':
      seen = 'impossible';
      break;
  }
  assert.equal(seen, 'WALLET_ALREADY_EXISTS');
  // @ts-expect-error: the comparison of two literal types that do not overlap
  assert.equal(error.code === 'NOT_A_CODE', false);
});

test('CustodyErrorCode is the union of every partner route code, nothing else', () => {
  const real: CustodyErrorCode = 'TRANSACTION_NOT_FOUND';
  // @ts-expect-error: not a code any route answers
  const fake: CustodyErrorCode = 'NOT_A_CODE';
  const all = new Set<string>();
  for (const [pathName, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      for (const status of Object.keys(op.responses)) {
        for (const c of codeEnum(pathName, method, status) ?? []) all.add(c);
      }
    }
  }
  assert.ok(all.has(real));
  assert.ok(!all.has(fake));
});

test("the document's create-wallet 409 lists WALLET_ALREADY_EXISTS in its code enum, and not a made-up code", () => {
  const schema = doc.paths['/v1/wallets']?.['post']?.responses['409']?.content?.['application/json']?.schema;
  assert.deepEqual(schema?.allOf?.[0], { $ref: '#/components/schemas/Error' });
  const codes = codeEnum('/v1/wallets', 'post', '409') ?? [];
  assert.ok(codes.includes('WALLET_ALREADY_EXISTS'));
  assert.ok(!codes.includes('NOT_A_CODE'));
  assert.ok(!codes.includes('TRANSACTION_NOT_FOUND'));
});
