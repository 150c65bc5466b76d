import assert from 'node:assert/strict';
import { createHash, generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { createCryptoPool } from './crypto-pool.ts';
import { createKeyRing, IDENTITY_CONTEXT, masterKeyId, rewrap, unseal } from './envelope.ts';
import {
  CHALLENGE_BYTES,
  HELLO_CONTEXT,
  helloMessage,
  identityFingerprint,
  NONCE_BYTES,
  verifyHello,
} from './identity.ts';
import { ensureIdentityKey } from './identity-key.ts';
import { checkIdentityKey, type GeneratedIdentityKey } from './identity-sign.ts';
import { createKeyStore } from './key-store.ts';
import { createRequestHandler } from './request-handler.ts';

const masterKey = new Uint8Array(randomBytes(32));
const pool = createCryptoPool({ masterKey, threads: 1 });
let key: GeneratedIdentityKey;

before(async () => {
  key = await pool.generateIdentityKey();
});
after(() => pool.destroy());

const b64 = (bytes: Uint8Array): string => Buffer.from(bytes).toString('base64');

/** What the enclave answers to `challenge`, signed by the workers with the real identity key. */
async function answer(challenge: Uint8Array) {
  const nonce = randomBytes(NONCE_BYTES);
  const signature = await pool.signIdentity({
    publicKey: key.publicKey,
    sealed: key.sealed,
    message: new Uint8Array(helloMessage(challenge, nonce, key.publicKey)),
  });
  return { publicKey: b64(key.publicKey), nonce: b64(nonce), signature: b64(signature) };
}

describe('identity handshake', () => {
  test('the signed message: context, NUL, then challenge, nonce and key at fixed lengths', () => {
    const challenge = Buffer.alloc(32, 1);
    const nonce = Buffer.alloc(32, 2);
    const publicKey = Buffer.alloc(32, 3);
    const message = helloMessage(challenge, nonce, publicKey);
    assert.deepEqual(message, Buffer.concat([Buffer.from(`${HELLO_CONTEXT}\0`), challenge, nonce, publicKey]));
    assert.equal(HELLO_CONTEXT, 'wcs-enclave-identity-v1 hello: enclave to api');
    assert.throws(() => helloMessage(Buffer.alloc(31), nonce, publicKey), RangeError);
    assert.throws(() => helloMessage(challenge, nonce, Buffer.alloc(33)), RangeError);
  });

  test("the fingerprint is the SHA-256 of the key's SPKI DER, as node:crypto exports it", () => {
    const { publicKey } = generateKeyPairSync('ed25519');
    const der = publicKey.export({ type: 'spki', format: 'der' });
    const raw = der.subarray(der.length - 32);
    assert.equal(identityFingerprint(raw), createHash('sha256').update(der).digest('hex'));
  });

  test("an answer signed in the workers verifies for its challenge, with the key's fingerprint", async () => {
    const challenge = randomBytes(CHALLENGE_BYTES);
    const verified = verifyHello(challenge, await answer(challenge));
    assert.ok(verified.ok, verified.ok ? '' : verified.problem);
    assert.equal(verified.identity.fingerprint, identityFingerprint(key.publicKey));
    assert.equal(verified.identity.publicKey, b64(key.publicKey));
  });

  test('a replayed answer (signed for another challenge) does not verify', async () => {
    const recorded = await answer(randomBytes(CHALLENGE_BYTES));
    const verified = verifyHello(randomBytes(CHALLENGE_BYTES), recorded);
    assert.deepEqual(verified, { ok: false, problem: 'the hello signature does not verify for this challenge' });
  });

  test('a flipped bit anywhere, or a key that did not sign, does not verify', async () => {
    const challenge = randomBytes(CHALLENGE_BYTES);
    const good = await answer(challenge);
    const flip = (text: string, index: number): string => {
      const bytes = Buffer.from(text, 'base64');
      bytes[index]! ^= 1;
      return bytes.toString('base64');
    };
    for (const forged of [
      { ...good, signature: flip(good.signature, 0) },
      { ...good, signature: flip(good.signature, 63) },
      { ...good, nonce: flip(good.nonce, 5) },
      { ...good, publicKey: flip(good.publicKey, 9) },
    ]) {
      assert.equal(verifyHello(challenge, forged).ok, false);
    }
    // An impostor claiming the real public key but signing with its own.
    const impostor = generateKeyPairSync('ed25519');
    const nonce = Buffer.from(good.nonce, 'base64');
    const stolenKey = {
      ...good,
      signature: b64(sign(null, helloMessage(challenge, nonce, key.publicKey), impostor.privateKey)),
    };
    assert.equal(verifyHello(challenge, stolenKey).ok, false);
  });

  test('a signature without the context (the bare challenge, nonce and key) does not verify', () => {
    const impostor = generateKeyPairSync('ed25519');
    const der = impostor.publicKey.export({ type: 'spki', format: 'der' });
    const raw = der.subarray(der.length - 32);
    const challenge = randomBytes(CHALLENGE_BYTES);
    const nonce = randomBytes(NONCE_BYTES);
    const bare = sign(null, Buffer.concat([challenge, nonce, raw]), impostor.privateKey);
    const withContext = sign(null, helloMessage(challenge, nonce, raw), impostor.privateKey);
    const result = (signature: Buffer) => ({ publicKey: b64(raw), nonce: b64(nonce), signature: b64(signature) });
    assert.equal(verifyHello(challenge, result(bare)).ok, false);
    assert.equal(verifyHello(challenge, result(withContext)).ok, true);
  });

  test('malformed answers name the problem', () => {
    const challenge = randomBytes(CHALLENGE_BYTES);
    const wellFormed = {
      publicKey: b64(randomBytes(32)),
      nonce: b64(randomBytes(32)),
      signature: b64(randomBytes(64)),
    };
    for (const bad of [
      null,
      'text',
      {},
      { ...wellFormed, publicKey: b64(randomBytes(31)) },
      { ...wellFormed, nonce: b64(randomBytes(33)) },
      { ...wellFormed, signature: `${b64(randomBytes(64)).slice(0, -2)}` },
      { ...wellFormed, signature: b64(randomBytes(64)).replace(/=+$/, '') },
      { ...wellFormed, publicKey: 42 },
    ]) {
      const verified = verifyHello(challenge, bad);
      assert.equal(verified.ok, false);
    }
    assert.deepEqual(verifyHello(challenge, wellFormed), {
      ok: false,
      problem: 'the hello signature does not verify for this challenge',
    });
  });
});

describe('identity key', () => {
  test('sealed under the master key for its own context; the check fails under another key or another public key', () => {
    const seed = unseal(masterKey, IDENTITY_CONTEXT, key.sealed);
    assert.equal(seed.length, 32);
    seed.fill(0);
    assert.equal(checkIdentityKey(masterKey, key), true);
    assert.equal(checkIdentityKey(new Uint8Array(randomBytes(32)), key), false);
    const otherKey = new Uint8Array(key.publicKey);
    otherKey[0]! ^= 1;
    assert.equal(checkIdentityKey(masterKey, { ...key, publicKey: otherKey }), false);
  });

  test('generated once, stored in keys.db, the same at the next start, and re-wrapped by a master-key rotation', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'enclave-identity-'));
    try {
      const store = createKeyStore({ path: join(dir, 'keys.db') });
      const first = await ensureIdentityKey({ store, crypto: pool });
      assert.equal(first.created, true);
      const again = await ensureIdentityKey({ store, crypto: pool });
      assert.equal(again.created, false);
      assert.equal(again.fingerprint, first.fingerprint);
      assert.equal(again.generatedAt, first.generatedAt);

      // What a master-key rotation does to this row: its data key re-wrapped under the new key, in place.
      const newMasterKey = new Uint8Array(randomBytes(32));
      const [row] = store.sealedKeysNotUnder(masterKeyId(newMasterKey)).filter((r) => r.context?.type === 'identity');
      assert.ok(
        row?.context && row.table === 'sealed_keys',
        'the rotation knows the identity row and its seal context',
      );
      const to = rewrap(createKeyRing([newMasterKey, masterKey]), row.context, row.wrapped);
      assert.equal(store.applyRewrap([{ row: { table: 'sealed_keys', name: row.name }, from: row.wrapped, to }]), 1);
      const rotated = store.getIdentityKey()!;
      assert.equal(checkIdentityKey(newMasterKey, rotated), true);
      assert.equal(checkIdentityKey(masterKey, rotated), false);
      // Under the old master key the rotated row no longer opens: the start fails rather than answer wrongly.
      await assert.rejects(ensureIdentityKey({ store, crypto: pool }), /does not open/);
      store.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('the hello verb refuses a challenge that is not 32 bytes of strict base64', async () => {
    const handler = createRequestHandler({
      store: { getKey: () => undefined, getStoredKey: () => undefined, getEciesKey: () => undefined },
      writer: {
        insertKey: () => Promise.reject(new Error('unused')),
        insertUserShare: () => Promise.reject(new Error('unused')),
        recordEffect: () => Promise.reject(new Error('unused')),
      },
      crypto: pool,
      eciesPublicKey: { publicKeyPem: '', keyFingerprint: '', generatedAt: '' },
      identity: key,
      log: () => undefined,
      rotation: {
        bind: () => undefined,
        status: () => Promise.reject(new Error('unused')),
        rotate: () => Promise.reject(new Error('unused')),
      },
    });
    for (const challenge of [undefined, 42, '', b64(randomBytes(31)), b64(randomBytes(32)).replace(/=$/, '')]) {
      const reply = await handler.handle({ id: 1, op: 'hello', params: { challenge } as never });
      assert.equal(reply.ok ? 'ok' : reply.error.code, 'BAD_REQUEST', String(challenge));
    }
    const challenge = randomBytes(32);
    const reply = await handler.handle({ id: 2, op: 'hello', params: { challenge: b64(challenge) } });
    assert.ok(reply.ok);
    assert.equal(verifyHello(challenge, reply.result).ok, true);
    // Two answers to one challenge carry different nonces: no caller picks the whole signed message.
    const second = await handler.handle({ id: 3, op: 'hello', params: { challenge: b64(challenge) } });
    assert.ok(second.ok);
    assert.notEqual((second.result as { nonce: string }).nonce, (reply.result as { nonce: string }).nonce);
  });
});
