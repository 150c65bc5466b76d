import assert from 'node:assert/strict';
import { createPublicKey, verify as nodeVerify, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ed25519 } from '@noble/curves/ed25519.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { hashMessage } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { createEnclaveClient, type EnclaveClient, EnclaveClientError } from './client.ts';
import { createCryptoPool } from './crypto-pool.ts';
import { packSealed, seal, shareContext } from './envelope.ts';
import { MAX_SIGN_MESSAGE_BYTES, type Scheme } from './protocol.ts';
import { createRequestHandler } from './request-handler.ts';
import { type RunningEnclave, startEnclave } from './server.ts';
import {
  SignatureCheckError,
  type SignItem,
  signEd25519,
  signSecp256k1,
  signWithShares,
  verifyEd25519,
  verifySecp256k1,
} from './sign.ts';

const hex = (text: string): Uint8Array => Uint8Array.from(Buffer.from(text, 'hex'));
const toHex = (bytes: Uint8Array): string => Buffer.from(bytes).toString('hex');

function flipped(bytes: Uint8Array, index: number): Uint8Array {
  const copy = Uint8Array.from(bytes);
  copy[index]! ^= 0x01;
  return copy;
}

/** Anvil's first default account. */
const ANVIL_KEY = 'ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80';

/** RFC 8032 §7.1, TEST 1 and TEST 2. */
const RFC8032 = [
  {
    secret: '9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60',
    publicKey: 'd75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a',
    message: '',
    signature:
      'e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b',
  },
  {
    secret: '4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb',
    publicKey: '3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c',
    message: '72',
    signature:
      '92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00',
  },
];

