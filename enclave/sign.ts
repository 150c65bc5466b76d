/**
 * Signing, run inside crypto workers only. The wallet's two sealed shares are opened and combined for one
 * signature, the signature is verified against the stored public key, and every plaintext buffer is wiped before
 * the result leaves. A signature that fails its own verification is never returned: that throws (INTERNAL).
 *
 * secp256k1 runs on tiny-secp256k1 (libsecp256k1 compiled to WASM: ~96 µs per signature, ~3.7x faster than
 * noble; it zeroes its WASM input buffers after each call). Ed25519 runs on node:crypto (OpenSSL).
 */
import { createPrivateKey, createPublicKey, sign as edSign, verify as edVerify, type KeyObject } from 'node:crypto';
import * as ecc from 'tiny-secp256k1';
import { unpackSealed } from './envelope.ts';
import type { EnclaveOps, Scheme } from './protocol.ts';
import { openSecret } from './shares.ts';

export type SignResult = EnclaveOps['sign']['result'];

/** What a worker needs to sign for one request: sealed shares and public data only. */
export interface SignItem {
  walletId: string;
  scheme: Scheme;
  /** The stored public key, hex (see protocol.ts). */
  publicKey: string;
  /** The sealed service and user shares, packed (envelope.ts `packSealed`): one typed array to post, not eight. */
  shares: Uint8Array;
  /** DKLS: the 32-byte digest. ED25519: the message. */
  message: Uint8Array;
}

/** secp256k1 group order n divided by 2 (rounded down), big-endian: a low-s signature has s ≤ n/2. */
const SECP256K1_HALF_N = Buffer.from('7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0', 'hex');

/** A signature failed the check against the stored public key: a fault, never answered as a signature. */
export class SignatureCheckError extends Error {
  override name = 'SignatureCheckError';
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && Buffer.compare(a, b) === 0;
}

/**
 * True when r‖s is a low-s signature of `digest` whose public key, recovered with `recovery`, is `publicKey`
 * (65-byte uncompressed). Recovery checks r, s, the recovery id and the key at once.
 */
export function verifySecp256k1(
  digest: Uint8Array,
  signature: Uint8Array,
  recovery: number,
  publicKey: Uint8Array,
): boolean {
  if (digest.length !== 32 || signature.length !== 64 || (recovery !== 0 && recovery !== 1)) return false;
  if (Buffer.compare(signature.subarray(32), SECP256K1_HALF_N) > 0) return false;
  try {
    const recovered = ecc.recover(digest, signature, recovery, false);
    return recovered !== null && equalBytes(recovered, publicKey);
  } catch {
    // tiny-secp256k1 throws on r or s outside 1..n-1.
    return false;
  }
}

/**
 * Signs a 32-byte digest as is (no hashing, no prefix) with a secp256k1 secret: RFC 6979 deterministic nonce,
 * low s (libsecp256k1 normalises s). Throws SignatureCheckError unless the result verifies against `publicKey`.
 */
export function signSecp256k1(
  secret: Uint8Array,
  digest: Uint8Array,
  publicKey: Uint8Array,
): { signature: Uint8Array; recovery: 0 | 1 } {
  if (digest.length !== 32) throw new Error('a secp256k1 digest is 32 bytes');
  const { signature, recoveryId } = ecc.signRecoverable(digest, secret);
  // Ids 2 and 3 (r ≥ n - h) occur with probability ~2^-127 and cannot be expressed as yParity: refuse them.
  if ((recoveryId !== 0 && recoveryId !== 1) || !verifySecp256k1(digest, signature, recoveryId, publicKey)) {
    throw new SignatureCheckError('secp256k1 signature does not verify against the stored public key');
  }
  return { signature, recovery: recoveryId };
}

/** Public key objects by base64url key, per worker thread: public data, kept to skip the ~8 µs JWK import. */
const ed25519PublicKeys = new Map<string, KeyObject>();
const MAX_CACHED_PUBLIC_KEYS = 4096;

/** The node:crypto public key object of a raw 32-byte Ed25519 public key. */
function ed25519PublicKey(publicKey: Uint8Array): KeyObject {
  const x = Buffer.from(publicKey.buffer, publicKey.byteOffset, publicKey.length).toString('base64url');
  let key = ed25519PublicKeys.get(x);
  if (!key) {
    key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x }, format: 'jwk' });
    if (ed25519PublicKeys.size >= MAX_CACHED_PUBLIC_KEYS) {
      ed25519PublicKeys.delete(ed25519PublicKeys.keys().next().value!);
    }
    ed25519PublicKeys.set(x, key);
  }
  return key;
}

/** True when `signature` is a valid pure Ed25519 (RFC 8032) signature of `message` under the raw `publicKey`. */
export function verifyEd25519(message: Uint8Array, signature: Uint8Array, publicKey: Uint8Array): boolean {
  if (publicKey.length !== 32 || signature.length !== 64) return false;
  try {
    return edVerify(null, message, ed25519PublicKey(publicKey), signature);
  } catch {
    return false;
  }
}

/**
 * Signs `message` with pure Ed25519 (RFC 8032 §5.1.6: no prehash, no context) from a 32-byte seed. Throws
 * SignatureCheckError unless the result verifies against the stored raw `publicKey`.
 *
 * The seed enters OpenSSL through a JWK (26 µs; PKCS#8 DER is ~330 µs), which means a base64url string of it
 * exists for a moment: JavaScript strings cannot be wiped, they are freed when collected.
 */
export function signEd25519(seed: Uint8Array, message: Uint8Array, publicKey: Uint8Array): Uint8Array {
  if (seed.length !== 32 || publicKey.length !== 32) throw new Error('Ed25519 seeds and public keys are 32 bytes');
  const privateKey = createPrivateKey({
    key: {
      kty: 'OKP',
      crv: 'Ed25519',
      d: Buffer.from(seed.buffer, seed.byteOffset, seed.length).toString('base64url'),
      // OpenSSL derives the public key from `d`; `x` is required by the JWK import but not trusted.
      x: Buffer.from(publicKey).toString('base64url'),
    },
    format: 'jwk',
  });
  const signature = new Uint8Array(edSign(null, message, privateKey));
  if (!verifyEd25519(message, signature, publicKey)) {
    throw new SignatureCheckError('Ed25519 signature does not verify against the stored public key');
  }
  return signature;
}

/** Opens the item's shares, signs, verifies against the stored public key, wipes the secret. */
export function signWithShares(masterKey: Uint8Array, item: SignItem): SignResult {
  const publicKey = Buffer.from(item.publicKey, 'hex');
  const [service, user, extra] = unpackSealed(item.shares);
  if (!service || !user || extra) throw new Error('a sign item must carry exactly two sealed shares');
  const secret = openSecret(masterKey, item.walletId, item.scheme, service, user);
  try {
    if (item.scheme === 'DKLS') {
      const { signature, recovery } = signSecp256k1(secret, item.message, publicKey);
      return { signature: Buffer.from(signature).toString('hex'), recovery };
    }
    return { signature: Buffer.from(signEd25519(secret, item.message, publicKey)).toString('hex') };
  } finally {
    secret.fill(0);
  }
}
