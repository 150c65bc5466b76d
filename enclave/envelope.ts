/**
 * Envelope encryption for everything secret the enclave stores.
 *
 * A record's plaintext is sealed under a fresh random 32-byte data key (the data layer); the data key is sealed
 * (wrapped) under a master key (the wrap layer). Both layers carry associated data naming the record, so a
 * ciphertext or a wrapped key copied onto another record fails to open. Each record also says which master key
 * wrapped it (`keyId`, a keyed hash of the key, never the key) and which cipher each layer uses, so records of
 * several formats and master keys live side by side: rotating the master key re-wraps data keys only (`rewrap`),
 * one record at a time, while the enclave keeps serving.
 *
 * Ciphers:
 * - XChaCha20-Poly1305 (libsodium, `sodium-native`) for both layers of every record sealed now. Its nonces are
 *   192 random bits, so one master key can wrap billions of data keys: a nonce collision among 2^48 wraps has a
 *   probability around 2^-97. (AES-GCM's 96-bit random nonces allow fewer than 2^32 under one key, NIST SP 800-38D
 *   §8.3.) It is also the cheaper cipher on the signing hot path, which opens two records per signature: native
 *   calls on caller-owned buffers instead of an OpenSSL cipher object per operation (see enclave/README.md and
 *   `test/bench/enclave-sign.ts`). A per-wrap key derived with HKDF was the other candidate: it costs an HKDF per
 *   open on top of the cipher.
 * - AES-256-GCM (node:crypto) in records sealed by earlier versions (`cipher` 1 in both layers). They stay
 *   readable; a rotation re-wraps their data key with XChaCha20-Poly1305 and leaves their AES-GCM data layer as is
 *   (the data layer's key is used once, so its random 96-bit nonce is safe).
 *
 * Record formats are plain AEAD outputs (ciphertext || 16-byte tag); key-store.test.ts opens them with
 * @noble/ciphers, an independent implementation, and pins the associated data.
 */
import { createCipheriv, createDecipheriv, createHmac } from 'node:crypto';
import * as sodium from 'sodium-native';

export const KEY_BYTES = 32;
/** AES-GCM nonce length (legacy records and the ECIES migration envelope). */
export const NONCE_BYTES = 12;
/** XChaCha20-Poly1305 nonce length. */
export const XNONCE_BYTES = 24;
export const TAG_BYTES = 16;
const AAD_VERSION = 'wcs-enclave-v1';
/** The message of the keyed hash that names a master key (see masterKeyId). */
const KEY_ID_LABEL = 'wcs-enclave-master-key-id';
/** Hex characters of a key id (64 bits of HMAC-SHA256). */
export const KEY_ID_LENGTH = 16;

/** Ciphers of a record's layers, as stored (`wrap_cipher`, `data_cipher`). */
export const AES_256_GCM = 1;
export const XCHACHA20_POLY1305 = 2;
export type Cipher = typeof AES_256_GCM | typeof XCHACHA20_POLY1305;

/**
 * The key id of records written before key ids existed (key store schema 1): they were all wrapped by the one
 * master key of their store, and the enclave labels them with its id at the first start that can open them.
 */
export const UNLABELED_KEY_ID = '';

/** A sealed record: ciphertexts include their 16-byte tag. */
export interface SealedBlob {
  /** Id of the master key that wrapped the data key (masterKeyId), or UNLABELED_KEY_ID. */
  keyId: string;
  /** Cipher of the wrap layer (data key under the master key). */
  wrapCipher: Cipher;
  /** Nonce used to wrap the data key under the master key. */
  dekIv: Uint8Array;
  /** The data key sealed under the master key (32 + 16 bytes). */
  wrappedKey: Uint8Array;
  /** Cipher of the data layer (plaintext under the data key). */
  dataCipher: Cipher;
  /** Nonce used to seal the plaintext under the data key. */
  iv: Uint8Array;
  /** The plaintext sealed under the data key. */
  ciphertext: Uint8Array;
}

