import assert from 'node:assert/strict';
import { createHash, createPublicKey, verify as verifySignature } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Keypair, PublicKey, SystemProgram, Transaction } from '@solana/web3.js';
import { recoverAddress, verifyMessage } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { snapshotChanges, snapshotDb } from './helpers/bad-input-db.ts';
import { EVM_TRANSACTION, MAIL_TYPED_DATA } from './helpers/bad-input-matrix.ts';
import {
  type EnclaveKey,
  type EphemeralEncoding,
  encryptForEnclave,
  findUserShareSegment,
  flipDataByte,
  type MigrationEnvelope,
  migrationPayload,
  parseUserShareSegments,
  randomSigner,
  shareEntry,
  sharePlaintext,
  truncateData,
  uncompressedPoint,
} from './helpers/migration-client.ts';
import { type Partner, startTestService, type TestService, type WalletBody } from './helpers/service.ts';

// Share migration end to end: a pre-generated wallet's user share, handed to the partner once by the operator
// route, is encrypted by a client written from the spec alone and brought into the enclave; the wallet then
// signs over REST under the address it always had.

type Pregen = { wallet: WalletBody; userShare: string };

let svc: TestService;
let partner: Partner;
let enclaveKey: EnclaveKey & { generatedAt: string };

const MISSING = '00000000-0000-4000-8000-000000000000';
let counter = 0;
const uid = (p = 'mig') => `${p}-${++counter}-${Math.random().toString(36).slice(2)}`;

before(async () => {
  svc = await startTestService();
  partner = await svc.newPartner();
  const k = await svc.v1(partner.secret, 'GET', '/enclave/public-key');
  assert.equal(k.status, 200, JSON.stringify(k.body));
  enclaveKey = k.body;
});
after(async () => {
  await svc?.stop();
});

async function pregenerate(type: 'EVM' | 'SOLANA', projectId = partner.projectId): Promise<Pregen> {
  const r = await svc.admin('POST', `/projects/${projectId}/pregenerated-wallets`, {
    type,
    userIdentifier: uid(),
    userIdentifierType: 'CUSTOM_ID',
  });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  return r.body as Pregen;
}

const migrate = (walletId: string, encryptedPayload: unknown, secret = partner.secret, headers = {}) =>
  svc.v1(secret, 'POST', `/wallets/${walletId}/migrate-share`, { encryptedPayload }, headers);
const signMessage = (walletId: string, message: string, secret = partner.secret) =>
  svc.v1(secret, 'POST', `/wallets/${walletId}/sign-message`, { message });
const payloadFor = (p: Pregen, opts: { ephemeral?: EphemeralEncoding } = {}) =>
  migrationPayload(p.userShare, p.wallet, enclaveKey, opts);
/** An `encryptedPayload` holding exactly this plaintext, properly encrypted to the enclave. */
const encrypted = (plaintext: string | Uint8Array, envelope: Partial<MigrationEnvelope> = {}) =>
  JSON.stringify({ ...encryptForEnclave(plaintext, enclaveKey), ...envelope });

function assertError(r: { status: number; body: any }, status: number, code: string, label = '') {
  assert.equal(r.status, status, `${label} ${JSON.stringify(r.body)}`);
  assert.equal(r.body?.code, code, `${label} ${JSON.stringify(r.body)}`);
  assert.equal(typeof r.body?.message, 'string', label);
}

/** The wallet still cannot sign over REST: its user share is not in the service. */
async function assertNotMigrated(walletId: string, label = '') {
  const r = await signMessage(walletId, 'still locked?');
  assertError(r, 403, 'WALLET_SHARE_NOT_MIGRATED', label);
  assert.equal(r.body.signature, undefined);
}

