import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, type TestContext, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { snapshotChanges, snapshotDb } from './helpers/bad-input-db.ts';
import { envelopeProblems, rawRequest } from './helpers/bad-input-http.ts';
import {
  BAD_IDS,
  type BadCase,
  type BodyVariant,
  EVM_TRANSACTION,
  type FieldSpec,
  fieldVariants,
  JSON_CT,
  MAIL_TYPED_DATA,
  nestedVariants,
  parseLevelVariants,
  runCases,
  shapeVariants,
  withBodies,
} from './helpers/bad-input-matrix.ts';
import {
  type EnclaveKey,
  encryptForEnclave,
  flipDataByte,
  type MigrationEnvelope,
  migrationPayload,
  randomSigner,
  shareEntry,
  sharePlaintext,
  truncateData,
} from './helpers/migration-client.ts';
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
/** Managed wallets of other types, for the signing routes' type checks. */
let solanaWalletId: string;
let cosmosWalletId: string;
/** Pre-generated EVM wallets: one migrated by the control request, one left to refuse, one claimed. */
type Pregen = { wallet: { id: string; scheme: string }; userShare: string };
let pregenControl: Pregen;
let pregenTarget: Pregen;
let pregenClaimed: Pregen;
/** A managed wallet the claim matrix must leave unclaimed. */
let claimTargetId: string;
let enclaveKey: EnclaveKey;

const v1Auth = () => ({ 'x-api-key': partner.secret });
const adminAuth = () => ({ authorization: `Bearer ${svc.adminToken}` });

