/**
 * Share migration (spec, "Share migration"), run inside crypto workers only: decrypts the partner's ECIES
 * envelope, finds this wallet's user share in it, proves that it completes the wallet's key (service share XOR
 * user share must give the stored public key), and seals it for storage. Plaintext never leaves the worker.
 */
import { timingSafeEqual } from 'node:crypto';
import { eciesDecrypt, parseEciesEnvelope } from './ecies.ts';
import { ECIES_CONTEXT, type MasterKeys, type SealedBlob, seal, shareContext, unseal } from './envelope.ts';
import { EnclaveRequestError, invalidPayload } from './errors.ts';
import type { Scheme } from './protocol.ts';
import { derivePublicKey, SECRET_BYTES, xor } from './shares.ts';

/** What a worker needs for one migration: sealed records, public data and the (encrypted) payload. */
export interface MigrateItem {
  walletId: string;
  scheme: Scheme;
  /** The stored public key, hex. */
  publicKey: string;
  /** The wallet's sealed service share. */
  service: SealedBlob;
  /** The enclave's sealed ECIES private key. */
  ecies: SealedBlob;
  /** This enclave's ECIES key fingerprint: the envelope's `keyId` must equal it. */
  keyFingerprint: string;
  encryptedPayload: string;
}

const SIGNER_HEX = /^(?:0x)?([0-9a-fA-F]{64})$/;

/**
 * Reads `{ shares: [ { userId, walletId, walletScheme, signer } ] }` and returns the signer bytes of the entry for
 * `walletId` (the caller wipes them). Messages name what is wrong, never what the plaintext holds.
 */
export function findSigner(plaintext: Uint8Array, walletId: string, scheme: Scheme): Uint8Array {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(plaintext.buffer, plaintext.byteOffset, plaintext.length).toString('utf8'));
  } catch {
    // Not the SyntaxError's message: V8 quotes the input in it.
    throw invalidPayload('the decrypted payload is not JSON');
  }
  const shares = (value as { shares?: unknown } | null)?.shares;
  if (!Array.isArray(shares)) throw invalidPayload('the decrypted payload has no shares array');
  const entry = shares.find(
    (candidate): candidate is Record<string, unknown> =>
      typeof candidate === 'object' &&
      candidate !== null &&
      (candidate as { walletId?: unknown }).walletId === walletId,
  );
  if (!entry) {
    throw new EnclaveRequestError('WRONG_WALLET', `the payload holds no share for wallet ${walletId}`);
  }
  if (entry.walletScheme !== scheme) {
    throw invalidPayload(`the share's walletScheme is not the wallet's scheme (${scheme})`);
  }
  const signer = typeof entry.signer === 'string' ? SIGNER_HEX.exec(entry.signer) : null;
  if (!signer) throw invalidPayload("the share's signer must be 32 bytes as 64 hex characters (optional 0x)");
  // Decoded straight into an array of its own: Buffer.from(hex) would leave a copy of the share in Node's shared
  // 8 KB pool, which nothing wipes (Buffer.alloc is never pooled). The caller wipes the result. The hex string and
  // the decrypted JSON text remain until collected: strings cannot be wiped.
  const share = Buffer.alloc(SECRET_BYTES);
  share.write(signer[1]!, 'hex');
  return share;
}

/**
 * Runs one migration and returns the user share sealed for (walletId, scheme, 'user'), exactly as key generation
 * seals it. Throws INVALID_PAYLOAD / WRONG_WALLET for a payload that cannot be used; every plaintext is wiped.
 */
export function migrateUserShare(masterKey: MasterKeys, item: MigrateItem): SealedBlob {
  const envelope = parseEciesEnvelope(item.encryptedPayload, item.keyFingerprint);
  const wipe: Uint8Array[] = [];
  try {
    const eciesKey = unseal(masterKey, ECIES_CONTEXT, item.ecies);
    wipe.push(eciesKey);
    const plaintext = eciesDecrypt(eciesKey, envelope);
    wipe.push(plaintext);
    const userShare = findSigner(plaintext, item.walletId, item.scheme);
    wipe.push(userShare);

    // The share must complete this wallet's key: service share XOR user share gives the stored public key.
    const serviceShare = unseal(masterKey, shareContext(item.walletId, item.scheme, 'service'), item.service);
    wipe.push(serviceShare);
    const secret = xor(serviceShare, userShare);
    wipe.push(secret);
    const publicKey = derivePublicKey(item.scheme, secret);
    if (!publicKey || !Buffer.from(publicKey).equals(Buffer.from(item.publicKey, 'hex'))) {
      throw invalidPayload("the share does not belong to this wallet's key");
    }

    const context = shareContext(item.walletId, item.scheme, 'user');
    const sealed = seal(masterKey, context, userShare);
    // As key generation does: what will be stored must open again to the same share.
    const reopened = unseal(masterKey, context, sealed);
    wipe.push(reopened);
    if (reopened.length !== SECRET_BYTES || !timingSafeEqual(reopened, userShare)) {
      throw new Error('the sealed user share does not reopen');
    }
    return sealed;
  } finally {
    for (const bytes of wipe) bytes.fill(0);
  }
}
