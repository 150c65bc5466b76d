/**
 * A partner's share-migration client, written from the spec's "Share migration" steps with Node's own crypto
 * only (nothing of the service is imported): it reads the user share string, builds the plaintext, and
 * encrypts it to the enclave's P-256 key as ECIES-P256-AES256-SHA256. The lower-level pieces are exported so
 * tests can build tampered envelopes.
 */
import {
  createCipheriv,
  createHash,
  createPublicKey,
  diffieHellman,
  ECDH,
  generateKeyPairSync,
  type KeyObject,
  randomBytes,
} from 'node:crypto';

/** The only algorithm name the spec defines. */
export const MIGRATION_ALGORITHM = 'ECIES-P256-AES256-SHA256';

/** What `GET /v1/enclave/public-key` answers (the fields the client needs). */
export interface EnclaveKey {
  publicKey: string;
  keyFingerprint: string;
}

/** One segment of a user share string. */
export interface UserShareSegment {
  id: string;
  scheme?: string;
  signer?: string;
  [k: string]: unknown;
}

/** One entry of the plaintext's `shares` array. */
export interface ShareEntry {
  userId: string;
  walletId: string;
  walletScheme: string;
  signer: string;
}

/** The envelope whose JSON string is `encryptedPayload`. */
export interface MigrationEnvelope {
  encryptedData: string;
  keyId: string;
  ephemeral: string;
  algorithm: string;
}

/** How the ephemeral public key is written in the envelope. The spec's form is `base64` (uncompressed point). */
export type EphemeralEncoding = 'base64' | 'hex' | 'compressed-base64' | 'spki-pem';

/**
 * The segments of a user share string: split on `-`, base64-decode each, parse its JSON.
 * Throws when a segment is not base64 JSON.
 */
export function parseUserShareSegments(userShare: string): UserShareSegment[] {
  return userShare.split('-').map((segment) => {
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(segment)) throw new Error(`user share segment is not base64: ${segment}`);
    return JSON.parse(Buffer.from(segment, 'base64').toString('utf8')) as UserShareSegment;
  });
}

/** The segment of a user share string whose `id` is the wallet id (spec: it carries `signer`). */
export function findUserShareSegment(userShare: string, walletId: string): UserShareSegment {
  const segment = parseUserShareSegments(userShare).find((s) => s.id === walletId);
  if (!segment) throw new Error(`the user share holds no segment for wallet ${walletId}`);
  if (typeof segment.signer !== 'string') throw new Error(`the segment for wallet ${walletId} carries no signer`);
  return segment;
}

/** The spec's plaintext: `{ shares: [ { userId, walletId, walletScheme, signer } ] }`, `userId` = wallet id. */
export function sharePlaintext(entries: readonly ShareEntry[]): string {
  return JSON.stringify({ shares: entries });
}

/** The one share entry of a wallet, as the spec builds it. */
export function shareEntry(walletId: string, walletScheme: string, signer: string): ShareEntry {
  return { userId: walletId, walletId, walletScheme, signer };
}

/** The uncompressed 65-byte point (04 ‖ x ‖ y) of a P-256 public key. */
export function uncompressedPoint(key: KeyObject): Buffer {
  const jwk = key.export({ format: 'jwk' });
  if (jwk.crv !== 'P-256' || !jwk.x || !jwk.y) throw new Error('not a P-256 public key');
  return Buffer.concat([Buffer.from([4]), Buffer.from(jwk.x, 'base64url'), Buffer.from(jwk.y, 'base64url')]);
}

function encodeEphemeral(publicKey: KeyObject, encoding: EphemeralEncoding): string {
  const point = uncompressedPoint(publicKey);
  switch (encoding) {
    case 'base64':
      return point.toString('base64');
    case 'hex':
      return point.toString('hex');
    case 'compressed-base64':
      return Buffer.from(ECDH.convertKey(point, 'prime256v1', undefined, undefined, 'compressed') as Buffer).toString(
        'base64',
      );
    case 'spki-pem':
      return publicKey.export({ type: 'spki', format: 'pem' }).toString();
  }
}

/**
 * Encrypts `plaintext` to the enclave key (spec steps): an ephemeral P-256 key pair; ECDH with the enclave public
 * key; AES key = SHA-256 of the shared secret; AES-256-GCM with a random 12-byte IV; `encryptedData` = base64 of
 * IV ‖ ciphertext ‖ tag; `keyId` = the key fingerprint; `ephemeral` = base64 of the uncompressed ephemeral point.
 */
export function encryptForEnclave(
  plaintext: string | Uint8Array,
  enclave: EnclaveKey,
  opts: { ephemeral?: EphemeralEncoding } = {},
): MigrationEnvelope {
  const enclaveKey = createPublicKey(enclave.publicKey);
  // Step 1: an ephemeral P-256 key pair.
  const eph = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  // Step 2: ECDH with the enclave public key (the shared secret is the x coordinate, 32 bytes).
  const shared = diffieHellman({ privateKey: eph.privateKey, publicKey: enclaveKey });
  // Step 3: the AES key is SHA-256 of the shared secret.
  const aesKey = createHash('sha256').update(shared).digest();
  // Step 4: AES-256-GCM with a random 12-byte IV; the IV is prepended, the tag appended.
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', aesKey, iv);
  const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  const tag = cipher.getAuthTag();
  return {
    encryptedData: Buffer.concat([iv, body, tag]).toString('base64'),
    keyId: enclave.keyFingerprint,
    ephemeral: encodeEphemeral(eph.publicKey, opts.ephemeral ?? 'base64'),
    algorithm: MIGRATION_ALGORITHM,
  };
}

/** `encryptedPayload` for a wallet from the user share string handed out at pre-generation. */
export function migrationPayload(
  userShare: string,
  wallet: { id: string; scheme: string },
  enclave: EnclaveKey,
  opts: { ephemeral?: EphemeralEncoding } = {},
): string {
  const { signer } = findUserShareSegment(userShare, wallet.id);
  const plaintext = sharePlaintext([shareEntry(wallet.id, wallet.scheme, signer as string)]);
  return JSON.stringify(encryptForEnclave(plaintext, enclave, opts));
}

/** The envelope's `encryptedData` with one byte XORed at `index` (negative counts from the end). */
export function flipDataByte(envelope: MigrationEnvelope, index: number): MigrationEnvelope {
  const bytes = Buffer.from(envelope.encryptedData, 'base64');
  const at = index < 0 ? bytes.length + index : index;
  bytes[at] = bytes[at]! ^ 0x01;
  return { ...envelope, encryptedData: bytes.toString('base64') };
}

/** The envelope's `encryptedData` cut to its first `bytes` bytes. */
export function truncateData(envelope: MigrationEnvelope, bytes: number): MigrationEnvelope {
  return {
    ...envelope,
    encryptedData: Buffer.from(envelope.encryptedData, 'base64').subarray(0, bytes).toString('base64'),
  };
}

/** A fresh random signer of 32 bytes (a share that completes no wallet's key). */
export function randomSigner(): string {
  return randomBytes(32).toString('hex');
}
