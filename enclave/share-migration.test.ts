import assert from 'node:assert/strict';
import { createCipheriv, createECDH, createHash, createPublicKey, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ed25519 } from '@noble/curves/ed25519.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { createEnclaveClient, type EnclaveClient, EnclaveClientError } from './client.ts';
import { MAX_MIGRATION_PAYLOAD_BYTES, type Scheme } from './protocol.ts';
import { type RunningEnclave, startEnclave } from './server.ts';

/**
 * The partner's side of share migration, written from the spec with node:crypto only: ephemeral P-256 key pair,
 * ECDH with the enclave's public key, SHA-256 of the shared secret as the AES-256-GCM key, random 12-byte IV
 * prepended to ciphertext ‖ tag, base64.
 */
type EphemeralFormat = 'hex' | 'hex-compressed' | 'base64' | 'base64-compressed' | 'pem' | 'der-base64';

function encryptForEnclave(
  enclave: { publicKeyPem: string; keyFingerprint: string },
  plaintext: string,
  options: { ephemeral?: EphemeralFormat; algorithm?: string; keyId?: string } = {},
): { envelope: Record<string, string>; payload: string } {
  const jwk = createPublicKey(enclave.publicKeyPem).export({ format: 'jwk' });
  const enclavePoint = Buffer.concat([
    Buffer.of(4),
    Buffer.from(jwk.x!, 'base64url'),
    Buffer.from(jwk.y!, 'base64url'),
  ]);
  const ecdh = createECDH('prime256v1');
  ecdh.generateKeys();
  const aesKey = createHash('sha256').update(ecdh.computeSecret(enclavePoint)).digest();
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', aesKey, iv);
  const sealed = Buffer.concat([iv, cipher.update(plaintext, 'utf8'), cipher.final(), cipher.getAuthTag()]);
  const point = ecdh.getPublicKey();
  const spki = createPublicKey({
    key: {
      kty: 'EC',
      crv: 'P-256',
      x: point.subarray(1, 33).toString('base64url'),
      y: point.subarray(33).toString('base64url'),
    },
    format: 'jwk',
  });
  const ephemeral = {
    hex: () => point.toString('hex'),
    'hex-compressed': () => ecdh.getPublicKey('hex', 'compressed'),
    base64: () => point.toString('base64'),
    'base64-compressed': () => ecdh.getPublicKey('base64', 'compressed'),
    pem: () => spki.export({ type: 'spki', format: 'pem' }).toString(),
    'der-base64': () => spki.export({ type: 'spki', format: 'der' }).toString('base64'),
  }[options.ephemeral ?? 'base64']();
  const envelope = {
    encryptedData: sealed.toString('base64'),
    keyId: options.keyId ?? enclave.keyFingerprint,
    ephemeral,
    algorithm: options.algorithm ?? 'ECIES-P256-AES256-SHA256',
  };
  return { envelope, payload: JSON.stringify(envelope) };
}

/** The spec's share string: base64 JSON segments joined by '-'; the segment whose id is the wallet's has `signer`. */
function signerOf(userShare: string, walletId: string): string {
  const segments = userShare.split('-').map((segment) => {
    assert.equal(Buffer.from(segment, 'base64').toString('base64'), segment, 'standard padded base64');
    return JSON.parse(Buffer.from(segment, 'base64').toString('utf8')) as Record<string, unknown>;
  });
  const segment = segments.find((s) => s.id === walletId);
  assert.ok(segment, 'a segment for the wallet');
  assert.match(String(segment.signer), /^[0-9a-f]{64}$/);
  return String(segment.signer);
}

function plaintextFor(walletId: string, scheme: Scheme, signer: string, others: object[] = []): string {
  return JSON.stringify({
    shares: [...others, { userId: walletId, walletId, walletScheme: scheme, signer }],
  });
}

function rejectsWith(code: string) {
  return (error: unknown): boolean => {
    assert.ok(error instanceof EnclaveClientError, String(error));
    assert.equal(error.code, code, error.message);
    return true;
  };
}

const hex = (text: string): Uint8Array => Uint8Array.from(Buffer.from(text, 'hex'));