/** The wrap layer of a record: what a rotation rewrites. */
export type WrappedDataKey = Pick<SealedBlob, 'keyId' | 'wrapCipher' | 'dekIv' | 'wrappedKey'>;

export type ShareKind = 'service' | 'user';

/** A sealed share as stored: which share it is plus its envelope. */
export interface SealedShare extends SealedBlob {
  kind: ShareKind;
}

/**
 * The master keys an enclave holds, by key id, and the one that seals new records. During a rotation it holds
 * the old key and the new one, and seals with the new one.
 */
export interface MasterKeyRing {
  readonly keys: ReadonlyMap<string, Uint8Array>;
  /** Id of the key `seal` and `rewrap` wrap under; one of `keys`. */
  readonly sealWith: string;
}

/** A single master key (tests, tools), or a ring. */
export type MasterKeys = Uint8Array | MasterKeyRing;

/** What a sealed record is: becomes the associated data of both layers. */
export type SealContext =
  | { type: 'share'; walletId: string; scheme: string; kind: ShareKind }
  | { type: 'ecies'; curve: 'P-256' }
  | { type: 'identity'; curve: 'Ed25519' };

/** The seal context of a share: its associated data binds it to the wallet, the scheme and the share kind. */
export function shareContext(walletId: string, scheme: string, kind: ShareKind): SealContext {
  return { type: 'share', walletId, scheme, kind };
}

/** The seal context of the enclave's ECIES private key. */
export const ECIES_CONTEXT: SealContext = { type: 'ecies', curve: 'P-256' };

/** The seal context of the enclave's Ed25519 identity key (identity-key.ts). */
export const IDENTITY_CONTEXT: SealContext = { type: 'identity', curve: 'Ed25519' };

/**
 * Unambiguous associated data: a version tag, the layer, then each field as a 4-byte big-endian byte length
 * followed by its UTF-8 bytes (so no two field lists encode alike, whatever characters they hold). Both ciphers
 * use the same bytes; records depend on them, and key-store.test.ts pins them.
 * (Buffer.write rather than TextEncoder: same bytes, half the cost, and signing computes four of these.)
 */
export function encodeAad(layer: 'data' | 'key', context: SealContext): Uint8Array {
  if (context.type !== 'share') return encodeFields([AAD_VERSION, layer, context.type, context.curve]);
  // Signing encodes four of these per request: the fixed leading fields are encoded once.
  const head = layer === 'data' ? SHARE_DATA_HEAD : SHARE_KEY_HEAD;
  const { walletId, scheme, kind } = context;
  const out = Buffer.allocUnsafe(
    head.length + 12 + Buffer.byteLength(walletId, 'utf8') + Buffer.byteLength(scheme, 'utf8') + kind.length,
  );
  out.set(head, 0);
  let offset = head.length;
  for (const field of [walletId, scheme, kind]) {
    const written = out.write(field, offset + 4, 'utf8');
    out.writeUInt32BE(written, offset);
    offset += 4 + written;
  }
  return out;
}

function encodeFields(fields: readonly string[]): Uint8Array {
  let length = 0;
  for (const field of fields) length += 4 + Buffer.byteLength(field, 'utf8');
  const out = Buffer.alloc(length);
  let offset = 0;
  for (const field of fields) {
    const written = out.write(field, offset + 4, 'utf8');
    out.writeUInt32BE(written, offset);
    offset += 4 + written;
  }
  return out;
}

const SHARE_DATA_HEAD = encodeFields([AAD_VERSION, 'data', 'share']);
const SHARE_KEY_HEAD = encodeFields([AAD_VERSION, 'key', 'share']);

const keyIds = new WeakMap<Uint8Array, string>();

/**
 * The id of a master key: the first 64 bits of HMAC-SHA256(key, "wcs-enclave-master-key-id"), hex. It names the
 * key in rows, logs and the admin API and reveals nothing about it. An operator can compute it from a key in hex
 * with openssl (docs/operations.md, "Rotating the master key").
 */