/** Signs `message` with sign-message and checks it with the chain's own verifier under the wallet's address. */
async function assertSignsUnder(wallet: WalletBody, message = `migrated ${uid()}`) {
  const r = await signMessage(wallet.id, message);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const sig: string = r.body.signature;
  const flipped = `${sig.slice(0, 20)}${sig[20] === '0' ? '1' : '0'}${sig.slice(21)}`;
  if (wallet.type === 'EVM') {
    assert.match(sig, /^[0-9a-f]{130}$/);
    const address = wallet.address as `0x${string}`;
    assert.equal(await verifyMessage({ address, message, signature: `0x${sig}` }), true);
    const bad = await verifyMessage({ address, message, signature: `0x${flipped}` }).catch(() => false);
    assert.equal(bad, false, 'a flipped signature byte must not verify');
    const other = await verifyMessage({ address, message: `${message}!`, signature: `0x${sig}` });
    assert.equal(other, false, 'the signature must not verify another message');
  } else {
    assert.match(sig, /^[0-9a-f]{128}$/);
    const key = ed25519Key(new PublicKey(wallet.address).toBytes());
    assert.equal(verifySignature(null, Buffer.from(message, 'utf8'), key, Buffer.from(sig, 'hex')), true);
    assert.equal(verifySignature(null, Buffer.from(message, 'utf8'), key, Buffer.from(flipped, 'hex')), false);
    assert.equal(verifySignature(null, Buffer.from(`${message}!`, 'utf8'), key, Buffer.from(sig, 'hex')), false);
  }
}

/** Files under `dir` whose bytes contain any of `needles`. */
function filesContaining(dir: string, needles: readonly Buffer[]): string[] {
  const hits: string[] = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    const file = path.join(entry.parentPath, entry.name);
    const bytes = fs.readFileSync(file);
    if (needles.some((n) => bytes.includes(n))) hits.push(file);
  }
  return hits;
}

function ed25519Key(raw: Uint8Array) {
  return createPublicKey({
    key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(raw).toString('base64url') },
    format: 'jwk',
  });
}

// Bodies every signing route would accept for a wallet allowed to sign (spec: "Signing routes").
/** An unsigned legacy Solana transfer paid by `address`, base64 (sign-transaction's SOLANA body). */
function solanaTransfer(address: string): string {
  const from = new PublicKey(address);
  const tx = new Transaction({ feePayer: from, recentBlockhash: Keypair.generate().publicKey.toBase58() }).add(
    SystemProgram.transfer({ fromPubkey: from, toPubkey: Keypair.generate().publicKey, lamports: 1 }),
  );
  return tx.serialize({ requireAllSignatures: false, verifySignatures: false }).toString('base64');
}

/** Every signing route with a body it would otherwise accept for this wallet. */
function signingCalls(wallet: WalletBody): Array<[string, unknown]> {
  if (wallet.type === 'EVM') {
    return [
      ['sign-message', { message: 'hello' }],
      ['sign-raw', { data: `0x${'ab'.repeat(32)}`, walletType: 'EVM' }],
      ['sign-transaction', { transaction: EVM_TRANSACTION }],
      ['sign-typed-data', { typedData: MAIL_TYPED_DATA }],
      ['sign-authorization', { authorization: { address: EVM_TRANSACTION.to, chainId: 1, nonce: 0 } }],
    ];
  }
  return [
    ['sign-message', { message: 'hello' }],
    ['sign-raw', { data: 'ab'.repeat(40), walletType: 'SOLANA' }],
    ['sign-transaction', { transaction: solanaTransfer(wallet.address), network: 'SOLANA_DEVNET' }],
  ];
}

describe('GET /v1/enclave/public-key', () => {
  test('a P-256 SPKI PEM whose fingerprint is the SHA-256 of its DER; stable; needs the API key', async () => {
    const r = await svc.v1(partner.secret, 'GET', '/enclave/public-key');
    assert.equal(r.status, 200);
    assert.deepEqual(Object.keys(r.body).sort(), ['generatedAt', 'keyFingerprint', 'publicKey']);
    assert.match(r.body.publicKey, /^-----BEGIN PUBLIC KEY-----\n[\s\S]+\n-----END PUBLIC KEY-----\n?$/);
    const key = createPublicKey(r.body.publicKey);
    assert.equal(key.asymmetricKeyType, 'ec');
    assert.equal(key.asymmetricKeyDetails?.namedCurve, 'prime256v1');
    assert.equal(uncompressedPoint(key).length, 65);
    const der = key.export({ type: 'spki', format: 'der' });
    assert.equal(r.body.keyFingerprint, createHash('sha256').update(der).digest('hex'));
    assert.ok(!Number.isNaN(Date.parse(r.body.generatedAt)));
    assert.ok(Date.parse(r.body.generatedAt) <= Date.now());
    // Every project sees the same enclave key.
    const other = await svc.newPartner();
    const again = await svc.v1(other.secret, 'GET', '/enclave/public-key');
    assert.deepEqual(again.body, r.body);
    assertError(await svc.v1(undefined, 'GET', '/enclave/public-key'), 401, 'API_KEY_REQUIRED');
  });
});