describe('pregen wallets and share migration (real enclave over its socket)', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'enclave-migrate-'));
  const masterKey = new Uint8Array(randomBytes(32));
  const logs: string[] = [];
  const signers: string[] = [];
  let enclave: RunningEnclave;
  let client: EnclaveClient;
  let eciesKey: { publicKeyPem: string; keyFingerprint: string };

  async function start(): Promise<void> {
    enclave = await startEnclave({ dataDir, masterKey, threads: 2, log: (line) => logs.push(line) });
    client = createEnclaveClient({ socketPath: enclave.socketPath });
    await client.connect();
  }

  /** A new pregen wallet: its public key and the signer hex from its user share string. */
  async function pregen(walletId: string, scheme: Scheme): Promise<{ publicKey: string; signer: string }> {
    const result = await client.generateKey({ walletId, scheme, custody: 'pregen' });
    assert.equal(result.created, true);
    assert.ok(result.userShare);
    const signer = signerOf(result.userShare, walletId);
    signers.push(signer);
    return { publicKey: result.publicKey, signer };
  }

  /** Signs with the wallet and checks the signature under `publicKey`. */
  async function signsUnder(walletId: string, scheme: Scheme, publicKey: string): Promise<void> {
    const message = new Uint8Array(randomBytes(32));
    const { signature } = await client.sign({ walletId, scheme, message: Buffer.from(message).toString('base64') });
    const ok =
      scheme === 'DKLS'
        ? secp256k1.verify(hex(signature), message, hex(publicKey), { prehash: false })
        : ed25519.verify(hex(signature), message, hex(publicKey));
    assert.ok(ok, `${walletId} signs under its public key`);
  }

  const shareMissing = (walletId: string, scheme: Scheme) =>
    assert.rejects(
      client.sign({ walletId, scheme, message: Buffer.alloc(32, 1).toString('base64') }),
      rejectsWith('SHARE_MISSING'),
    );

  before(async () => {
    await start();
    eciesKey = await client.getEciesPublicKey();
  });
  after(async () => {
    await client?.close();
    await enclave?.close();
    rmSync(dataDir, { recursive: true, force: true });
    for (const signer of signers) {
      assert.equal(
        logs.some((line) => line.includes(signer)),
        false,
        'no user share in the log',
      );
    }
  });

  test('generateKey pregen: the user share leaves once, as the spec share string; a managed key has none', async () => {
    const { publicKey, signer } = await pregen('pg-shape', 'DKLS');
    // The share string's signer completes a key whose public key is not the service share's alone: check it is
    // well formed and differs per wallet; that it completes the key is proven by migration below.
    assert.match(signer, /^[0-9a-f]{64}$/);
    assert.deepEqual(await client.generateKey({ walletId: 'pg-shape', scheme: 'DKLS', custody: 'pregen' }), {
      publicKey,
      created: false,
    });
    assert.deepEqual(await client.generateKey({ walletId: 'pg-shape', scheme: 'DKLS' }), { publicKey, created: false });
    const managed = await client.generateKey({ walletId: 'managed-1', scheme: 'ED25519', custody: 'managed' });
    assert.deepEqual(Object.keys(managed).sort(), ['created', 'publicKey']);
    await assert.rejects(
      client.generateKey({ walletId: 'x', scheme: 'DKLS', custody: 'shared' as 'pregen' }),
      rejectsWith('BAD_REQUEST'),
    );
  });

  test('concurrent pregen requests for one id: one key, the user share only to the creator', async () => {
    const results = await Promise.all(
      Array.from({ length: 5 }, () =>
        client.generateKey({ walletId: 'pg-race', scheme: 'ED25519', custody: 'pregen' }),
      ),
    );
    assert.equal(results.filter((r) => r.created).length, 1);
    assert.equal(results.filter((r) => r.userShare !== undefined).length, 1);
    assert.equal(new Set(results.map((r) => r.publicKey)).size, 1);
    signers.push(signerOf(results.find((r) => r.userShare)!.userShare!, 'pg-race'));
  });

  test('a pregen wallet does not sign until migrated; migration keeps its public key and it then signs', async () => {
    for (const scheme of ['DKLS', 'ED25519'] as const) {
      const walletId = `pg-${scheme}`;
      const { publicKey, signer } = await pregen(walletId, scheme);
      await shareMissing(walletId, scheme);
      const { payload } = encryptForEnclave(eciesKey, plaintextFor(walletId, scheme, signer));
      assert.deepEqual(await client.migrateShare({ walletId, scheme, encryptedPayload: payload }), { migrated: true });
      assert.equal((await client.generateKey({ walletId, scheme })).publicKey, publicKey, 'public key unchanged');
      await signsUnder(walletId, scheme, publicKey);
      await assert.rejects(
        client.migrateShare({ walletId, scheme, encryptedPayload: payload }),
        rejectsWith('ALREADY_MIGRATED'),
      );
    }
    const { payload } = encryptForEnclave(eciesKey, plaintextFor('managed-1', 'ED25519', 'ab'.repeat(32)));
    await assert.rejects(
      client.migrateShare({ walletId: 'managed-1', scheme: 'ED25519', encryptedPayload: payload }),
      rejectsWith('ALREADY_MIGRATED'),
    );
  });

  test('every ephemeral key format of the spec is accepted; 0x signers and other wallets’ entries too', async () => {
    const formats: EphemeralFormat[] = ['hex', 'hex-compressed', 'base64', 'base64-compressed', 'pem', 'der-base64'];
    for (const [i, format] of formats.entries()) {
      const walletId = `pg-format-${i}`;
      const scheme: Scheme = i % 2 ? 'ED25519' : 'DKLS';
      const { publicKey, signer } = await pregen(walletId, scheme);
      const other = { userId: 'someone', walletId: 'someone', walletScheme: scheme, signer: '00'.repeat(32) };
      const { payload } = encryptForEnclave(eciesKey, plaintextFor(walletId, scheme, `0x${signer}`, [other]), {
        ephemeral: format,
      });
      assert.deepEqual(await client.migrateShare({ walletId, scheme, encryptedPayload: payload }), { migrated: true });
      await signsUnder(walletId, scheme, publicKey);
    }
  });

  test('unusable payloads are refused with their code and change nothing', async () => {
    const walletId = 'pg-refused';
    const scheme: Scheme = 'DKLS';
    const { publicKey, signer } = await pregen(walletId, scheme);
    const good = plaintextFor(walletId, scheme, signer);
    const { envelope } = encryptForEnclave(eciesKey, good);
    const data = Buffer.from(envelope.encryptedData!, 'base64');
    const tampered = Buffer.from(data);
    tampered[20]! ^= 1;
    const invalid: [string, string][] = [
      ['wrong algorithm', encryptForEnclave(eciesKey, good, { algorithm: 'ECIES-P256-AES128-SHA256' }).payload],
      ['wrong keyId', encryptForEnclave(eciesKey, good, { keyId: 'ab'.repeat(32) }).payload],
      ['tampered ciphertext', JSON.stringify({ ...envelope, encryptedData: tampered.toString('base64') })],
      [
        'truncated',
        JSON.stringify({ ...envelope, encryptedData: data.subarray(0, data.length - 1).toString('base64') }),
      ],
      ['too short', JSON.stringify({ ...envelope, encryptedData: data.subarray(0, 28).toString('base64') })],
      ['not base64', JSON.stringify({ ...envelope, encryptedData: `${envelope.encryptedData}*` })],
      ['not JSON', 'definitely not json'],
      ['a JSON array', '[]'],
      ['no ephemeral', JSON.stringify({ ...envelope, ephemeral: undefined })],
      ['ephemeral off the curve', JSON.stringify({ ...envelope, ephemeral: `04${'11'.repeat(64)}` })],
      ['ephemeral of another curve', JSON.stringify({ ...envelope, ephemeral: Buffer.alloc(65, 4).toString('hex') })],
      ['ephemeral garbage', JSON.stringify({ ...envelope, ephemeral: 'hello' })],
      ['plaintext not JSON', encryptForEnclave(eciesKey, `{"shares": [${signer}`).payload],
      ['no shares array', encryptForEnclave(eciesKey, JSON.stringify({ share: [] })).payload],
      ['wrong signer', encryptForEnclave(eciesKey, plaintextFor(walletId, scheme, 'cd'.repeat(32))).payload],
      ['short signer', encryptForEnclave(eciesKey, plaintextFor(walletId, scheme, signer.slice(2))).payload],
      ['zero signer', encryptForEnclave(eciesKey, plaintextFor(walletId, scheme, '00'.repeat(32))).payload],
      ['wrong scheme', encryptForEnclave(eciesKey, plaintextFor(walletId, 'ED25519', signer)).payload],
    ];
    for (const [what, encryptedPayload] of invalid) {
      await assert.rejects(
        client.migrateShare({ walletId, scheme, encryptedPayload }),
        (error: unknown) => {
          rejectsWith('INVALID_PAYLOAD')(error);
          assert.equal((error as Error).message.includes(signer), false, 'never echoes the share');
          return true;
        },
        what,
      );
    }
    await assert.rejects(
      client.migrateShare({
        walletId,
        scheme,
        encryptedPayload: encryptForEnclave(eciesKey, plaintextFor('pg-someone-else', scheme, signer)).payload,
      }),
      rejectsWith('WRONG_WALLET'),
    );
    const oversize = JSON.stringify({ ...envelope, padding: 'x'.repeat(MAX_MIGRATION_PAYLOAD_BYTES) });
    await assert.rejects(
      client.migrateShare({ walletId, scheme, encryptedPayload: oversize }),
      rejectsWith('PAYLOAD_TOO_LARGE'),
    );
    const goodPayload = encryptForEnclave(eciesKey, good).payload;
    await assert.rejects(
      client.migrateShare({ walletId: 'nobody', scheme, encryptedPayload: goodPayload }),
      rejectsWith('NO_KEY'),
    );
    await assert.rejects(
      client.migrateShare({ walletId, scheme: 'ED25519', encryptedPayload: goodPayload }),
      rejectsWith('BAD_REQUEST'),
    );
    await assert.rejects(client.migrateShare({ walletId, scheme, encryptedPayload: '' }), rejectsWith('BAD_REQUEST'));

    // Nothing was stored: the wallet still lacks its share, and the right payload still migrates it.
    await shareMissing(walletId, scheme);
    assert.deepEqual(await client.migrateShare({ walletId, scheme, encryptedPayload: goodPayload }), {
      migrated: true,
    });
    await signsUnder(walletId, scheme, publicKey);
  });

  test('two concurrent migrations of one wallet: exactly one migrates; after a failed first, the second runs', async () => {
    const { publicKey, signer } = await pregen('pg-concurrent', 'ED25519');
    const payload = () => encryptForEnclave(eciesKey, plaintextFor('pg-concurrent', 'ED25519', signer)).payload;
    const outcomes = await Promise.allSettled([
      client.migrateShare({ walletId: 'pg-concurrent', scheme: 'ED25519', encryptedPayload: payload() }),
      client.migrateShare({ walletId: 'pg-concurrent', scheme: 'ED25519', encryptedPayload: payload() }),
      client.migrateShare({ walletId: 'pg-concurrent', scheme: 'ED25519', encryptedPayload: payload() }),
    ]);
    assert.equal(outcomes.filter((o) => o.status === 'fulfilled').length, 1);
    for (const outcome of outcomes) {
      if (outcome.status === 'rejected') rejectsWith('ALREADY_MIGRATED')(outcome.reason);
    }
    await signsUnder('pg-concurrent', 'ED25519', publicKey);

    const second = await pregen('pg-concurrent-2', 'DKLS');
    const [bad, ok] = await Promise.allSettled([
      client.migrateShare({
        walletId: 'pg-concurrent-2',
        scheme: 'DKLS',
        encryptedPayload: encryptForEnclave(eciesKey, plaintextFor('pg-concurrent-2', 'DKLS', 'ef'.repeat(32))).payload,
      }),
      client.migrateShare({
        walletId: 'pg-concurrent-2',
        scheme: 'DKLS',
        encryptedPayload: encryptForEnclave(eciesKey, plaintextFor('pg-concurrent-2', 'DKLS', second.signer)).payload,
      }),
    ]);
    assert.equal(bad.status, 'rejected');
    rejectsWith('INVALID_PAYLOAD')((bad as PromiseRejectedResult).reason);
    assert.deepEqual(ok, { status: 'fulfilled', value: { migrated: true } });
  });

  test('a migrated share survives a restart; an unmigrated wallet still lacks its share', async () => {
    const publicKey = (await client.generateKey({ walletId: 'pg-DKLS', scheme: 'DKLS' })).publicKey;
    await client.close();
    await enclave.close();
    await start();
    await signsUnder('pg-DKLS', 'DKLS', publicKey);
    await shareMissing('pg-shape', 'DKLS');
  });
});
