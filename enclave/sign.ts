/**
 * Signing, run inside crypto workers only. The wallet's two sealed shares are opened and combined for one
 * signature, the signature is verified against the stored public key, and every plaintext buffer is wiped before
 * the result leaves. A signature that fails its own verification is never returned: that throws (INTERNAL).
 *
 * secp256k1 runs on native libsecp256k1, Ed25519 on libsodium (native-crypto.ts has the measured reasons).
 */

import { InternalError } from '../chains/domain/errors.ts';
import { verifyEd25519 } from '../chains/verify-ed25519.ts';
import { type MasterKeys, unpackSealed } from './envelope.ts';
import { secp256k1, sodium } from './native-crypto.ts';
import type { EnclaveOps, Scheme } from './protocol.ts';
import { openSecret } from './shares.ts';

/** Ed25519 verification (libsodium), shared with chains/. */
export { verifyEd25519 };

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
export class SignatureCheckError extends InternalError {
  override name = 'SignatureCheckError';
  constructor(message: string) {
    super('SIGNATURE_CHECK_FAILED', message);
  }
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
    return equalBytes(secp256k1.ecdsaRecover(signature, recovery, digest, false), publicKey);
  } catch {
    // The binding throws on r or s outside 1..n-1 and on a signature that recovers no point.
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
  const { signature, recid: recoveryId } = secp256k1.ecdsaSign(digest, secret);
  // Ids 2 and 3 (r ≥ n - h) occur with probability ~2^-127 and cannot be expressed as yParity: refuse them.
  if ((recoveryId !== 0 && recoveryId !== 1) || !verifySecp256k1(digest, signature, recoveryId, publicKey)) {
    throw new SignatureCheckError('secp256k1 signature does not verify against the stored public key');
  }
  return { signature, recovery: recoveryId };
}

/** A Buffer view of `bytes` (sodium-native takes Buffers), sharing its memory. */
function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
}

/**
 * Signs `message` with pure Ed25519 (RFC 8032 §5.1.6: no prehash, no context) from a 32-byte seed. Throws
 * SignatureCheckError unless the result verifies against the stored raw `publicKey`.
 *
 * libsodium's secret key is seed ‖ public key; the stored public key fills the second half, so no point
 * multiplication is spent deriving it. A seed that does not belong to that public key (a wrong share) gives a
 * signature that fails the verification below and is never returned; the same holds for a tampered stored public
 * key, which also keeps the "two public keys, one seed" nonce-reuse attack out of reach. The 64-byte buffer is
 * wiped before this returns.
 */
export function signEd25519(seed: Uint8Array, message: Uint8Array, publicKey: Uint8Array): Uint8Array {
  if (seed.length !== 32 || publicKey.length !== 32) {
    throw new Error('Ed25519 seeds and public keys are 32 bytes');
  }
  const secretKey = Buffer.alloc(64);
  const signature = Buffer.alloc(64);
  try {
    secretKey.set(seed, 0);
    secretKey.set(publicKey, 32);
    sodium.crypto_sign_detached(signature, asBuffer(message), secretKey);
  } finally {
    sodium.sodium_memzero(secretKey);
  }
  if (!verifyEd25519(message, signature, publicKey)) {
    throw new SignatureCheckError('Ed25519 signature does not verify against the stored public key');
  }
  return new Uint8Array(signature.buffer, signature.byteOffset, signature.length);
}

/** Opens the item's shares, signs, verifies against the stored public key, wipes the secret. */
export function signWithShares(masterKey: MasterKeys, item: SignItem): SignResult {
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