describe('signing (pure)', () => {
  test('Ed25519 matches RFC 8032 §7.1 TEST 1 and TEST 2', () => {
    for (const vector of RFC8032) {
      const signature = signEd25519(hex(vector.secret), hex(vector.message), hex(vector.publicKey));
      assert.equal(toHex(signature), vector.signature);
      assert.ok(ed25519.verify(signature, hex(vector.message), hex(vector.publicKey)), 'noble agrees');
    }
  });

  test('secp256k1: the EIP-191 digest of "hello world" signs to what viem signs for the anvil key', async () => {
    const digest = hex(hashMessage('hello world').slice(2));
    const publicKey = secp256k1.getPublicKey(hex(ANVIL_KEY), false);
    const { signature, recovery } = signSecp256k1(hex(ANVIL_KEY), digest, publicKey);
    const viemSignature = await privateKeyToAccount(`0x${ANVIL_KEY}`).signMessage({ message: 'hello world' });
    assert.equal(toHex(signature), viemSignature.slice(2, 130));
    assert.equal(recovery, Number.parseInt(viemSignature.slice(130), 16) - 27);
    // An independent verifier: noble, digest taken as is, low s required.
    assert.ok(secp256k1.verify(signature, digest, publicKey, { prehash: false, lowS: true }));
  });

  test('secp256k1 signatures are deterministic (RFC 6979) and low-s', () => {
    for (let i = 0; i < 50; i++) {
      const secret = secp256k1.utils.randomSecretKey();
      const digest = new Uint8Array(randomBytes(32));
      const publicKey = secp256k1.getPublicKey(secret, false);
      const first = signSecp256k1(secret, digest, publicKey);
      assert.deepEqual(signSecp256k1(secret, digest, publicKey), first);
      const noble = secp256k1.sign(digest, secret, { prehash: false, format: 'recovered' });
      assert.equal(toHex(first.signature), toHex(noble.subarray(1)));
      assert.equal(first.recovery, noble[0]);
    }
  });

  test('a flipped byte fails verification (signature, digest, message, public key)', () => {
    const digest = new Uint8Array(randomBytes(32));
    const secret = secp256k1.utils.randomSecretKey();
    const publicKey = secp256k1.getPublicKey(secret, false);
    const { signature, recovery } = signSecp256k1(secret, digest, publicKey);
    assert.equal(verifySecp256k1(digest, signature, recovery, publicKey), true);
    for (const index of [0, 31, 32, 63]) {
      assert.equal(verifySecp256k1(digest, flipped(signature, index), recovery, publicKey), false, `byte ${index}`);
    }
    assert.equal(verifySecp256k1(flipped(digest, 7), signature, recovery, publicKey), false);
    assert.equal(verifySecp256k1(digest, signature, 1 - recovery, publicKey), false, 'the other recovery id');
    assert.equal(verifySecp256k1(digest, signature, recovery, flipped(publicKey, 64)), false);
    // High s (n - s) is a valid ECDSA signature but not the canonical one: refused.
    const n = secp256k1.Point.CURVE().n;
    const highS = (n - BigInt(`0x${toHex(signature.subarray(32))}`)).toString(16).padStart(64, '0');
    assert.equal(
      verifySecp256k1(digest, hex(toHex(signature.subarray(0, 32)) + highS), 1 - recovery, publicKey),
      false,
    );

    const [vector] = RFC8032;
    const edSignature = hex(vector!.signature);
    assert.equal(verifyEd25519(hex(vector!.message), edSignature, hex(vector!.publicKey)), true);
    for (const index of [0, 32, 63]) {
      assert.equal(verifyEd25519(hex(vector!.message), flipped(edSignature, index), hex(vector!.publicKey)), false);
    }
    assert.equal(verifyEd25519(Uint8Array.of(1), edSignature, hex(vector!.publicKey)), false);
  });

  test('signing with a key that is not the stored one throws, never returns a signature', () => {
    const digest = new Uint8Array(randomBytes(32));
    const other = secp256k1.getPublicKey(secp256k1.utils.randomSecretKey(), false);
    assert.throws(() => signSecp256k1(secp256k1.utils.randomSecretKey(), digest, other), SignatureCheckError);
    const [vector] = RFC8032;
    assert.throws(
      () => signEd25519(hex(vector!.secret), Uint8Array.of(1, 2), hex(RFC8032[1]!.publicKey)),
      SignatureCheckError,
    );
  });

  test('signWithShares opens the two shares, signs and wipes; a share of another wallet does not open', () => {
    const masterKey = new Uint8Array(randomBytes(32));
    const secret = hex(ANVIL_KEY);
    const service = new Uint8Array(randomBytes(32));
    const user = secret.map((b, i) => b ^ service[i]!);
    const sealedService = seal(masterKey, shareContext('w-shares', 'DKLS', 'service'), service);
    const sealedUser = seal(masterKey, shareContext('w-shares', 'DKLS', 'user'), user);
    const item: SignItem = {
      walletId: 'w-shares',
      scheme: 'DKLS',
      publicKey: toHex(secp256k1.getPublicKey(secret, false)),
      shares: packSealed([sealedService, sealedUser]),
      message: hex(hashMessage('hello world').slice(2)),
    };
    const direct = signSecp256k1(secret, item.message, hex(item.publicKey));
    assert.deepEqual(signWithShares(masterKey, item), {
      signature: toHex(direct.signature),
      recovery: direct.recovery,
    });
    assert.throws(() => signWithShares(masterKey, { ...item, walletId: 'w-other' }));
    assert.throws(() => signWithShares(masterKey, { ...item, shares: packSealed([sealedService, sealedService]) }));
    assert.throws(() => signWithShares(masterKey, { ...item, shares: packSealed([sealedService]) }), /two sealed/);
    assert.throws(() => signWithShares(masterKey, { ...item, shares: item.shares.subarray(0, 100) }), /truncated/);
  });
});

