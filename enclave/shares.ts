/**
 * The 2-of-2 XOR split of a wallet key and what is derived from a combined key, for crypto workers only: every
 * function here either handles plaintext key material (which the caller wipes) or produces public data.
 */
import { type MasterKeys, type SealedBlob, shareContext, unseal } from './envelope.ts';
import { secp256k1, sodium } from './native-crypto.ts';
import type { Scheme, UserShareSegment } from './protocol.ts';

export const SECRET_BYTES = 32;

/** `a XOR b` in a new array (the caller wipes it). */
export function xor(a: Uint8Array, b: Uint8Array): Uint8Array {
  if (a.length !== b.length) throw new Error('shares differ in length');
  const out = new Uint8Array(a.length);
  for (let i = 0; i < a.length; i++) out[i] = a[i]! ^ b[i]!;
  return out;
}

/**
 * Opens a wallet's two sealed shares and combines them into its secret key (secp256k1 scalar or Ed25519 seed).
 * The opened shares are wiped here; the caller wipes the returned secret.
 */
export function openSecret(
  masterKey: MasterKeys,
  walletId: string,
  scheme: Scheme,
  service: SealedBlob,
  user: SealedBlob,
): Uint8Array {
  const serviceShare = unseal(masterKey, shareContext(walletId, scheme, 'service'), service);
  try {
    const userShare = unseal(masterKey, shareContext(walletId, scheme, 'user'), user);
    try {
      return xor(serviceShare, userShare);
    } finally {
      userShare.fill(0);
    }
  } finally {
    serviceShare.fill(0);
  }
}

/**
 * The public key of a secret, in the format the enclave stores (secp256k1 uncompressed, 65 bytes; Ed25519 raw,
 * 32 bytes), or undefined when the bytes are not a valid secret of the scheme (a secp256k1 scalar of 0 or ≥ n).
 */
export function derivePublicKey(scheme: Scheme, secret: Uint8Array): Uint8Array | undefined {
  if (secret.length !== SECRET_BYTES) return undefined;
  if (scheme === 'DKLS') {
    return secp256k1.privateKeyVerify(secret) ? secp256k1.publicKeyCreate(secret, false) : undefined;
  }
  const publicKey = Buffer.alloc(32);
  const secretKey = Buffer.alloc(64);
  try {
    sodium.crypto_sign_seed_keypair(publicKey, secretKey, Buffer.from(secret.buffer, secret.byteOffset, secret.length));
    return new Uint8Array(publicKey.buffer, publicKey.byteOffset, publicKey.length);
  } finally {
    sodium.sodium_memzero(secretKey);
  }
}

/**
 * Encodes a user share as the spec's share string: the standard, padded base64 of one segment's JSON (the
 * enclave emits one segment; readers split on `USER_SHARE_SEPARATOR` and take the segment whose `id` is theirs).
 */
export function encodeUserShare(walletId: string, scheme: Scheme, userShare: Uint8Array): string {
  // A view, not Buffer.from(userShare): that would copy the share into Node's shared 8 KB pool, where nothing
  // wipes it. The hex string and the JSON built from it cannot be wiped either (strings are immutable).
  const view = Buffer.from(userShare.buffer, userShare.byteOffset, userShare.length);
  const segment: UserShareSegment = { id: walletId, scheme, signer: view.toString('hex') };
  // Standard base64 never contains USER_SHARE_SEPARATOR ('-'), so one segment is a whole share string.
  return Buffer.from(JSON.stringify(segment), 'utf8').toString('base64');
}