export function masterKeyId(key: Uint8Array): string {
  checkKey(key, 'master key');
  let id = keyIds.get(key);
  if (id === undefined) {
    id = createHmac('sha256', key).update(KEY_ID_LABEL).digest('hex').slice(0, KEY_ID_LENGTH);
    keyIds.set(key, id);
  }
  return id;
}

/** A ring of `keys` (ids computed here) sealing with `sealWith` (default: the first key's id). */
export function createKeyRing(keys: readonly Uint8Array[], sealWith?: string): MasterKeyRing {
  const byId = new Map<string, Uint8Array>();
  for (const key of keys) byId.set(masterKeyId(key), key);
  const seal = sealWith ?? masterKeyId(keys[0]!);
  if (!byId.has(seal)) throw new Error(`the key ring does not hold the sealing key ${seal}`);
  return { keys: byId, sealWith: seal };
}

function checkKey(key: Uint8Array, name: string): void {
  if (key.length !== KEY_BYTES) throw new Error(`${name} must be ${KEY_BYTES} bytes`);
}

/** The key that seals new records, with its id. */
function sealingKey(keys: MasterKeys): { id: string; key: Uint8Array } {
  if (keys instanceof Uint8Array) return { id: masterKeyId(keys), key: keys };
  const key = keys.keys.get(keys.sealWith);
  if (!key) throw new Error(`the key ring does not hold the sealing key ${keys.sealWith}`);
  return { id: keys.sealWith, key };
}

/** The keys that may open a record wrapped by `keyId`: that key, or every key for an unlabeled record. */
function openingKeys(keys: MasterKeys, keyId: string): Uint8Array[] {
  if (keyId === UNLABELED_KEY_ID) return keys instanceof Uint8Array ? [keys] : [...keys.keys.values()];
  const key = keys instanceof Uint8Array ? (masterKeyId(keys) === keyId ? keys : undefined) : keys.keys.get(keyId);
  if (!key) {
    const held = keys instanceof Uint8Array ? masterKeyId(keys) : [...keys.keys.keys()].join(', ');
    throw new Error(
      `the record is wrapped by master key ${keyId}, which this enclave does not hold (it holds ${held})`,
    );
  }
  return [key];
}

/**
 * sodium-native's type declarations ask for Buffers; the binding reads any Uint8Array (checked in
 * key-store.test.ts through the records it opens), so views are passed without a copy.
 */
function nb(bytes: Uint8Array): Buffer {
  return bytes as Buffer;
}

/** Fresh random bytes from libsodium's generator, in an array of their own (not a view on a shared pool). */
function randomBytes(length: number): Uint8Array {
  const out = new Uint8Array(length);
  sodium.randombytes_buf(nb(out));
  return out;
}

/** XChaCha20-Poly1305 (RFC draft-irtf-cfrg-xchacha, libsodium's IETF construction): ciphertext || tag. */
function xchachaEncrypt(key: Uint8Array, nonce: Uint8Array, aad: Uint8Array, plaintext: Uint8Array): Uint8Array {
  const out = new Uint8Array(plaintext.length + TAG_BYTES);
  sodium.crypto_aead_xchacha20poly1305_ietf_encrypt(nb(out), nb(plaintext), nb(aad), null, nb(nonce), nb(key));
  return out;
}

/** Opens XChaCha20-Poly1305 ciphertext || tag; throws when the tag does not verify (nothing is written then). */
function xchachaDecrypt(key: Uint8Array, nonce: Uint8Array, aad: Uint8Array, sealed: Uint8Array): Uint8Array {
  if (sealed.length < TAG_BYTES) throw new Error('sealed data is shorter than its tag');
  if (nonce.length !== XNONCE_BYTES) throw new Error('an XChaCha20-Poly1305 nonce is 24 bytes');
  const out = new Uint8Array(sealed.length - TAG_BYTES);
  sodium.crypto_aead_xchacha20poly1305_ietf_decrypt(nb(out), null, nb(sealed), nb(aad), nb(nonce), nb(key));
  return out;
}

/**
 * AES-256-GCM decryption of ciphertext || tag (no associated data when `aad` is undefined); throws when the tag
 * does not verify. The caller owns the returned plaintext and must wipe it after use.
 */