describe('POST /admin/v1/projects/{projectId}/pregenerated-wallets', () => {
  test('answers the wallet and its user share once, uncached; the share alone is not the wallet key', async () => {
    for (const type of ['EVM', 'SOLANA'] as const) {
      const r = await svc.admin('POST', `/projects/${partner.projectId}/pregenerated-wallets`, {
        type,
        userIdentifier: uid('pregen'),
        userIdentifierType: 'EMAIL',
      });
      assert.equal(r.status, 201, JSON.stringify(r.body));
      assert.equal(r.headers.get('cache-control'), 'no-store');
      assert.deepEqual(Object.keys(r.body).sort(), ['userShare', 'wallet']);
      const { wallet, userShare } = r.body as Pregen;
      assert.equal(wallet.type, type);
      assert.equal(wallet.scheme, type === 'EVM' ? 'DKLS' : 'ED25519');
      assert.equal(wallet.status, 'ready');
      assert.equal(wallet.userIdentifierType, 'EMAIL');
      // The wallet is the partner's, as GET /v1/wallets/{id} shows it.
      const got = await svc.v1(partner.secret, 'GET', `/wallets/${wallet.id}`);
      assert.equal(got.status, 200);
      assert.deepEqual(got.body, wallet);
      // The share string: base64 JSON segments joined by '-', the wallet's segment carrying signer and scheme.
      const segments = parseUserShareSegments(userShare);
      assert.ok(segments.length >= 1);
      const mine = findUserShareSegment(userShare, wallet.id);
      assert.match(mine.signer as string, /^[0-9a-f]{64}$/);
      assert.equal(mine.scheme, wallet.scheme);
      // A 2-of-2 split: the user share by itself does not derive the wallet's address.
      if (type === 'EVM') {
        assert.notEqual(privateKeyToAccount(`0x${mine.signer}`).address, wallet.address);
      } else {
        const alone = Keypair.fromSeed(Buffer.from(mine.signer as string, 'hex')).publicKey.toBase58();
        assert.notEqual(alone, wallet.address);
      }
      // No copy of the user share is kept anywhere under the data directory (service or enclave files).
      const signer = Buffer.from(mine.signer as string, 'hex');
      assert.deepEqual(filesContaining(svc.dataDir, [signer, Buffer.from(mine.signer as string)]), []);
    }
  });

  test('unknown project 404 PROJECT_NOT_FOUND; a duplicate identity 409 WALLET_ALREADY_EXISTS naming the wallet', async () => {
    const body = { type: 'EVM', userIdentifier: uid('dup'), userIdentifierType: 'CUSTOM_ID' };
    assertError(await svc.admin('POST', `/projects/${MISSING}/pregenerated-wallets`, body), 404, 'PROJECT_NOT_FOUND');
    const first = await svc.admin('POST', `/projects/${partner.projectId}/pregenerated-wallets`, body);
    assert.equal(first.status, 201);
    const again = await svc.admin('POST', `/projects/${partner.projectId}/pregenerated-wallets`, body);
    assertError(again, 409, 'WALLET_ALREADY_EXISTS');
    assert.equal(again.body.walletId, first.body.wallet.id);
    assert.equal(again.body.userShare, undefined);
    // The same identity through the /v1 create route is the same wallet identity.
    const viaApi = await svc.v1(partner.secret, 'POST', '/wallets', body);
    assertError(viaApi, 409, 'WALLET_ALREADY_EXISTS');
    assert.equal(viaApi.body.walletId, first.body.wallet.id);
    // Another project does not see it.
    const stranger = await svc.newPartner();
    assertError(await svc.v1(stranger.secret, 'GET', `/wallets/${first.body.wallet.id}`), 404, 'WALLET_NOT_FOUND');
  });
});

