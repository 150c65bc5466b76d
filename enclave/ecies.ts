/**
 * ECIES-P256-AES256-SHA256, the share migration envelope of the spec ("Share migration"), for crypto workers:
 * the sender makes an ephemeral P-256 key pair, does ECDH with the enclave's public key, takes SHA-256 of the
 * shared secret as an AES-256 key and encrypts with AES-256-GCM under a random 12-byte IV, sending
 * `base64(IV ‖ ciphertext ‖ tag)` with its ephemeral public key. Here we undo that with the enclave's private key.
 *
 * Every failure is an INVALID_PAYLOAD whose message names the problem and never echoes the payload.
 */
import { createECDH, createHash, createPublicKey, type KeyObject } from 'node:crypto';
import { decodeBase64Strict } from './base64.ts';
import { gcmDecrypt, NONCE_BYTES, TAG_BYTES } from './envelope.ts';
import { invalidPayload } from './errors.ts';
import { MIGRATION_ALGORITHM } from './protocol.ts';

/** The envelope's binary parts, decoded and checked. */
export interface EciesEnvelope {
  /** The sender's ephemeral P-256 public key as a SEC1 point (65 bytes uncompressed or 33 compressed). */
  ephemeral: Uint8Array;
  /** IV (12) ‖ ciphertext ‖ tag (16). */
  encryptedData: Uint8Array;
}

const HEX_POINT = /^(?:0x)?([0-9a-fA-F]{130}|[0-9a-fA-F]{66})$/;

/** True for the length and prefix of a SEC1 P-256 point: 04‖X‖Y (65 bytes) or 02/03‖X (33 bytes). */
function isSec1Shape(bytes: Uint8Array): boolean {
  return (
    (bytes.length === 65 && bytes[0] === 0x04) || (bytes.length === 33 && (bytes[0] === 0x02 || bytes[0] === 0x03))
  );
}

/** The uncompressed SEC1 point of an SPKI public key object, if it is a P-256 key. */
function pointOfSpki(key: KeyObject): Uint8Array {
  if (key.asymmetricKeyType !== 'ec' || key.asymmetricKeyDetails?.namedCurve !== 'prime256v1') {
    throw invalidPayload('ephemeral is not a P-256 public key');
  }
  const { x, y } = key.export({ format: 'jwk' });
  const point = Buffer.concat([Buffer.of(0x04), Buffer.from(x ?? '', 'base64url'), Buffer.from(y ?? '', 'base64url')]);
  if (point.length !== 65) throw invalidPayload('ephemeral is not a P-256 public key');
  return point;
}

/**
 * Decodes the sender's ephemeral public key. Accepted: hex (optional 0x) or base64 of a SEC1 point, an SPKI PEM,
 * or base64 of SPKI DER. Whether the point is on the curve is checked by the ECDH step.
 */
export function decodeEphemeralKey(value: unknown): Uint8Array {
  if (typeof value !== 'string' || value.length === 0 || value.length > 1024) {
    throw invalidPayload(
      'ephemeral must be a P-256 public key (hex or base64 SEC1 point, SPKI PEM or base64 SPKI DER)',
    );
  }
  if (value.includes('-----BEGIN')) {
    let key: KeyObject;
    try {
      key = createPublicKey({ key: value, format: 'pem' });
    } catch {
      throw invalidPayload('ephemeral is not a readable SPKI PEM public key');
    }
    return pointOfSpki(key);
  }
  const hex = HEX_POINT.exec(value);
  if (hex) {
    const point = Buffer.from(hex[1]!, 'hex');
    if (isSec1Shape(point)) return point;
    throw invalidPayload('ephemeral is not a SEC1 point');
  }
  const bytes = decodeBase64Strict(value);
  if (!bytes) throw invalidPayload('ephemeral is neither hex, strict base64 nor an SPKI PEM');
  if (isSec1Shape(bytes)) return bytes;
  let key: KeyObject;
  try {
    key = createPublicKey({ key: Buffer.from(bytes), format: 'der', type: 'spki' });
  } catch {
    throw invalidPayload('ephemeral is neither a SEC1 point nor SPKI DER');
  }
  return pointOfSpki(key);
}

/**
 * Parses and checks the envelope `{encryptedData, keyId, ephemeral, algorithm}` (the JSON string the partner
 * sends as `encryptedPayload`): the algorithm must be ECIES-P256-AES256-SHA256 and `keyId` this enclave's
 * ECIES key fingerprint.
 */
export function parseEciesEnvelope(payload: string, keyFingerprint: string): EciesEnvelope {
  let value: unknown;
  try {
    value = JSON.parse(payload);
  } catch {
    throw invalidPayload('encryptedPayload is not JSON');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw invalidPayload('encryptedPayload is not a JSON object');
  }
  const { encryptedData, keyId, ephemeral, algorithm } = value as Record<string, unknown>;
  if (algorithm !== MIGRATION_ALGORITHM) throw invalidPayload(`algorithm must be ${MIGRATION_ALGORITHM}`);
  if (keyId !== keyFingerprint) {
    throw invalidPayload("keyId is not this enclave's ECIES key fingerprint (see GET /v1/enclave/public-key)");
  }
  const data = typeof encryptedData === 'string' ? decodeBase64Strict(encryptedData) : undefined;
  if (!data) throw invalidPayload('encryptedData must be strict base64');
  if (data.length <= NONCE_BYTES + TAG_BYTES)
    throw invalidPayload('encryptedData is too short for IV, ciphertext and tag');
  return { ephemeral: decodeEphemeralKey(ephemeral), encryptedData: data };
}

/**
 * Decrypts an envelope with the enclave's P-256 private key (32 bytes). Returns the plaintext, which the caller
 * wipes; throws INVALID_PAYLOAD when the ephemeral point is invalid or the ciphertext does not authenticate.
 */
export function eciesDecrypt(privateKey: Uint8Array, envelope: EciesEnvelope): Uint8Array {
  // Step 1: ECDH(enclave private key, sender's ephemeral public key). The shared secret is the x-coordinate of
  // the shared point, 32 bytes (SEC 1 §3.3.1). OpenSSL refuses points that are not on the curve.
  const ecdh = createECDH('prime256v1');
  ecdh.setPrivateKey(privateKey);
  let sharedSecret: Buffer;
  try {
    sharedSecret = ecdh.computeSecret(envelope.ephemeral);
  } catch {
    throw invalidPayload('ephemeral is not a valid P-256 point');
  }
  // Step 2: the AES-256 key is SHA-256 of the shared secret.
  const aesKey = createHash('sha256').update(sharedSecret).digest();
  sharedSecret.fill(0);
  // Step 3: encryptedData is IV (12 bytes) ‖ ciphertext ‖ GCM tag (16 bytes); AES-256-GCM, no associated data.
  const { encryptedData } = envelope;
  try {
    return gcmDecrypt(aesKey, encryptedData.subarray(0, NONCE_BYTES), undefined, encryptedData.subarray(NONCE_BYTES));
  } catch {
    throw invalidPayload(
      "encryptedData does not decrypt with this enclave's key (wrong key, or tampered or truncated)",
    );
  } finally {
    aesKey.fill(0);
  }
}