export function gcmDecrypt(
  key: Uint8Array,
  iv: Uint8Array,
  aad: Uint8Array | undefined,
  sealed: Uint8Array,
): Uint8Array {
  if (sealed.length < TAG_BYTES) throw new Error('sealed data is shorter than its tag');
  const decipher = createDecipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
  if (aad) decipher.setAAD(aad);
  decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
  const body = decipher.update(sealed.subarray(0, sealed.length - TAG_BYTES));
  // final() verifies the tag; nothing decrypted is returned unless it passes.
  try {
    const tail = decipher.final();
    const out = new Uint8Array(body.length + tail.length);
    out.set(body, 0);
    out.set(tail, body.length);
    return out;
  } finally {
    body.fill(0);
  }
}

/**
 * AES-256-GCM encryption: ciphertext || tag. Records are no longer sealed with it; tests use it to build records
 * in the format earlier versions wrote.
 */
export function gcmEncrypt(key: Uint8Array, iv: Uint8Array, aad: Uint8Array, plaintext: Uint8Array): Uint8Array {
  const cipher = createCipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
  cipher.setAAD(aad);
  const body = cipher.update(plaintext);
  const tail = cipher.final();
  const out = new Uint8Array(body.length + tail.length + TAG_BYTES);
  out.set(body, 0);
  out.set(tail, body.length);
  out.set(cipher.getAuthTag(), body.length + tail.length);
  return out;
}

function decrypt(cipher: Cipher, key: Uint8Array, nonce: Uint8Array, aad: Uint8Array, sealed: Uint8Array) {
  if (cipher === XCHACHA20_POLY1305) return xchachaDecrypt(key, nonce, aad, sealed);
  if (cipher === AES_256_GCM) return gcmDecrypt(key, nonce, aad, sealed);
  throw new Error(`unknown cipher ${String(cipher)} in a sealed record`);
}

/** Opens the wrap layer: the data key (the caller wipes it). */
function unwrapDataKey(keys: MasterKeys, context: SealContext, wrapped: WrappedDataKey): Uint8Array {
  const aad = encodeAad('key', context);
  const candidates = openingKeys(keys, wrapped.keyId);
  for (let i = 0; ; i++) {
    try {
      return decrypt(wrapped.wrapCipher, candidates[i]!, wrapped.dekIv, aad, wrapped.wrappedKey);
    } catch (error) {
      if (i + 1 >= candidates.length) throw error;
    }
  }
}

/** Wraps a data key under the ring's sealing key with XChaCha20-Poly1305 and a fresh nonce. */
function wrapDataKey(keys: MasterKeys, context: SealContext, dataKey: Uint8Array): WrappedDataKey {
  const { id, key } = sealingKey(keys);
  const dekIv = randomBytes(XNONCE_BYTES);
  return {
    keyId: id,
    wrapCipher: XCHACHA20_POLY1305,
    dekIv,
    wrappedKey: xchachaEncrypt(key, dekIv, encodeAad('key', context), dataKey),
  };
}

/**
 * Seals `plaintext` for `context` under a fresh data key wrapped by the sealing master key (XChaCha20-Poly1305 in
 * both layers). The data key is wiped.
 */
export function seal(keys: MasterKeys, context: SealContext, plaintext: Uint8Array): SealedBlob {
  const dataKey = randomBytes(KEY_BYTES);
  try {
    const iv = randomBytes(XNONCE_BYTES);
    const ciphertext = xchachaEncrypt(dataKey, iv, encodeAad('data', context), plaintext);
    return { ...wrapDataKey(keys, context, dataKey), dataCipher: XCHACHA20_POLY1305, iv, ciphertext };
  } finally {
    dataKey.fill(0);
  }
}

/**
 * Opens a sealed record with the master key that wrapped it. Throws if that key is not held, or if the context or
 * any byte of the record is wrong (tag). The caller owns the returned plaintext and must wipe it after use.
 */