describe('sign verb: a signature that fails its check is never answered', () => {
  test('real workers, a stored public key the shares do not match: INTERNAL, generic message, cause logged', async () => {
    const masterKey = new Uint8Array(randomBytes(32));
    const pool = createCryptoPool({ masterKey, threads: 1 });
    try {
      const key = await pool.generate({ walletId: 'w-mismatch', scheme: 'ED25519', custody: 'managed' });
      const service = key.shares.find((share) => share.kind === 'service')!;
      const user = key.shares.find((share) => share.kind === 'user')!;
      const lines: string[] = [];
      const handler = createRequestHandler({
        store: {
          getKey: () => undefined,
          getEciesKey: () => undefined,
          // The row's public key is another wallet's: the shares sign, the check against this key fails.
          getStoredKey: (walletId) => ({
            walletId,
            scheme: 'ED25519',
            publicKey: RFC8032[0]!.publicKey,
            service,
            user,
          }),
        },
        writer: {
          insertKey: () => Promise.reject(new Error('unused')),
          insertUserShare: () => Promise.reject(new Error('unused')),
          recordEffect: () => Promise.reject(new Error('unused')),
        },
        crypto: pool,
        eciesPublicKey: { publicKeyPem: '', keyFingerprint: '', generatedAt: '' },
        identity: await pool.generateIdentityKey(),
        log: (line) => lines.push(line),
        rotation: {
          bind: () => undefined,
          status: () => Promise.reject(new Error('unused')),
          rotate: () => Promise.reject(new Error('unused')),
        },
      });
      const reply = await handler.handle({
        id: 3,
        op: 'sign',
        params: { walletId: 'w-mismatch', scheme: 'ED25519', message: 'aGVsbG8=' },
      });
      assert.deepEqual(reply, { id: 3, ok: false, error: { code: 'INTERNAL', message: 'internal enclave error' } });
      assert.equal(lines.length, 1);
      assert.match(lines[0]!, /does not verify against the stored public key/);
    } finally {
      await pool.destroy();
    }
  });
});