describe('POST /v1/wallets/{walletId}/migrate-share', () => {
  for (const type of ['EVM', 'SOLANA'] as const) {
    test(`${type}: refused before migration, migrated under the same address, signs, refuses a second migration`, async () => {
      const p = await pregenerate(type);
      const { wallet } = p;
      // Before migration every signing route refuses the wallet, with bodies it would otherwise take.
      for (const [route, body] of signingCalls(wallet)) {
        const r = await svc.v1(partner.secret, 'POST', `/wallets/${wallet.id}/${route}`, body);
        assertError(r, 403, 'WALLET_SHARE_NOT_MIGRATED', route);
        assert.equal(r.body.signature, undefined);
        assert.equal(r.body.signedTransaction, undefined);
      }
      // The client checks the key it encrypts to: the fingerprint is recomputed from the PEM.
      const k = await svc.v1(partner.secret, 'GET', '/enclave/public-key');
      const der = createPublicKey(k.body.publicKey).export({ type: 'spki', format: 'der' });
      assert.equal(createHash('sha256').update(der).digest('hex'), k.body.keyFingerprint);

      const r = await migrate(wallet.id, migrationPayload(p.userShare, wallet, k.body));
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.id, wallet.id);
      assert.equal(r.body.address, wallet.address);
      assert.equal(r.body.publicKey, wallet.publicKey);
      assert.equal(r.body.type, wallet.type);
      assert.equal(r.body.scheme, wallet.scheme);
      assert.equal(r.body.status, 'ready');
      const got = await svc.v1(partner.secret, 'GET', `/wallets/${wallet.id}`);
      assert.equal(got.body.address, wallet.address);
      assert.equal(got.body.publicKey, wallet.publicKey);

      await assertSignsUnder(wallet);
      if (type === 'EVM') {
        // sign-raw signs the digest as given: the recovered signer is the wallet.
        const digest = `0x${createHash('sha256').update(uid()).digest('hex')}` as const;
        const raw = await svc.v1(partner.secret, 'POST', `/wallets/${wallet.id}/sign-raw`, { data: digest });
        assert.equal(raw.status, 200, JSON.stringify(raw.body));
        assert.equal(await recoverAddress({ hash: digest, signature: `0x${raw.body.signature}` }), wallet.address);
      }

      // A second migration, even of the right share, is a conflict; the wallet keeps signing.
      assertError(await migrate(wallet.id, payloadFor(p)), 409, 'SHARE_ALREADY_MIGRATED');
      await assertSignsUnder(wallet);
    });
  }

  test('the ephemeral key as hex, compressed point or SPKI PEM is accepted too', async () => {
    for (const ephemeral of ['hex', 'compressed-base64', 'spki-pem'] as const) {
      const p = await pregenerate('EVM');
      const r = await migrate(p.wallet.id, payloadFor(p, { ephemeral }));
      assert.equal(r.status, 200, `${ephemeral}: ${JSON.stringify(r.body)}`);
      await assertSignsUnder(p.wallet);
    }
  });

  test('concurrent migrations of one wallet: exactly one 200, the others 409 SHARE_ALREADY_MIGRATED', async () => {
    for (const type of ['EVM', 'SOLANA'] as const) {
      const p = await pregenerate(type);
      const answers = await Promise.all(Array.from({ length: 4 }, () => migrate(p.wallet.id, payloadFor(p))));
      const ok = answers.filter((a) => a.status === 200);
      const conflicts = answers.filter((a) => a.status === 409 && a.body.code === 'SHARE_ALREADY_MIGRATED');
      assert.equal(ok.length, 1, JSON.stringify(answers.map((a) => [a.status, a.body.code])));
      assert.equal(conflicts.length, 3, JSON.stringify(answers.map((a) => [a.status, a.body.code])));
      await assertSignsUnder(p.wallet);
    }
  });

  test('every invalid envelope or plaintext is 400 INVALID_PAYLOAD and changes nothing', async () => {
    const p = await pregenerate('EVM');
    const other = await pregenerate('EVM');
    const { wallet } = p;
    const signer = findUserShareSegment(p.userShare, wallet.id).signer as string;
    const otherSigner = findUserShareSegment(other.userShare, other.wallet.id).signer as string;
    const good = encryptForEnclave(sharePlaintext([shareEntry(wallet.id, wallet.scheme, signer)]), enclaveKey);
    const env = (patch: Partial<MigrationEnvelope>) => JSON.stringify({ ...good, ...patch });
    const without = (field: keyof MigrationEnvelope) => {
      const { [field]: _gone, ...rest } = good;
      return JSON.stringify(rest);
    };
    const withEntry = (entry: Record<string, unknown>) =>
      encrypted(JSON.stringify({ shares: [{ userId: wallet.id, walletId: wallet.id, ...entry }] }));
    const fingerprint = enclaveKey.keyFingerprint;
    const enclavePoint = uncompressedPoint(createPublicKey(enclaveKey.publicKey));
    const notOnCurve = Buffer.concat([Buffer.from([4]), Buffer.alloc(64, 0x01)]);
    const goodBytes = Buffer.from(good.encryptedData, 'base64').length;

    const variants: Array<[string, string]> = [
      // The envelope itself.
      ['not JSON', 'not json at all'],
      ['a JSON array', '[]'],
      ['a JSON string', '"x"'],
      ['JSON null', 'null'],
      ['the envelope JSON cut short', JSON.stringify(good).slice(0, -2)],
      ['no encryptedData', without('encryptedData')],
      ['no keyId', without('keyId')],
      ['no ephemeral', without('ephemeral')],
      ['no algorithm', without('algorithm')],
      ['encryptedData a number', JSON.stringify({ ...good, encryptedData: 12 })],
      ['algorithm AES128', env({ algorithm: 'ECIES-P256-AES128-SHA256' })],
      ['algorithm of another scheme', env({ algorithm: 'RSA-OAEP-256' })],
      ['algorithm empty', env({ algorithm: '' })],
      ['keyId of zeros', env({ keyId: '0'.repeat(64) })],
      [
        'keyId with one character changed',
        env({ keyId: `${fingerprint[0] === 'a' ? 'b' : 'a'}${fingerprint.slice(1)}` }),
      ],
      ['keyId empty', env({ keyId: '' })],
      ['ephemeral garbage', env({ ephemeral: 'garbage' })],
      ['ephemeral empty', env({ ephemeral: '' })],
      ['ephemeral a point not on the curve', env({ ephemeral: notOnCurve.toString('base64') })],
      ['ephemeral of 64 bytes', env({ ephemeral: Buffer.alloc(64, 7).toString('base64') })],
      ['ephemeral replaced by another valid point', env({ ephemeral: enclavePoint.toString('base64') })],
      // The ciphertext.
      ['IV byte flipped', JSON.stringify(flipDataByte(good, 0))],
      ['ciphertext byte flipped', JSON.stringify(flipDataByte(good, 12))],
      ['tag byte flipped', JSON.stringify(flipDataByte(good, -1))],
      ['truncated to the IV', JSON.stringify(truncateData(good, 12))],
      ['truncated below IV and tag', JSON.stringify(truncateData(good, 20))],
      ['last byte of the tag cut', JSON.stringify(truncateData(good, goodBytes - 1))],
      ['encryptedData empty', env({ encryptedData: '' })],
      ['encryptedData not base64', env({ encryptedData: '!!!not base64!!!' })],
      // Properly encrypted plaintexts that are not the spec's shape.
      ['plaintext not JSON', encrypted('this is not json')],
      ['plaintext without shares', encrypted('{}')],
      ['plaintext shares a string', encrypted('{"shares":"x"}')],
      ['plaintext shares an object', encrypted(JSON.stringify({ shares: shareEntry(wallet.id, 'DKLS', signer) }))],
      ['entry without signer', withEntry({ walletScheme: 'DKLS' })],
      ['entry without walletScheme', withEntry({ signer })],
      ['signer a number', withEntry({ walletScheme: 'DKLS', signer: 42 })],
      ['signer not hex', withEntry({ walletScheme: 'DKLS', signer: 'zz'.repeat(32) })],
      ['signer of 31 bytes', withEntry({ walletScheme: 'DKLS', signer: signer.slice(2) })],
      ['signer of 33 bytes', withEntry({ walletScheme: 'DKLS', signer: `${signer}00` })],
      ['walletScheme ED25519 on a DKLS wallet', withEntry({ walletScheme: 'ED25519', signer })],
      ['walletScheme unknown', withEntry({ walletScheme: 'RSA', signer })],
      // Well-formed shares that do not complete this wallet's key.
      ['a random signer', withEntry({ walletScheme: 'DKLS', signer: randomSigner() })],
      ["another wallet's signer", withEntry({ walletScheme: 'DKLS', signer: otherSigner })],
      [
        'the signer with one bit flipped',
        withEntry({
          walletScheme: 'DKLS',
          signer: `${signer.slice(0, -1)}${(parseInt(signer.slice(-1), 16) ^ 1).toString(16)}`,
        }),
      ],
    ];
    const before = snapshotDb(svc.dataDir);
    const failures: string[] = [];
    for (const [name, payload] of variants) {
      const r = await migrate(wallet.id, payload);
      if (r.status !== 400 || r.body?.code !== 'INVALID_PAYLOAD') {
        failures.push(`${name}: ${r.status} ${JSON.stringify(r.body)}`);
      }
      const s = await signMessage(wallet.id, 'still locked?');
      if (s.status !== 403 || s.body?.code !== 'WALLET_SHARE_NOT_MIGRATED') {
        failures.push(`${name}: afterwards sign-message answered ${s.status} ${JSON.stringify(s.body)}`);
      }
    }
    // An empty shares array holds no share at all: refused either as malformed or as for another wallet.
    const empty = await migrate(wallet.id, encrypted('{"shares":[]}'));
    if (empty.status !== 400 || !['INVALID_PAYLOAD', 'PAYLOAD_WALLET_MISMATCH'].includes(empty.body?.code)) {
      failures.push(`empty shares: ${empty.status} ${JSON.stringify(empty.body)}`);
    }
    assert.equal(
      failures.length,
      0,
      `${failures.length} of ${variants.length + 1} failed:\n  ${failures.join('\n  ')}`,
    );
    assert.deepEqual(snapshotChanges(before, snapshotDb(svc.dataDir)), []);
    // Nothing was stored by the refusals: the right share still migrates, and the wallet signs.
    const ok = await migrate(wallet.id, payloadFor(p));
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    await assertSignsUnder(wallet);
  });

  test("another wallet's payload is 400 PAYLOAD_WALLET_MISMATCH and migrates neither", async () => {
    const a = await pregenerate('EVM');
    const b = await pregenerate('EVM');
    const sol = await pregenerate('SOLANA');
    assertError(await migrate(a.wallet.id, payloadFor(b)), 400, 'PAYLOAD_WALLET_MISMATCH');
    assertError(await migrate(a.wallet.id, payloadFor(sol)), 400, 'PAYLOAD_WALLET_MISMATCH');
    assertError(await migrate(sol.wallet.id, payloadFor(a)), 400, 'PAYLOAD_WALLET_MISMATCH');
    await assertNotMigrated(a.wallet.id);
    await assertNotMigrated(b.wallet.id);
    await assertNotMigrated(sol.wallet.id);
    // Each payload still migrates its own wallet.
    for (const p of [a, b, sol]) {
      const r = await migrate(p.wallet.id, payloadFor(p));
      assert.equal(r.status, 200, JSON.stringify(r.body));
      await assertSignsUnder(p.wallet);
    }
  });

  test('an encryptedPayload over 64 KB is 413 PAYLOAD_TOO_LARGE; 64 KB exactly is read', async () => {
    const p = await pregenerate('EVM');
    const limit = 65_536;
    // A real envelope whose plaintext is padded so that the payload passes the limit.
    const signer = findUserShareSegment(p.userShare, p.wallet.id).signer as string;
    const padded = JSON.stringify({
      shares: [shareEntry(p.wallet.id, 'DKLS', signer)],
      padding: 'p'.repeat(50_000),
    });
    const big = encrypted(padded);
    assert.ok(Buffer.byteLength(big) > limit);
    const cases: Array<[string, string]> = [
      ['65,537 ASCII bytes', 'x'.repeat(limit + 1)],
      ['32,769 two-byte characters (65,538 bytes)', 'é'.repeat(limit / 2 + 1)],
      ['a real envelope of a padded plaintext', big],
      ['200 KB', 'x'.repeat(200 * 1024)],
    ];
    for (const [name, payload] of cases) {
      assertError(await migrate(p.wallet.id, payload), 413, 'PAYLOAD_TOO_LARGE', name);
    }
    // At the limit the payload is read (and refused for what it is, not for its size).
    assertError(await migrate(p.wallet.id, 'x'.repeat(limit)), 400, 'INVALID_PAYLOAD', 'exactly 64 KB');
    await assertNotMigrated(p.wallet.id);
    assert.equal((await migrate(p.wallet.id, payloadFor(p))).status, 200);
  });

  test('a missing or non-string encryptedPayload is 400 INVALID_REQUEST', async () => {
    const p = await pregenerate('SOLANA');
    const envelope = JSON.parse(payloadFor(p));
    const bodies: Array<[string, unknown]> = [
      ['no body fields', {}],
      ['a number', { encryptedPayload: 42 }],
      ['null', { encryptedPayload: null }],
      ['the envelope as an object', { encryptedPayload: envelope }],
      ['an array', { encryptedPayload: [JSON.stringify(envelope)] }],
      ['a boolean', { encryptedPayload: true }],
      ['an extra field', { encryptedPayload: JSON.stringify(envelope), walletId: p.wallet.id }],
    ];
    for (const [name, body] of bodies) {
      const r = await svc.v1(partner.secret, 'POST', `/wallets/${p.wallet.id}/migrate-share`, body);
      assertError(r, 400, 'INVALID_REQUEST', name);
    }
    const blank = await migrate(p.wallet.id, '');
    assert.equal(blank.status, 400, JSON.stringify(blank.body));
    await assertNotMigrated(p.wallet.id);
  });

  test("another project's wallet is a 404 identical to a missing one, and stays unmigrated", async () => {
    const p = await pregenerate('EVM');
    const stranger = await svc.newPartner();
    const headers = { 'x-request-id': 'same-request-id' };
    const theirs = await migrate(p.wallet.id, payloadFor(p), stranger.secret, headers);
    const missing = await migrate(MISSING, payloadFor(p), stranger.secret, headers);
    assertError(theirs, 404, 'WALLET_NOT_FOUND');
    assertError(missing, 404, 'WALLET_NOT_FOUND');
    assert.deepEqual(theirs.body, missing.body);
    // The stranger cannot sign with it either, and the owner's wallet was not migrated.
    assertError(await signMessage(p.wallet.id, 'x', stranger.secret), 404, 'WALLET_NOT_FOUND');
    await assertNotMigrated(p.wallet.id);
    assert.equal((await migrate(p.wallet.id, payloadFor(p))).status, 200);
    await assertSignsUnder(p.wallet);
  });

  test('an API-key-managed wallet is 409 SHARE_ALREADY_MIGRATED and keeps signing', async () => {
    for (const type of ['EVM', 'SOLANA'] as const) {
      const w = await svc.v1(partner.secret, 'POST', '/wallets', {
        type,
        userIdentifier: uid('managed'),
        userIdentifierType: 'CUSTOM_ID',
      });
      assert.equal(w.status, 201);
      const scheme = type === 'EVM' ? 'DKLS' : 'ED25519';
      const payload = encrypted(sharePlaintext([shareEntry(w.body.id, scheme, randomSigner())]));
      assertError(await migrate(w.body.id, payload), 409, 'SHARE_ALREADY_MIGRATED', type);
      await assertSignsUnder(w.body);
    }
  });

  test('a claimed pre-generated wallet is 403 WALLET_CLAIMED, migrated or not', async () => {
    const unmigrated = await pregenerate('EVM');
    const migrated = await pregenerate('SOLANA');
    assert.equal((await migrate(migrated.wallet.id, payloadFor(migrated))).status, 200);
    for (const p of [unmigrated, migrated]) {
      const claim = await svc.admin('POST', `/wallets/${p.wallet.id}/claim`);
      assert.equal(claim.status, 200, JSON.stringify(claim.body));
      assertError(await migrate(p.wallet.id, payloadFor(p)), 403, 'WALLET_CLAIMED');
      assertError(await signMessage(p.wallet.id, 'claimed'), 403, 'WALLET_CLAIMED');
    }
  });

  test('an enclave restart keeps the key and the migrated share', async () => {
    const migrated = await pregenerate('SOLANA');
    const pending = await pregenerate('EVM');
    assert.equal((await migrate(migrated.wallet.id, payloadFor(migrated))).status, 200);
    await svc.restartEnclave();
    await svc.waitReady();
    const k = await svc.v1(partner.secret, 'GET', '/enclave/public-key');
    assert.equal(k.status, 200);
    assert.deepEqual(k.body, enclaveKey);
    await assertSignsUnder(migrated.wallet);
    assertError(await migrate(migrated.wallet.id, payloadFor(migrated)), 409, 'SHARE_ALREADY_MIGRATED');
    // A wallet not migrated before the restart is still locked, and migrates with a payload made now.
    await assertNotMigrated(pending.wallet.id);
    assert.equal((await migrate(pending.wallet.id, payloadFor(pending))).status, 200);
    await assertSignsUnder(pending.wallet);
  });
});