export function unseal(keys: MasterKeys, context: SealContext, sealed: SealedBlob): Uint8Array {
  const dataKey = unwrapDataKey(keys, context, sealed);
  try {
    return decrypt(sealed.dataCipher, dataKey, sealed.iv, encodeAad('data', context), sealed.ciphertext);
  } finally {
    dataKey.fill(0);
  }
}

/**
 * Re-wraps a record's data key under the ring's sealing key (XChaCha20-Poly1305, fresh nonce), opening it with the
 * key that wrapped it. The data layer (cipher, nonce, ciphertext) is not touched. Throws if the record's key is
 * not held or does not open it.
 */
export function rewrap(keys: MasterKeys, context: SealContext, wrapped: WrappedDataKey): WrappedDataKey {
  const dataKey = unwrapDataKey(keys, context, wrapped);
  try {
    if (dataKey.length !== KEY_BYTES) throw new Error('a wrapped data key is not 32 bytes');
    return wrapDataKey(keys, context, dataKey);
  } finally {
    dataKey.fill(0);
  }
}

/**
 * The id of the master key that opens an unlabeled record (earlier versions), or undefined when none of `keys`
 * does. Nothing decrypted leaves.
 */
export function findOpeningKey(keys: MasterKeys, context: SealContext, sealed: SealedBlob): string | undefined {
  for (const key of keys instanceof Uint8Array ? [keys] : keys.keys.values()) {
    try {
      unseal(key, context, { ...sealed, keyId: UNLABELED_KEY_ID }).fill(0);
      return masterKeyId(key);
    } catch {
      // not this key
    }
  }
  return undefined;
}

const BYTE_FIELDS = ['dekIv', 'wrappedKey', 'iv', 'ciphertext'] as const;

/**
 * Packs sealed records into one array. Per record: one byte holding the wrap cipher (high nibble) and the data
 * cipher (low nibble), then the key id and each byte field as a 2-byte big-endian length and its bytes.
 * Posting one typed array to a worker costs a fraction of posting several per record (each typed array becomes its
 * own ArrayBuffer on the other side), and the signing hot path posts two records per signature.
 */
export function packSealed(blobs: readonly SealedBlob[]): Uint8Array {
  let length = 0;
  for (const blob of blobs) {
    length += 1 + 2 + blob.keyId.length;
    for (const field of BYTE_FIELDS) length += 2 + blob[field].length;
  }
  const out = new Uint8Array(length);
  let offset = 0;
  const put = (bytes: Uint8Array): void => {
    if (bytes.length > 0xffff) throw new RangeError('sealed field too long to pack');
    out[offset] = bytes.length >>> 8;
    out[offset + 1] = bytes.length & 0xff;
    out.set(bytes, offset + 2);
    offset += 2 + bytes.length;
  };
  for (const blob of blobs) {
    out[offset++] = (blob.wrapCipher << 4) | blob.dataCipher;
    put(Buffer.from(blob.keyId, 'latin1'));
    for (const field of BYTE_FIELDS) put(blob[field]);
  }
  return out;
}

/** Reverses packSealed. The byte fields are views on `packed` (no copies); throws on a truncated array. */
export function unpackSealed(packed: Uint8Array): SealedBlob[] {
  const blobs: SealedBlob[] = [];
  let offset = 0;
  const take = (): Uint8Array => {
    if (offset + 2 > packed.length) throw new Error('packed sealed records are truncated');
    const length = (packed[offset]! << 8) | packed[offset + 1]!;
    const start = offset + 2;
    offset = start + length;
    if (offset > packed.length) throw new Error('packed sealed records are truncated');
    return packed.subarray(start, offset);
  };
  while (offset < packed.length) {
    const ciphers = packed[offset++]!;
    const keyIdBytes = take();
    blobs.push({
      wrapCipher: (ciphers >>> 4) as Cipher,
      dataCipher: (ciphers & 0x0f) as Cipher,
      keyId: Buffer.from(keyIdBytes.buffer, keyIdBytes.byteOffset, keyIdBytes.length).toString('latin1'),
      dekIv: take(),
      wrappedKey: take(),
      iv: take(),
      ciphertext: take(),
    });
  }
  return blobs;
}