/** Sends a valid request through the same raw client: proves the route and auth work before the matrix. */
async function control(method: string, path: string, headers: Record<string, string>, body?: unknown) {
  const res = await rawRequest(svc.urlFor(path), {
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
  const failures = await runCases(svc.urlFor, cases, { forbidden: [partner.secret, target.secret, svc.adminToken] });
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
  const managed = async (type: string, userIdentifier: string) => {
    const r = await svc.v1(partner.secret, 'POST', '/wallets', {
      type,
      userIdentifier,
      userIdentifierType: 'CUSTOM_ID',
    });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    return r.body.id as string;
  };
  solanaWalletId = await managed('SOLANA', 'bad-input-solana');
  cosmosWalletId = await managed('COSMOS', 'bad-input-cosmos');
  claimTargetId = await managed('EVM', 'bad-input-claim-target');
  const pregen = async (userIdentifier: string): Promise<Pregen> => {
    const r = await svc.admin('POST', `/projects/${partner.projectId}/pregenerated-wallets`, {
      type: 'EVM',
      userIdentifier,
      userIdentifierType: 'CUSTOM_ID',
    });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    return r.body;
  };
  pregenControl = await pregen('bad-input-pregen-control');
  pregenTarget = await pregen('bad-input-pregen-target');
  pregenClaimed = await pregen('bad-input-pregen-claimed');
  assert.equal((await svc.admin('POST', `/wallets/${pregenClaimed.wallet.id}/claim`)).status, 200);
  const k = await svc.v1(partner.secret, 'GET', '/enclave/public-key');
  assert.equal(k.status, 200, JSON.stringify(k.body));
  enclaveKey = k.body;
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

/** The same body on a route of another wallet (type checks), or with another project's key. */
function otherWallet(name: string, method: string, path: string, body: unknown, headers = v1Auth()): BadCase {
  return { name, method, path, headers: { ...headers, 'content-type': JSON_CT }, body: JSON.stringify(body) };
}

describe('/v1 signing routes', () => {
  const signPath = (route: string, id = walletId) => `/v1/wallets/${id}/${route}`;
  const route = (name: string) => ({ method: 'POST', path: signPath(name), headers: v1Auth() });
  const semantic = (variants: Array<[string, unknown]>): BodyVariant[] =>
    variants.map(([name, body]) => ({ name: `semantic: ${name}`, body: JSON.stringify(body), status: 400 }));

  test('POST sign-message: bad bodies and ids are refused and sign nothing', async (t) => {
    await control('POST', signPath('sign-message'), v1Auth(), { message: 'bad-input-control' });
    const valid = { message: 'bad-input' };
    const fields: FieldSpec[] = [{ name: 'message', kind: 'string', required: true, maxLength: 65_536 }];
    const cases = [
      ...withBodies(route('sign-message'), parseLevelVariants(valid)),
      ...withBodies(route('sign-message'), shapeVariants(valid)),
      ...withBodies(route('sign-message'), fieldVariants(valid, fields)),
      ...withBodies(
        route('sign-message'),
        semantic([
          ['a lone surrogate', { message: 'a\ud800b' }],
          ['80,000 UTF-8 bytes in 40,000 characters', { message: '\u00e9'.repeat(40_000) }],
        ]),
      ),
      ...idCases('POST', '/v1/wallets/{id}/sign-message', v1Auth(), valid),
      otherWallet("another project's key", 'POST', signPath('sign-message'), valid, { 'x-api-key': target.secret }),
    ];
    await assertAllRefused(t, cases, 60);
  });

  test('POST sign-raw: bad hex, lengths, walletType, bodies and ids are refused', async (t) => {
    await control('POST', signPath('sign-raw'), v1Auth(), { data: `0x${'cd'.repeat(32)}` });
    const valid = { data: `0x${'ab'.repeat(32)}`, walletType: 'EVM' };
    const fields: FieldSpec[] = [
      { name: 'data', kind: 'string', required: true, maxLength: 2 + 2 * 65_536, notBlank: true },
      { name: 'walletType', kind: 'enum', required: false, values: WALLET_TYPES, bad: ['BITCOIN', 'ETH'] },
    ];
    const cases = [
      ...withBodies(route('sign-raw'), parseLevelVariants(valid)),
      ...withBodies(route('sign-raw'), shapeVariants(valid)),
      ...withBodies(route('sign-raw'), fieldVariants(valid, fields)),
      ...withBodies(
        route('sign-raw'),
        semantic([
          ['data not hex', { data: 'zz'.repeat(32) }],
          ['data of odd length', { data: 'abc' }],
          ['data 0x only', { data: '0x' }],
          ['data 0x0x', { data: `0x0x${'ab'.repeat(31)}` }],
          ['data with spaces', { data: `ab ${'cd'.repeat(31)}` }],
          ['31 bytes on a secp256k1 wallet', { data: 'ab'.repeat(31) }],
          ['33 bytes on a secp256k1 wallet', { data: 'ab'.repeat(33) }],
          ['walletType SOLANA on an EVM wallet', { ...valid, walletType: 'SOLANA' }],
          ['walletType COSMOS on an EVM wallet', { ...valid, walletType: 'COSMOS' }],
        ]),
      ),
      otherWallet('walletType EVM on a SOLANA wallet', 'POST', signPath('sign-raw', solanaWalletId), valid),
      otherWallet('odd hex on a SOLANA wallet', 'POST', signPath('sign-raw', solanaWalletId), { data: 'abc' }),
      ...idCases('POST', '/v1/wallets/{id}/sign-raw', v1Auth(), valid),
    ];
    await assertAllRefused(t, cases, 80);
  });

  test('POST sign-transaction: bad transactions, flags, bodies and ids are refused and sign nothing', async (t) => {
    await control('POST', signPath('sign-transaction'), v1Auth(), { transaction: EVM_TRANSACTION });
    const valid = { transaction: { ...EVM_TRANSACTION } };
    const fields: FieldSpec[] = [
      { name: 'transaction', kind: 'object', required: true },
      { name: 'broadcast', kind: 'boolean', required: false },
      { name: 'network', kind: 'enum', required: false, values: ['SOLANA', 'SOLANA_DEVNET'], bad: ['MAINNET'] },
      { name: 'networkPassphrase', kind: 'string', required: false, maxLength: 256, notBlank: true },
    ];
    const tx = (patch: Record<string, unknown>) => ({ transaction: { ...EVM_TRANSACTION, ...patch } });
    const { chainId: _chainId, ...withoutChainId } = EVM_TRANSACTION;
    const cases = [
      ...withBodies(route('sign-transaction'), parseLevelVariants(valid)),
      ...withBodies(route('sign-transaction'), shapeVariants(valid)),
      ...withBodies(route('sign-transaction'), fieldVariants(valid, fields)),
      ...withBodies(
        route('sign-transaction'),
        semantic([
          ['to not an address', tx({ to: 'not-an-address' })],
          ['to of 19 bytes', tx({ to: `0x${'12'.repeat(19)}` })],
          ['to with non-hex characters', tx({ to: `0x${'g'.repeat(40)}` })],
          ['to a number', tx({ to: 42 })],
          ['value negative', tx({ value: '-1' })],
          ['value a fraction', tx({ value: '1.5' })],
          ['value not a number', tx({ value: 'abc' })],
          ['value above uint256', tx({ value: `1${'0'.repeat(78)}` })],
          ['value an object', tx({ value: {} })],
          ['chainId missing', { transaction: withoutChainId }],
          ['chainId negative', tx({ chainId: -1 })],
          ['chainId a fraction', tx({ chainId: 1.5 })],
          ['chainId not a number', tx({ chainId: 'abc' })],
          ['type 1', tx({ type: 1 })],
          ['type 3', tx({ type: 3 })],
          ['type a word', tx({ type: 'eip1559' })],
          ['nonce negative', tx({ nonce: -1 })],
          ['nonce a fraction', tx({ nonce: 1.5 })],
          ['gasLimit negative', tx({ gasLimit: '-1' })],
          ['gasLimit not a number', tx({ gasLimit: 'lots' })],
          ['maxFeePerGas negative', tx({ maxFeePerGas: '-2' })],
          ['maxPriorityFeePerGas above maxFeePerGas', tx({ maxFeePerGas: '1', maxPriorityFeePerGas: '2' })],
          ['gasPrice on a type 2 transaction', tx({ gasPrice: '2' })],
          ['data not hex', tx({ data: '0xzz' })],
          ['data of odd length', tx({ data: '0x123' })],
          ['an unknown transaction field', tx({ foo: 'bar' })],
          ['a base64 string for an EVM wallet', { transaction: 'AAAA' }],
          ['network on an EVM wallet', { ...valid, network: 'SOLANA_DEVNET' }],
          ['networkPassphrase on an EVM wallet', { ...valid, networkPassphrase: 'Test SDF Network ; September 2015' }],
        ]),
      ),
      otherWallet('COSMOS wallet (use sign-raw)', 'POST', signPath('sign-transaction', cosmosWalletId), valid),
      otherWallet('EVM object for a SOLANA wallet', 'POST', signPath('sign-transaction', solanaWalletId), valid),
      otherWallet('not base64 for a SOLANA wallet', 'POST', signPath('sign-transaction', solanaWalletId), {
        transaction: '!!!',
      }),
      otherWallet('base64 garbage for a SOLANA wallet', 'POST', signPath('sign-transaction', solanaWalletId), {
        transaction: 'AAAA',
        network: 'SOLANA_DEVNET',
      }),
      ...idCases('POST', '/v1/wallets/{id}/sign-transaction', v1Auth(), valid),
    ];
    await assertAllRefused(t, cases, 100);
  });

  test('POST sign-typed-data: bad typed data, bodies and ids are refused', async (t) => {
    await control('POST', signPath('sign-typed-data'), v1Auth(), { typedData: MAIL_TYPED_DATA });
    const valid = { typedData: MAIL_TYPED_DATA };
    const fields: FieldSpec[] = [{ name: 'typedData', kind: 'object', required: true }];
    const inner: FieldSpec[] = [
      { name: 'domain', kind: 'object', required: true },
      { name: 'types', kind: 'object', required: true },
      { name: 'primaryType', kind: 'string', required: true, maxLength: 256, notBlank: true },
      { name: 'message', kind: 'object', required: true },
    ];
    const td = (patch: Record<string, unknown>) => ({ typedData: { ...MAIL_TYPED_DATA, ...patch } });
    const { contents: _contents, ...messageWithoutContents } = MAIL_TYPED_DATA.message;
    const cases = [
      ...withBodies(route('sign-typed-data'), parseLevelVariants(valid)),
      ...withBodies(route('sign-typed-data'), shapeVariants(valid)),
      ...withBodies(route('sign-typed-data'), fieldVariants(valid, fields)),
      ...withBodies(
        route('sign-typed-data'),
        nestedVariants(valid, 'typedData', fieldVariants(MAIL_TYPED_DATA, inner)),
      ),
      ...withBodies(
        route('sign-typed-data'),
        semantic([
          [
            'EIP712Domain in types',
            td({
              types: {
                ...MAIL_TYPED_DATA.types,
                EIP712Domain: [
                  { name: 'name', type: 'string' },
                  { name: 'version', type: 'string' },
                  { name: 'chainId', type: 'uint256' },
                  { name: 'verifyingContract', type: 'address' },
                ],
              },
            }),
          ],
          ['primaryType not in types', td({ primaryType: 'Letter' })],
          ['message missing a field', td({ message: messageWithoutContents })],
          [
            'message address not an address',
            td({ message: { ...MAIL_TYPED_DATA.message, to: { name: 'Bob', wallet: 'bob' } } }),
          ],
          ['types entry not an array', td({ types: { ...MAIL_TYPED_DATA.types, Mail: 'x' } })],
          [
            'a field of an unknown type',
            td({ types: { ...MAIL_TYPED_DATA.types, Mail: [{ name: 'contents', type: 'uint999' }] } }),
          ],
          ['domain chainId not a number', td({ domain: { ...MAIL_TYPED_DATA.domain, chainId: 'abc' } })],
          [
            'domain verifyingContract not an address',
            td({ domain: { ...MAIL_TYPED_DATA.domain, verifyingContract: 'xyz' } }),
          ],
          ['an unknown key in typedData', td({ extra: 1 })],
        ]),
      ),
      otherWallet('a SOLANA wallet (EVM only)', 'POST', signPath('sign-typed-data', solanaWalletId), valid),
      ...idCases('POST', '/v1/wallets/{id}/sign-typed-data', v1Auth(), valid),
    ];
    await assertAllRefused(t, cases, 100);
  });

  test('POST sign-authorization: bad authorizations, bodies and ids are refused', async (t) => {
    const authorization = { address: EVM_TRANSACTION.to, chainId: 1, nonce: 0 };
    await control('POST', signPath('sign-authorization'), v1Auth(), { authorization });
    const valid = { authorization };
    const fields: FieldSpec[] = [{ name: 'authorization', kind: 'object', required: true }];
    const inner: FieldSpec[] = [
      { name: 'address', kind: 'string', required: false, maxLength: 64, notBlank: true },
      { name: 'chainId', kind: 'integer', required: true, min: 0, max: Number.MAX_SAFE_INTEGER },
      { name: 'nonce', kind: 'integer', required: true, min: 0, max: Number.MAX_SAFE_INTEGER },
    ];
    // contractAddress is the alias of address: its variants are sent in place of address.
    const aliased = { contractAddress: authorization.address, chainId: 1, nonce: 0 };
    const alias: FieldSpec[] = [
      { name: 'contractAddress', kind: 'string', required: false, maxLength: 64, notBlank: true },
    ];
    const cases = [
      ...withBodies(route('sign-authorization'), parseLevelVariants(valid)),
      ...withBodies(route('sign-authorization'), shapeVariants(valid)),
      ...withBodies(route('sign-authorization'), fieldVariants(valid, fields)),
      ...withBodies(
        route('sign-authorization'),
        nestedVariants(valid, 'authorization', fieldVariants(authorization, inner)),
      ),
      ...withBodies(route('sign-authorization'), nestedVariants(valid, 'authorization', fieldVariants(aliased, alias))),
      ...withBodies(
        route('sign-authorization'),
        semantic([
          ['neither address nor contractAddress', { authorization: { chainId: 1, nonce: 0 } }],
          ['address not an address', { authorization: { ...authorization, address: 'not-an-address' } }],
          ['address of 19 bytes', { authorization: { ...authorization, address: `0x${'12'.repeat(19)}` } }],
          ['address with non-hex characters', { authorization: { ...authorization, address: `0x${'g'.repeat(40)}` } }],
          ['an unknown key in authorization', { authorization: { ...authorization, v: 27 } }],
        ]),
      ),
      otherWallet('a SOLANA wallet (EVM only)', 'POST', signPath('sign-authorization', solanaWalletId), valid),
      ...idCases('POST', '/v1/wallets/{id}/sign-authorization', v1Auth(), valid),
    ];
    await assertAllRefused(t, cases, 100);
  });

  test('POST migrate-share: bad envelopes, oversized payloads, bodies, wallets and ids are refused and migrate nothing', async (t) => {
    await control('POST', signPath('migrate-share', pregenControl.wallet.id), v1Auth(), {
      encryptedPayload: migrationPayload(pregenControl.userShare, pregenControl.wallet, enclaveKey),
    });
    const targetId = pregenTarget.wallet.id;
    const payload = migrationPayload(pregenTarget.userShare, pregenTarget.wallet, enclaveKey);
    const valid = { encryptedPayload: payload };
    const envelope = JSON.parse(payload) as MigrationEnvelope;
    const fields: FieldSpec[] = [
      { name: 'encryptedPayload', kind: 'string', required: true, maxLength: 65_536, notBlank: true },
    ];
    // The spec's 64 KB limit on the payload answers 413, every other field variant 400.
    const fieldCases = fieldVariants(valid, fields).map((v) =>
      /characters|100 KB/.test(v.name) ? { ...v, status: 413, code: 'PAYLOAD_TOO_LARGE' } : v,
    );
    const env = (patch: Partial<MigrationEnvelope>) => ({
      encryptedPayload: JSON.stringify({ ...envelope, ...patch }),
    });
    const invalid = (name: string, body: unknown): BodyVariant => ({
      name: `semantic: ${name}`,
      body: JSON.stringify(body),
      status: 400,
      code: 'INVALID_PAYLOAD',
    });
    const encrypted = (plaintext: string) => ({
      encryptedPayload: JSON.stringify(encryptForEnclave(plaintext, enclaveKey)),
    });
    const semanticCases: BodyVariant[] = [
      invalid('payload not JSON', { encryptedPayload: 'not json' }),
      invalid('payload a JSON array', { encryptedPayload: '[]' }),
      invalid('wrong algorithm', env({ algorithm: 'ECIES-P256-AES128-SHA256' })),
      invalid('keyId not the fingerprint', env({ keyId: '0'.repeat(64) })),
      invalid('garbage ephemeral', env({ ephemeral: 'garbage' })),
      invalid('flipped ciphertext byte', { encryptedPayload: JSON.stringify(flipDataByte(envelope, 12)) }),
      invalid('truncated encryptedData', { encryptedPayload: JSON.stringify(truncateData(envelope, 20)) }),
      invalid('plaintext not JSON', encrypted('nope')),
      invalid(
        'a signer that does not complete the key',
        encrypted(sharePlaintext([shareEntry(targetId, 'DKLS', randomSigner())])),
      ),
      {
        name: 'semantic: the payload of another wallet',
        body: JSON.stringify({
          encryptedPayload: migrationPayload(pregenControl.userShare, pregenControl.wallet, enclaveKey),
        }),
        status: 400,
        code: 'PAYLOAD_WALLET_MISMATCH',
      },
    ];
    const cases = [
      ...withBodies({ ...route('migrate-share'), path: signPath('migrate-share', targetId) }, [
        ...parseLevelVariants(valid),
        // The deep object is past the route's body limit (80 KB): a 413 is a refusal as good as a 400.
        ...shapeVariants(valid).map((v) =>
          v.name.startsWith('deeply nested objects') ? { ...v, status: [400, 413] as const } : v,
        ),
        ...fieldCases,
        ...semanticCases,
      ]),
      ...idCases('POST', '/v1/wallets/{id}/migrate-share', v1Auth(), valid),
      {
        ...otherWallet('an API-key-managed wallet', 'POST', signPath('migrate-share', walletId), valid),
        status: 409,
        code: 'SHARE_ALREADY_MIGRATED',
      },
      {
        ...otherWallet('an already migrated wallet', 'POST', signPath('migrate-share', pregenControl.wallet.id), valid),
        status: 409,
        code: 'SHARE_ALREADY_MIGRATED',
      },
      {
        ...otherWallet('a claimed wallet', 'POST', signPath('migrate-share', pregenClaimed.wallet.id), {
          encryptedPayload: migrationPayload(pregenClaimed.userShare, pregenClaimed.wallet, enclaveKey),
        }),
        status: 403,
        code: 'WALLET_CLAIMED',
      },
      {
        ...otherWallet("another project's key", 'POST', signPath('migrate-share', targetId), valid, {
          'x-api-key': target.secret,
        }),
        status: 404,
        code: 'WALLET_NOT_FOUND',
      },
    ];
    await assertAllRefused(t, cases, 70);
    // The target is still locked, and its own payload still migrates it.
    const locked = await svc.v1(partner.secret, 'POST', `/wallets/${targetId}/sign-message`, { message: 'x' });
    assert.equal(locked.status, 403);
    assert.equal(locked.body.code, 'WALLET_SHARE_NOT_MIGRATED');
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
  test('PUT /admin/v1/api-keys/{keyId}/webhook: bad URLs, events, formats, bodies and ids leave the endpoint as it was', async (t) => {
    // A public address literal (no DNS) and only test.ping selected: nothing is ever queued for it here.
    const valid = { url: 'https://93.184.216.34/hook', events: ['test.ping'] };
    await control('PUT', `/admin/v1/api-keys/${target.keyId}/webhook`, adminAuth(), valid);
    const fields: FieldSpec[] = [
      { name: 'url', kind: 'string', required: true, maxLength: 2048 },
      {
        name: 'events',
        kind: 'string-array',
        // Left out, an existing endpoint keeps its events.
        required: false,
        maxItems: 32,
        itemMaxLength: 64,
        bad: [
          ['wallet.deleted'],
          ['user.deleted'],
          ['WALLET.CREATED'],
          ['wallet.created\u0000'],
          ['*'],
          ['test.ping', 'nope'],
          [],
        ],
      },
      { name: 'enabled', kind: 'boolean', required: false },
      {
        name: 'signatureFormat',
        kind: 'enum',
        required: false,
        values: ['timestamp-body', 'standard-webhooks'],
        bad: ['hmac', 'TIMESTAMP-BODY', 'standard_webhooks', ''],
      },
    ];
    const route = { method: 'PUT', path: `/admin/v1/api-keys/${target.keyId}/webhook`, headers: adminAuth() };
    const withUrl = (name: string, url: string, code = 'INVALID_REQUEST'): BadCase => ({
      name,
      ...route,
      headers: { ...adminAuth(), 'content-type': JSON_CT },
      body: JSON.stringify({ ...valid, url }),
      status: 400,
      code,
    });
    const cases: BadCase[] = [
      ...withBodies(route, parseLevelVariants(valid)),
      ...withBodies(route, shapeVariants(valid)),
      ...withBodies(route, fieldVariants(valid, fields)),
      ...idCases('PUT', '/admin/v1/api-keys/{id}/webhook', adminAuth(), valid),
      withUrl('http URL', 'http://93.184.216.34/hook'),
      withUrl('ftp URL', 'ftp://93.184.216.34/hook'),
      withUrl('javascript URL', 'javascript:alert(1)'),
      withUrl('credentials in the URL', 'https://user:pass@93.184.216.34/hook'),
      withUrl('a fragment', 'https://93.184.216.34/hook#x'),
      withUrl('no scheme', '93.184.216.34/hook'),
      withUrl('relative', '/hook'),
      withUrl('loopback', 'https://127.0.0.1/hook', 'WEBHOOK_TARGET_NOT_ALLOWED'),
      withUrl('IPv6 loopback', 'https://[::1]/hook', 'WEBHOOK_TARGET_NOT_ALLOWED'),
      withUrl('private', 'https://10.0.0.1/hook', 'WEBHOOK_TARGET_NOT_ALLOWED'),
      withUrl('metadata', 'https://169.254.169.254/latest', 'WEBHOOK_TARGET_NOT_ALLOWED'),
      withUrl('mapped loopback', 'https://[::ffff:7f00:1]/hook', 'WEBHOOK_TARGET_NOT_ALLOWED'),
      withUrl('decimal loopback', 'https://2130706433/hook', 'WEBHOOK_TARGET_NOT_ALLOWED'),
      withUrl('localhost', 'https://localhost/hook', 'WEBHOOK_TARGET_NOT_ALLOWED'),
      {
        name: 'key of a deleted project',
        method: 'PUT',
        path: `/admin/v1/api-keys/${deleted.keyId}/webhook`,
        headers: { ...adminAuth(), 'content-type': JSON_CT },
        body: JSON.stringify(valid),
        status: 404,
        code: 'API_KEY_NOT_FOUND',
      },
    ];
    await assertAllRefused(t, cases, 80);
  });

  test('webhook deliveries, redelivery and test: bad queries and ids are refused and queue nothing', async (t) => {
    await control('GET', `/admin/v1/api-keys/${target.keyId}/webhook/deliveries?limit=1`, adminAuth());
    const b64 = (x: string) => Buffer.from(x).toString('base64url');
    const list = `/admin/v1/api-keys/${target.keyId}/webhook/deliveries`;
    const queries: Array<[string, string]> = [
      ['limit 0', 'limit=0'],
      ['limit 101', 'limit=101'],
      ['limit not a number', 'limit=abc'],
      ['status unknown', 'status=failed'],
      ['status upper case', 'status=DEAD'],
      ['cursor not issued by the service', 'cursor=not-a-cursor'],
      ['cursor of another kind', `cursor=${b64('w:1')}`],
      ['cursor with 16 digits', `cursor=${b64('d:1234567890123456')}`],
      ['unknown parameter', 'eventId=evt_1'],
      ['repeated status', 'status=dead&status=pending'],
    ];
    const redeliver = (id: string) => `/admin/v1/api-keys/${target.keyId}/webhook/deliveries/${id}/redeliver`;
    const cases: BadCase[] = [
      ...queries.map(
        ([name, q]): BadCase => ({ name, method: 'GET', path: `${list}?${q}`, headers: adminAuth(), status: 400 }),
      ),
      ...idCases('GET', '/admin/v1/api-keys/{id}/webhook/deliveries', adminAuth()),
      ...idCases('POST', '/admin/v1/api-keys/{id}/webhook/test', adminAuth()),
      ...idCases('POST', '/admin/v1/api-keys/{id}/webhook/redeliver-dead', adminAuth()),
      ...idCases('POST', redeliver('{id}'), adminAuth()),
      {
        name: 'redeliver an event the endpoint never had',
        method: 'POST',
        path: redeliver('evt_00000000-0000-4000-8000-000000000000'),
        headers: adminAuth(),
        status: 404,
        code: 'DELIVERY_NOT_FOUND',
      },
      {
        name: 'test.ping for a key without an endpoint',
        method: 'POST',
        path: `/admin/v1/api-keys/${partner.keyId}/webhook/test`,
        headers: adminAuth(),
        status: 404,
        code: 'WEBHOOK_NOT_CONFIGURED',
      },
    ];
    await assertAllRefused(t, cases, 40);
  });

  test('GET /admin/v1/projects and …/{projectId}/api-keys: bad queries, cursors and ids are refused', async (t) => {
    await control('GET', '/admin/v1/projects?limit=1', adminAuth());
    await control('GET', `/admin/v1/projects/${target.projectId}/api-keys?limit=1`, adminAuth());
    const b64 = (x: string) => Buffer.from(x).toString('base64url');
    const queries: Array<[string, string]> = [
      ['limit 0', 'limit=0'],
      ['limit 101', 'limit=101'],
      ['limit not a number', 'limit=abc'],
      ['limit negative', 'limit=-1'],
      ['cursor not issued by the service', 'cursor=not-a-cursor'],
      ['empty cursor', 'cursor='],
      ['cursor of another list', `cursor=${b64('w:1')}`],
      ['cursor with 16 digits', `cursor=${b64('p:1234567890123456')}`],
      ['unknown parameter', 'plan=free'],
      ['repeated limit', 'limit=1&limit=2'],
    ];
    const keys = `/admin/v1/projects/${target.projectId}/api-keys`;
    const cases: BadCase[] = [
      ...queries.map(
        ([name, q]): BadCase => ({
          name: `projects: ${name}`,
          method: 'GET',
          path: `/admin/v1/projects?${q}`,
          headers: adminAuth(),
          status: 400,
        }),
      ),
      ...[
        ['deleted not a boolean', 'deleted=yes'],
        ['deleted upper case', 'deleted=TRUE'],
      ].map(
        ([name, q]): BadCase => ({
          name: `projects: ${name}`,
          method: 'GET',
          path: `/admin/v1/projects?${q}`,
          headers: adminAuth(),
          status: 400,
          code: 'INVALID_REQUEST',
        }),
      ),
      ...queries.map(
        ([name, q]): BadCase => ({
          name: `keys: ${name}`,
          method: 'GET',
          path: `${keys}?${q.replace(b64('p:1234567890123456'), b64('k:1234567890123456')).replace('plan=free', 'environment=production')}`,
          headers: adminAuth(),
          status: 400,
        }),
      ),
      {
        name: "keys: the projects list's cursor",
        method: 'GET',
        path: `${keys}?cursor=${b64('p:1')}`,
        headers: adminAuth(),
        status: 400,
        code: 'INVALID_CURSOR',
      },
      ...idCases('GET', '/admin/v1/projects/{id}/api-keys', adminAuth()),
      {
        name: 'keys of a deleted project',
        method: 'GET',
        path: `/admin/v1/projects/${deleted.projectId}/api-keys`,
        headers: adminAuth(),
        status: 404,
        code: 'PROJECT_NOT_FOUND',
      },
    ];
    await assertAllRefused(t, cases, 40);
  });

  test('POST /admin/v1/wallets/{walletId}/claim: bad bodies and ids claim nothing', async (t) => {
    const throwaway = await svc.v1(partner.secret, 'POST', '/wallets', {
      type: 'EVM',
      userIdentifier: 'bad-input-claim-control',
      userIdentifierType: 'CUSTOM_ID',
    });
    assert.equal(throwaway.status, 201);
    await control('POST', `/admin/v1/wallets/${throwaway.body.id}/claim`, adminAuth(), { userId: 'control' });
    const valid = { userId: 'bad-input-claimer' };
    const fields: FieldSpec[] = [{ name: 'userId', kind: 'string', required: false, maxLength: 256, notBlank: true }];
    // The body is optional: an empty object and null are valid claims, so they are not in this matrix.
    const shapes = shapeVariants(valid).filter((v) => v.name !== 'empty object' && v.name !== 'JSON null');
    const route = { method: 'POST', path: `/admin/v1/wallets/${claimTargetId}/claim`, headers: adminAuth() };
    const cases: BadCase[] = [
      ...withBodies(route, parseLevelVariants(valid)),
      ...withBodies(route, shapes),
      ...withBodies(route, fieldVariants(valid, fields)),
      ...withBodies(route, [
        { name: 'semantic: userId with a lone surrogate', body: JSON.stringify({ userId: 'a\ud800' }), status: 400 },
      ]),
      ...idCases('POST', '/admin/v1/wallets/{id}/claim', adminAuth(), valid),
      {
        name: 'a project id in place of a wallet id',
        method: 'POST',
        path: `/admin/v1/wallets/${target.projectId}/claim`,
        headers: adminAuth(),
        status: 404,
        code: 'WALLET_NOT_FOUND',
      },
      {
        name: 'an already claimed wallet',
        method: 'POST',
        path: `/admin/v1/wallets/${throwaway.body.id}/claim`,
        headers: adminAuth(),
        status: 409,
        code: 'WALLET_ALREADY_CLAIMED',
      },
    ];
    await assertAllRefused(t, cases, 60);
    // The target was never claimed: it still signs over REST.
    const signs = await svc.v1(partner.secret, 'POST', `/wallets/${claimTargetId}/sign-message`, { message: 'x' });
    assert.equal(signs.status, 200, JSON.stringify(signs.body));
  });

  test('POST /admin/v1/enclave/master-key/rotate: bad bodies prepare and rotate nothing', async (t) => {
    // The control is the status read: a valid rotate body would prepare a next key in this shared data directory.
    await control('GET', '/admin/v1/enclave/master-key', adminAuth());
    const valid = { confirmKeyId: '0123456789abcdef' };
    const fields: FieldSpec[] = [
      {
        name: 'confirmKeyId',
        kind: 'enum',
        required: false,
        values: ['0123456789abcdef'],
        bad: ['0123456789abcde', '0123456789abcdef0', '0123456789abcdeg', '0x23456789abcdef', 'master.key'],
      },
    ];
    // The body is optional: an empty object and null ask to prepare, so they are not in this matrix.
    const shapes = shapeVariants(valid).filter((v) => v.name !== 'empty object' && v.name !== 'JSON null');
    const route = { method: 'POST', path: '/admin/v1/enclave/master-key/rotate', headers: adminAuth() };
    const cases: BadCase[] = [
      ...withBodies(route, parseLevelVariants(valid)),
      ...withBodies(route, shapes),
      ...withBodies(route, fieldVariants(valid, fields)),
      // Well formed, but no rotation is prepared: refused without preparing one.
      ...withBodies(route, [
        {
          name: 'confirmKeyId with nothing prepared',
          body: JSON.stringify(valid),
          status: 409,
          code: 'NEXT_KEY_MISMATCH',
        },
      ]),
    ];
    await assertAllRefused(t, cases, 40);
    assert.equal(existsSync(path.join(svc.dataDir, 'enclave', 'master.key.next')), false, 'no next key was created');
    assert.equal((await svc.admin('GET', '/enclave/master-key')).body.state, 'idle');
  });

  test('POST /admin/v1/projects/{projectId}/pregenerated-wallets: bad bodies and ids create no wallet', async (t) => {
    const path = `/admin/v1/projects/${target.projectId}/pregenerated-wallets`;
    const controlBody = { type: 'SOLANA', userIdentifier: 'bad-input-pregen-control', userIdentifierType: 'EMAIL' };
    await control('POST', path, adminAuth(), controlBody);
    const valid = { type: 'EVM', userIdentifier: 'bad-input-pregen', userIdentifierType: 'CUSTOM_ID' };
    const fields: FieldSpec[] = [
      { name: 'type', kind: 'enum', required: true, values: WALLET_TYPES, bad: ['BITCOIN', 'ETH'] },
      { name: 'userIdentifier', kind: 'string', required: true, maxLength: 256, notBlank: true },
      { name: 'userIdentifierType', kind: 'enum', required: true, values: ID_TYPES, bad: ['USERNAME'] },
      { name: 'scheme', kind: 'enum', required: false, values: ['DKLS', 'ED25519'], bad: ['RSA'] },
    ];
    const cosmos = { type: 'COSMOS', userIdentifier: 'bad-input-pregen-cosmos', userIdentifierType: 'EMAIL' };
    const cosmosField: FieldSpec[] = [
      { name: 'cosmosPrefix', kind: 'string', required: false, maxLength: 20, notBlank: true },
    ];
    const semantic: BodyVariant[] = [
      { name: 'scheme ED25519 on an EVM wallet', body: JSON.stringify({ ...valid, scheme: 'ED25519' }) },
      { name: 'scheme DKLS on a SOLANA wallet', body: JSON.stringify({ ...valid, type: 'SOLANA', scheme: 'DKLS' }) },
      { name: 'cosmosPrefix on an EVM wallet', body: JSON.stringify({ ...valid, cosmosPrefix: 'cosmos' }) },
      { name: 'cosmosPrefix with punctuation', body: JSON.stringify({ ...cosmos, cosmosPrefix: 'Bad!' }) },
      { name: 'userIdentifier with a lone surrogate', body: JSON.stringify({ ...valid, userIdentifier: 'a\ud800' }) },
    ].map((v) => ({ ...v, name: `semantic: ${v.name}`, status: 400 }));
    const route = { method: 'POST', path, headers: adminAuth() };
    const cases: BadCase[] = [
      ...withBodies(route, parseLevelVariants(valid)),
      ...withBodies(route, shapeVariants(valid)),
      ...withBodies(route, fieldVariants(valid, fields)),
      ...withBodies(route, fieldVariants(cosmos, cosmosField)),
      ...withBodies(route, semantic),
      ...withBodies(route, [
        { name: 'duplicate identity', body: JSON.stringify(controlBody), status: 409, code: 'WALLET_ALREADY_EXISTS' },
      ]),
      ...idCases('POST', '/admin/v1/projects/{id}/pregenerated-wallets', adminAuth(), valid),
      {
        name: 'deleted project',
        method: 'POST',
        path: `/admin/v1/projects/${deleted.projectId}/pregenerated-wallets`,
        headers: { ...adminAuth(), 'content-type': JSON_CT },
        body: JSON.stringify(valid),
        status: 404,
        code: 'PROJECT_NOT_FOUND',
      },
      {
        name: 'an API key id in place of a project id',
        method: 'POST',
        path: `/admin/v1/projects/${target.keyId}/pregenerated-wallets`,
        headers: { ...adminAuth(), 'content-type': JSON_CT },
        body: JSON.stringify(valid),
        status: 404,
        code: 'PROJECT_NOT_FOUND',
      },
    ];
    await assertAllRefused(t, cases, 100);
  });
});

describe('approvals: people, scopes, bindings, cases and reviews', () => {
  test('admin writes: bad bodies, ids, revisions and decisions are refused and change nothing', async (t) => {
    const admin = adminAuth();
    const users = `/admin/v1/projects/${target.projectId}/users`;
    const user = (await control('POST', users, admin, { name: 'bad-input approver' })).body as { id: string };
    const scope = (
      await control('POST', `/admin/v1/projects/${target.projectId}/authorization-scopes`, admin, { name: 'scope' })
    ).body as { id: string };
    const assignment = `/admin/v1/authorization-scopes/${scope.id}/assignments/${user.id}`;
    await control('PUT', assignment, admin, { roles: ['approver'], expectedRevision: 0 });
    const wallet = await svc.v1(target.secret, 'POST', '/wallets', {
      type: 'EVM',
      userIdentifier: 'bad-input-approvals',
      userIdentifierType: 'CUSTOM_ID',
    });
    assert.equal(wallet.status, 201);
    const binding = `/admin/v1/wallets/${wallet.body.id}/authorization-scope`;
    await control('PUT', binding, admin, { scopeId: scope.id });

    const named = { name: 'someone' };
    const nameField: FieldSpec[] = [{ name: 'name', kind: 'string', required: true, maxLength: 200, notBlank: true }];
    const assign = { roles: ['approver'], expectedRevision: 1 };
    const assignFields: FieldSpec[] = [
      {
        name: 'roles',
        kind: 'string-array',
        required: true,
        maxItems: 32,
        itemMaxLength: 64,
        bad: [['has space'], ['-leading-dash'], ['']],
      },
      { name: 'expectedRevision', kind: 'integer', required: true, min: 0, max: 1_000_000_000 },
      { name: 'force', kind: 'boolean', required: false },
    ];
    const decision = { userId: user.id, decision: 'approve' };
    const decisionFields: FieldSpec[] = [
      { name: 'userId', kind: 'string', required: true, maxLength: 128 },
      { name: 'decision', kind: 'enum', required: true, values: ['approve', 'reject'], bad: ['APPROVE', 'maybe', ''] },
    ];
    const at = (method: string, path: string) => ({ method, path, headers: admin });
    const cases: BadCase[] = [
      ...withBodies(at('POST', users), [...parseLevelVariants(named), ...shapeVariants(named)]),
      ...withBodies(at('POST', users), fieldVariants(named, nameField)),
      ...withBodies(at('POST', `/admin/v1/projects/${target.projectId}/authorization-scopes`), [
        ...shapeVariants(named),
        ...fieldVariants(named, nameField),
      ]),
      ...idCases('POST', '/admin/v1/projects/{id}/users', admin, named),
      ...withBodies(at('PUT', assignment), [...parseLevelVariants(assign), ...shapeVariants(assign)]),
      ...withBodies(at('PUT', assignment), fieldVariants(assign, assignFields)),
      ...withBodies(at('PUT', assignment), [
        {
          name: 'stale expectedRevision',
          body: JSON.stringify({ roles: [], expectedRevision: 0 }),
          status: 409,
          code: 'REVISION_CONFLICT',
        },
        {
          name: 'more than 32 roles',
          body: JSON.stringify({ roles: Array.from({ length: 33 }, (_, i) => `r${i}`), expectedRevision: 1 }),
          status: 400,
        },
      ]),
      ...idCases('PUT', `/admin/v1/authorization-scopes/{id}/assignments/${user.id}`, admin, assign),
      ...idCases('PUT', `/admin/v1/authorization-scopes/${scope.id}/assignments/{id}`, admin, assign),
      ...withBodies(at('PUT', binding), [
        ...shapeVariants({ scopeId: scope.id }).filter((v) => v.name !== 'server-owned field id'),
        { name: 'scopeId a number', body: '{"scopeId":1}', status: 400 },
        { name: 'scopeId empty', body: '{"scopeId":""}', status: 400 },
        { name: 'scopeId of no scope', body: '{"scopeId":"nope"}', status: 404, code: 'AUTHORIZATION_SCOPE_NOT_FOUND' },
      ]),
      ...idCases('PUT', '/admin/v1/wallets/{id}/authorization-scope', admin, { scopeId: null }),
      ...withBodies(at('POST', '/admin/v1/approval-cases/no-such-case/decisions'), [
        ...shapeVariants(decision),
        ...fieldVariants(decision, decisionFields),
        { name: 'a decision on no case', body: JSON.stringify(decision), status: 404, code: 'APPROVAL_CASE_NOT_FOUND' },
      ]),
      ...idCases('POST', '/admin/v1/approval-cases/{id}/decisions', admin, decision),
      ...['status=approved', 'status=', 'walletId=', 'cursor=nonsense', 'limit=0', 'other=1'].map(
        (q): BadCase => ({
          name: `project cases: ${q}`,
          method: 'GET',
          path: `/admin/v1/projects/${target.projectId}/approval-cases?${q}`,
          headers: admin,
          status: 400,
        }),
      ),
    ];
    await assertAllRefused(t, cases, 150);
  });

  test('/v1/permissions-v2: bad queries, ids and bodies are refused and change nothing', async (t) => {
    const v1 = v1Auth();
    await control('GET', '/v1/permissions-v2/approval-cases?limit=1', v1);
    const cases: BadCase[] = [
      ...['status=approved', 'status=PENDING', 'walletId=', 'cursor=nonsense', 'limit=101', 'other=1'].map(
        (q): BadCase => ({
          name: `cases: ${q}`,
          method: 'GET',
          path: `/v1/permissions-v2/approval-cases?${q}`,
          headers: v1,
          status: 400,
        }),
      ),
      ...idCases('GET', '/v1/permissions-v2/approval-cases/{id}', v1),
      ...idCases('POST', '/v1/permissions-v2/approval-cases/{id}/cancel', v1, {}),
      ...idCases('POST', '/v1/permissions-v2/reviews/{id}/approve', v1, {}),
      ...idCases('POST', '/v1/permissions-v2/reviews/{id}/reject', v1, {}),
      ...withBodies({ method: 'POST', path: '/v1/permissions-v2/reviews/no-such-review/approve', headers: v1 }, [
        ...parseLevelVariants({ note: 'x' }),
      ]),
      ...['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].flatMap((method): BadCase[] =>
        ['delegation-consents', 'user-parameters'].map((route) => ({
          name: `${method} ${route}`,
          method,
          path: `/v1/permissions-v2/users/someone/${route}`,
          headers: v1,
          status: 400,
          code: 'permissions_v2_extension_unavailable',
        })),
      ),
    ];
    await assertAllRefused(t, cases, 40);
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
    ['POST', `/admin/v1/projects/${target.projectId}`, admin],
    ['PUT', '/admin/v1/projects', admin],
    ['GET', `/admin/v1/projects/${target.projectId}`, admin],
    ['PATCH', `/admin/v1/projects/${target.projectId}`, admin],
    ['PUT', `/admin/v1/projects/${target.projectId}/api-keys`, admin],
    ['DELETE', `/admin/v1/projects/${target.projectId}/api-keys`, admin],
    ['GET', '/admin/v1/api-keys', admin],
    ['GET', `/admin/v1/api-keys/${target.keyId}`, admin],
    ['GET', `/admin/v1/api-keys/${target.keyId}/rotate`, admin],
    ['DELETE', `/admin/v1/api-keys/${target.keyId}`, admin],
    ['GET', `/admin/v1/projects/${target.projectId}/ip-allowlist`, admin],
    ['POST', `/admin/v1/projects/${target.projectId}/ip-allowlist`, admin],
    ['DELETE', `/admin/v1/projects/${target.projectId}/ip-allowlist`, admin],
    ['GET', `/v1/wallets/${walletId}/sign-message`, v1],
    ['PUT', `/v1/wallets/${walletId}/sign-raw`, v1],
    ['GET', `/v1/wallets/${walletId}/sign-transaction`, v1],
    ['DELETE', `/v1/wallets/${walletId}/sign-typed-data`, v1],
    ['GET', `/v1/wallets/${walletId}/sign-authorization`, v1],
    ['GET', `/v1/wallets/${walletId}/migrate-share`, v1],
    ['POST', `/v1/wallets/${walletId}/sign-nothing`, v1],
    ['POST', '/v1/enclave/public-key', v1],
    ['DELETE', '/v1/enclave/public-key', v1],
    ['GET', '/v1/enclave', v1],
    ['GET', `/admin/v1/wallets/${walletId}/claim`, admin],
    ['DELETE', `/admin/v1/wallets/${walletId}/claim`, admin],
    ['GET', `/admin/v1/wallets/${walletId}`, admin],
    ['GET', `/admin/v1/projects/${target.projectId}/pregenerated-wallets`, admin],
    ['PUT', `/admin/v1/projects/${target.projectId}/pregenerated-wallets`, admin],
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
