import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, describe, test } from 'node:test';
import { ed25519 } from '@noble/curves/ed25519.js';
import { p256 } from '@noble/curves/nist.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import runCryptoTask from './crypto.worker.ts';
import { createCryptoPool } from './crypto-pool.ts';
import { ECIES_CONTEXT, shareContext, unseal } from './envelope.ts';
import { checkEciesKey, type GeneratedKey, generateEciesKey, generateWalletKey } from './keygen.ts';
import type { Scheme } from './protocol.ts';

const masterKey = new Uint8Array(randomBytes(32));

/** Test-only: what the enclave never does outside a worker. Opens both shares and recombines the secret. */
function recombine(key: GeneratedKey, walletId: string, scheme: Scheme): Uint8Array {
  const byKind = Object.fromEntries(key.shares.map((s) => [s.kind, s]));
  const service = unseal(masterKey, shareContext(walletId, scheme, 'service'), byKind.service!);
  const user = unseal(masterKey, shareContext(walletId, scheme, 'user'), byKind.user!);
  assert.notDeepEqual(service, user);
  return service.map((b, i) => b ^ user[i]!);
}

describe('generateWalletKey', () => {
  test('DKLS: the shares recombine to a secp256k1 key whose public key (noble) is the one answered', () => {
    for (let i = 0; i < 20; i++) {
      const key = generateWalletKey(masterKey, `w-${i}`, 'DKLS');
      assert.match(key.publicKey, /^04[0-9a-f]{128}$/);
      const secret = recombine(key, `w-${i}`, 'DKLS');
      assert.ok(secp256k1.utils.isValidSecretKey(secret));
      assert.equal(Buffer.from(secp256k1.getPublicKey(secret, false)).toString('hex'), key.publicKey);
      const digest = new Uint8Array(randomBytes(32));
      const signature = secp256k1.sign(digest, secret, { prehash: false });
      assert.ok(secp256k1.verify(signature, digest, Buffer.from(key.publicKey, 'hex'), { prehash: false }));
    }
  });

  test('ED25519: the shares recombine to the seed whose public key (noble) is the one answered', () => {
    for (let i = 0; i < 20; i++) {
      const key = generateWalletKey(masterKey, `e-${i}`, 'ED25519');
      assert.match(key.publicKey, /^[0-9a-f]{64}$/);
      const seed = recombine(key, `e-${i}`, 'ED25519');
      assert.equal(Buffer.from(ed25519.getPublicKey(seed)).toString('hex'), key.publicKey);
    }
  });

  test('pregen: only the service share is sealed; the share string carries the user share that completes the key', () => {
    for (const scheme of ['DKLS', 'ED25519'] as const) {
      const key = generateWalletKey(masterKey, `pg-${scheme}`, scheme, 'pregen');
      assert.deepEqual(
        key.shares.map((share) => share.kind),
        ['service'],
      );
      assert.ok(key.userShare);
      assert.equal(key.userShare.includes('-'), false, 'one segment');
      const segment = JSON.parse(Buffer.from(key.userShare, 'base64').toString('utf8'));
      assert.deepEqual(Object.keys(segment), ['id', 'scheme', 'signer']);
      assert.equal(segment.id, `pg-${scheme}`);
      assert.equal(segment.scheme, scheme);
      const service = unseal(masterKey, shareContext(`pg-${scheme}`, scheme, 'service'), key.shares[0]!);
      const secret = service.map((b, i) => b ^ Buffer.from(segment.signer, 'hex')[i]!);
      const expected = scheme === 'DKLS' ? secp256k1.getPublicKey(secret, false) : ed25519.getPublicKey(secret);
      assert.equal(Buffer.from(expected).toString('hex'), key.publicKey);
    }
    assert.equal(generateWalletKey(masterKey, 'managed', 'DKLS', 'managed').userShare, undefined);
  });

  test('every key is new, and its shares are bound to its wallet id and scheme', () => {
    const a = generateWalletKey(masterKey, 'same', 'DKLS');
    const b = generateWalletKey(masterKey, 'same', 'DKLS');
    assert.notEqual(a.publicKey, b.publicKey);
    assert.throws(() => unseal(masterKey, shareContext('other', 'DKLS', 'service'), a.shares[0]!));
    assert.throws(() => unseal(masterKey, shareContext('same', 'ED25519', 'service'), a.shares[0]!));
  });
});

describe('ECIES key', () => {
  test('is a sealed P-256 key matching its public key, and only the right master key opens it', () => {
    const record = generateEciesKey(masterKey);
    assert.equal(record.publicKey.length, 65);
    const secretKey = unseal(masterKey, ECIES_CONTEXT, record.sealed);
    assert.deepEqual(p256.getPublicKey(secretKey, false), record.publicKey);
    assert.equal(checkEciesKey(masterKey, record), true);
    assert.equal(checkEciesKey(new Uint8Array(randomBytes(32)), record), false);
    assert.equal(
      checkEciesKey(masterKey, { ...record, publicKey: p256.getPublicKey(p256.utils.randomSecretKey(), false) }),
      false,
    );
  });
});

describe('crypto worker', () => {
  test('refuses to run without a master key in workerData (on the main thread there is none)', () => {
    assert.throws(() => runCryptoTask({ kind: 'eciesGenerate', sealWith: 'a'.repeat(16) }), /master key/);
  });

  const pool = createCryptoPool({ masterKey, threads: 2 });
  after(() => pool.destroy());

  test('runs in piscina threads under tsx and batches concurrent generate calls', async () => {
    const items = Array.from({ length: 40 }, (_, i) => ({
      walletId: `p-${i}`,
      scheme: (i % 2 ? 'DKLS' : 'ED25519') as Scheme,
      custody: 'managed' as const,
    }));
    const keys = await Promise.all(items.map((item) => pool.generate(item)));
    for (const [i, key] of keys.entries()) {
      const { walletId, scheme } = items[i]!;
      const secret = recombine(key, walletId, scheme);
      const expected = scheme === 'DKLS' ? secp256k1.getPublicKey(secret, false) : ed25519.getPublicKey(secret);
      assert.equal(Buffer.from(expected).toString('hex'), key.publicKey);
    }
    const ecies = await pool.generateEciesKey();
    assert.equal(await pool.checkEciesKey(ecies), true);
  });
});