describe('sign verb (real enclave over its socket)', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'enclave-sign-'));
  let enclave: RunningEnclave;
  let client: EnclaveClient;
  const keys: Record<Scheme, string> = { DKLS: '', ED25519: '' };

  before(async () => {
    enclave = await startEnclave({ dataDir, masterKey: new Uint8Array(randomBytes(32)), threads: 2, log: () => {} });
    client = createEnclaveClient({ socketPath: enclave.socketPath });
    await client.connect();
    keys.DKLS = (await client.generateKey({ walletId: 'evm-1', scheme: 'DKLS' })).publicKey;
    keys.ED25519 = (await client.generateKey({ walletId: 'sol-1', scheme: 'ED25519' })).publicKey;
  });
  after(async () => {
    await client?.close();
    await enclave?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  function rejectsWith(code: string, message?: RegExp) {
    return (error: unknown): boolean => {
      assert.ok(error instanceof EnclaveClientError, String(error));
      assert.equal(error.code, code, error.message);
      if (message) assert.match(error.message, message);
      return true;
    };
  }

  test('DKLS: signs a digest as is; noble verifies r‖s and the recovery id gives the public key', async () => {
    const digest = new Uint8Array(randomBytes(32));
    const result = await client.sign({
      walletId: 'evm-1',
      scheme: 'DKLS',
      message: Buffer.from(digest).toString('base64'),
    });
    assert.match(result.signature, /^[0-9a-f]{128}$/);
    assert.ok(result.recovery === 0 || result.recovery === 1);
    const publicKey = hex(keys.DKLS);
    assert.ok(secp256k1.verify(hex(result.signature), digest, publicKey, { prehash: false, lowS: true }));
    const recovered = secp256k1.Signature.fromBytes(hex(result.signature))
      .addRecoveryBit(result.recovery!)
      .recoverPublicKey(digest);
    assert.equal(recovered.toHex(false), keys.DKLS);
    assert.equal(secp256k1.verify(flipped(hex(result.signature), 5), digest, publicKey, { prehash: false }), false);
    // Deterministic: the same digest signs the same again.
    const again = await client.sign({
      walletId: 'evm-1',
      scheme: 'DKLS',
      message: Buffer.from(digest).toString('base64'),
    });
    assert.deepEqual(again, result);
  });

  test('ED25519: signs the message bytes; node:crypto and noble verify under the returned public key', async () => {
    for (const length of [1, 100, MAX_SIGN_MESSAGE_BYTES]) {
      const message = new Uint8Array(randomBytes(length));
      const result = await client.sign({
        walletId: 'sol-1',
        scheme: 'ED25519',
        message: Buffer.from(message).toString('base64'),
      });
      assert.deepEqual(Object.keys(result), ['signature']);
      const publicKey = createPublicKey({
        key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(keys.ED25519, 'hex').toString('base64url') },
        format: 'jwk',
      });
      assert.ok(nodeVerify(null, message, publicKey, hex(result.signature)));
      assert.ok(ed25519.verify(hex(result.signature), message, hex(keys.ED25519)));
      assert.equal(ed25519.verify(flipped(hex(result.signature), 40), message, hex(keys.ED25519)), false);
    }
  });

  test('refusals: NO_KEY, wrong scheme, bad base64, wrong lengths, bad params', async () => {
    const digest = Buffer.alloc(32, 7).toString('base64');
    await assert.rejects(client.sign({ walletId: 'nobody', scheme: 'DKLS', message: digest }), rejectsWith('NO_KEY'));
    await assert.rejects(
      client.sign({ walletId: 'evm-1', scheme: 'ED25519', message: digest }),
      rejectsWith('BAD_REQUEST', /scheme ED25519 differs from the stored key's scheme/),
    );
    await assert.rejects(
      client.sign({ walletId: 'sol-1', scheme: 'DKLS', message: digest }),
      rejectsWith('BAD_REQUEST', /differs from the stored key's scheme/),
    );
    const badBase64 = [
      `${digest.slice(0, -1)}`, // padding missing
      digest.replace(/=$/, '=='),
      `${digest.slice(0, 4)}\n${digest.slice(4)}`,
      Buffer.alloc(32, 0xfb).toString('base64url'),
      `*${digest.slice(1)}`,
    ];
    for (const message of badBase64) {
      await assert.rejects(
        client.sign({ walletId: 'evm-1', scheme: 'DKLS', message }),
        rejectsWith('BAD_REQUEST', /base64/),
        JSON.stringify(message),
      );
    }
    for (const length of [0, 31, 33, 64]) {
      await assert.rejects(
        client.sign({ walletId: 'evm-1', scheme: 'DKLS', message: Buffer.alloc(length, 1).toString('base64') }),
        rejectsWith('BAD_REQUEST', /32-byte digest/),
      );
    }
    for (const length of [0, MAX_SIGN_MESSAGE_BYTES + 1]) {
      await assert.rejects(
        client.sign({ walletId: 'sol-1', scheme: 'ED25519', message: Buffer.alloc(length, 1).toString('base64') }),
        rejectsWith('BAD_REQUEST'),
      );
    }
    for (const params of [
      {},
      { walletId: 'evm-1', scheme: 'DKLS' },
      { walletId: 'evm-1', scheme: 'DKLS', message: 32 },
      { walletId: 'evm-1', scheme: 'secp256k1', message: digest },
      { walletId: '', scheme: 'DKLS', message: digest },
    ]) {
      await assert.rejects(
        client.sign(params as { walletId: string; scheme: Scheme; message: string }),
        rejectsWith('BAD_REQUEST'),
      );
    }
  });

  test('200 concurrent signatures across several wallets all verify', async () => {
    const wallets = await Promise.all(
      Array.from({ length: 8 }, async (_, i) => {
        const scheme: Scheme = i % 2 ? 'ED25519' : 'DKLS';
        const walletId = `many-${i}`;
        return { walletId, scheme, publicKey: (await client.generateKey({ walletId, scheme })).publicKey };
      }),
    );
    const requests = Array.from({ length: 200 }, (_, i) => {
      const wallet = wallets[i % wallets.length]!;
      const message = new Uint8Array(randomBytes(32));
      return {
        ...wallet,
        message,
        reply: client.sign({ ...wallet, message: Buffer.from(message).toString('base64') }),
      };
    });
    // A bad request among them fails alone.
    const bad = assert.rejects(
      client.sign({ walletId: 'nobody', scheme: 'DKLS', message: Buffer.alloc(32).toString('base64') }),
      rejectsWith('NO_KEY'),
    );
    for (const { scheme, publicKey, message, reply } of requests) {
      const { signature } = await reply;
      const ok =
        scheme === 'DKLS'
          ? secp256k1.verify(hex(signature), message, hex(publicKey), { prehash: false })
          : ed25519.verify(hex(signature), message, hex(publicKey));
      assert.ok(ok);
    }
    await bad;
  });
});
