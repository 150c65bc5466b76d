/**
 * Key generation, run inside crypto workers only: the secret exists in one worker's memory for the duration of
 * one call and is wiped before it returns. What leaves is the public key and the sealed shares.
 */
import { randomFillSync, timingSafeEqual } from 'node:crypto';
import { p256 } from '@noble/curves/nist.js';
import {
  ECIES_CONTEXT,
  findOpeningKey,
  type MasterKeys,
  type SealedBlob,
  type SealedShare,
  seal,
  shareContext,
  UNLABELED_KEY_ID,
  unseal,
} from './envelope.ts';
import type { Custody, Scheme } from './protocol.ts';
import { derivePublicKey, encodeUserShare, SECRET_BYTES, xor } from './shares.ts';

export interface GeneratedKey {
  /** Hex without 0x: 65-byte uncompressed secp256k1 point for DKLS, 32 raw bytes for ED25519. */
  publicKey: string;
  /** The sealed shares to store: service and user (managed), or the service share alone (pregen). */
  shares: SealedShare[];
  /** Pregen only: the user share as the spec's share string, to be answered once and never stored. */
  userShare?: string;
}

/**
 * Draws a secret of `scheme` from the system's generator and derives its public key: a secp256k1 scalar by
 * rejection sampling (retry until 1 ≤ d < n), or a 32-byte Ed25519 seed (any bytes are a seed).
 */
function createSecret(scheme: Scheme): { secret: Uint8Array; publicKey: Uint8Array } {
  const secret = new Uint8Array(SECRET_BYTES);
  for (;;) {
    randomFillSync(secret);
    const publicKey = derivePublicKey(scheme, secret);
    if (publicKey) return { secret, publicKey };
  }
}

/**
 * Generates a wallet key held as two shares: service share random, user share = secret XOR service share.
 * `managed`: both are sealed for `walletId`/`scheme`. `pregen`: only the service share is sealed; the user share
 * comes back once as the spec's share string. Before answering, the sealed shares are opened again and their
 * XOR (with the plaintext user share, for pregen) must equal the secret the public key was derived from, so the
 * shares reproduce the public key; otherwise this throws and nothing is stored.
 */
export function generateWalletKey(
  masterKey: MasterKeys,
  walletId: string,
  scheme: Scheme,
  custody: Custody = 'managed',
): GeneratedKey {
  const { secret, publicKey } = createSecret(scheme);
  const serviceShare = new Uint8Array(SECRET_BYTES);
  randomFillSync(serviceShare);
  const userShare = xor(secret, serviceShare);
  const wipe: Uint8Array[] = [secret, serviceShare, userShare];
  try {
    const service = seal(masterKey, shareContext(walletId, scheme, 'service'), serviceShare);
    const shares: SealedShare[] = [{ kind: 'service', ...service }];
    let user: SealedBlob | undefined;
    if (custody === 'managed') {
      user = seal(masterKey, shareContext(walletId, scheme, 'user'), userShare);
      shares.push({ kind: 'user', ...user });
    }

    // Sanity check on what will be stored (and handed out): open the sealed shares and recombine them.
    const openedService = unseal(masterKey, shareContext(walletId, scheme, 'service'), service);
    wipe.push(openedService);
    const openedUser = user ? unseal(masterKey, shareContext(walletId, scheme, 'user'), user) : userShare;
    wipe.push(openedUser);
    const combined = xor(openedService, openedUser);
    wipe.push(combined);
    if (!timingSafeEqual(combined, secret)) throw new Error('sealed shares do not recombine to the key');

    const key: GeneratedKey = { publicKey: Buffer.from(publicKey).toString('hex'), shares };
    if (custody === 'pregen') key.userShare = encodeUserShare(walletId, scheme, userShare);
    return key;
  } finally {
    for (const bytes of wipe) bytes.fill(0);
  }
}

export interface GeneratedEciesKey {
  /** Uncompressed P-256 point, 65 bytes. */
  publicKey: Uint8Array;
  sealed: SealedBlob;
}

/** Generates the enclave's P-256 ECIES key pair and seals the private key. */
export function generateEciesKey(masterKey: MasterKeys): GeneratedEciesKey {
  const secretKey = p256.utils.randomSecretKey();
  try {
    const publicKey = p256.getPublicKey(secretKey, false);
    const sealed = seal(masterKey, ECIES_CONTEXT, secretKey);
    if (!checkEciesKey(masterKey, { publicKey, sealed })) throw new Error('sealed ECIES key does not reopen');
    return { publicKey, sealed };
  } finally {
    secretKey.fill(0);
  }
}

/**
 * True when `masterKey` opens the sealed ECIES private key and it matches `publicKey`. At start this proves the
 * master key is the one the store was sealed with.
 */
export function checkEciesKey(masterKey: MasterKeys, record: GeneratedEciesKey): boolean {
  let secretKey: Uint8Array | undefined;
  try {
    secretKey = unseal(masterKey, ECIES_CONTEXT, record.sealed);
    return Buffer.from(p256.getPublicKey(secretKey, false)).equals(record.publicKey);
  } catch {
    return false;
  } finally {
    secretKey?.fill(0);
  }
}

/**
 * The id of the held master key that opens the ECIES key and matches its public key: the record's own key id, or
 * for a record of an earlier version (unlabeled), whichever held key opens it. Undefined when none does.
 */
export function eciesKeyId(masterKey: MasterKeys, record: GeneratedEciesKey): string | undefined {
  if (!checkEciesKey(masterKey, record)) return undefined;
  if (record.sealed.keyId !== UNLABELED_KEY_ID) return record.sealed.keyId;
  return findOpeningKey(masterKey, ECIES_CONTEXT, record.sealed);
}
