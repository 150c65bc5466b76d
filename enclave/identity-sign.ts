/**
 * The identity key inside crypto workers: generation, the start-up check and handshake signatures. The seed exists
 * in a worker's memory for one call and is wiped before it returns (identity-key.ts is the main-thread side).
 */
import { randomFillSync } from 'node:crypto';
import { IDENTITY_CONTEXT, type MasterKeys, type SealedBlob, seal, unseal } from './envelope.ts';
import { derivePublicKey, SECRET_BYTES } from './shares.ts';
import { signEd25519 } from './sign.ts';

export interface GeneratedIdentityKey {
  /** Raw Ed25519 public key, 32 bytes. */
  publicKey: Uint8Array;
  sealed: SealedBlob;
}

/** What a worker needs to sign one handshake: the sealed seed, its public key and the message (identity.ts). */
export interface IdentitySignItem {
  publicKey: Uint8Array;
  sealed: SealedBlob;
  message: Uint8Array;
}

/** Worker: opens the sealed seed (the caller wipes it). Throws if the master key or the row is wrong. */
function openSeed(masterKey: MasterKeys, sealed: SealedBlob): Uint8Array {
  const seed = unseal(masterKey, IDENTITY_CONTEXT, sealed);
  if (seed.length !== SECRET_BYTES) {
    seed.fill(0);
    throw new Error('the sealed identity seed is not 32 bytes');
  }
  return seed;
}

/**
 * Worker: true when `masterKey` opens the sealed seed and it derives `publicKey`. At start this proves the row is
 * intact and belongs to this master key.
 */
export function checkIdentityKey(masterKey: MasterKeys, record: GeneratedIdentityKey): boolean {
  let seed: Uint8Array | undefined;
  try {
    seed = openSeed(masterKey, record.sealed);
    const derived = derivePublicKey('ED25519', seed);
    return derived !== undefined && Buffer.from(derived).equals(record.publicKey);
  } catch {
    return false;
  } finally {
    seed?.fill(0);
  }
}

/** Worker: draws a seed from the system's generator, derives its public key, seals the seed; wipes it. */
export function generateIdentityKey(masterKey: MasterKeys): GeneratedIdentityKey {
  const seed = randomFillSync(new Uint8Array(SECRET_BYTES));
  try {
    const publicKey = derivePublicKey('ED25519', seed);
    if (!publicKey) throw new Error('could not derive the identity public key');
    const sealed = seal(masterKey, IDENTITY_CONTEXT, seed);
    if (!checkIdentityKey(masterKey, { publicKey, sealed })) throw new Error('sealed identity key does not reopen');
    return { publicKey, sealed };
  } finally {
    seed.fill(0);
  }
}

/**
 * Worker: signs one handshake message with the identity seed (libsodium, verified against the stored public key
 * before it leaves, as every enclave signature is) and wipes the seed.
 */
export function signWithIdentityKey(masterKey: MasterKeys, item: IdentitySignItem): Uint8Array {
  const seed = openSeed(masterKey, item.sealed);
  try {
    return signEd25519(seed, item.message, item.publicKey);
  } finally {
    seed.fill(0);
  }
}
