/**
 * The enclave identity handshake, public half: what the enclave signs when a connection opens and how the client
 * checks it. Shared by the enclave (request-handler.ts builds the message) and the API side (client.ts verifies);
 * it holds no secret and imports nothing that does. The signing half runs in crypto workers (identity-key.ts).
 *
 * On every connection the client sends `hello` with a fresh random 32-byte challenge; the enclave answers its
 * Ed25519 public key, a fresh random 32-byte nonce of its own and a signature over
 *
 *     HELLO_CONTEXT ‖ 0x00 ‖ challenge (32) ‖ nonce (32) ‖ public key (32)
 *
 * - replay: the challenge is new for every connection, so a recorded answer never verifies again;
 * - reflection and cross-use: the context names the protocol, its version and the direction (the enclave proves
 *   itself to the API; nothing else is ever signed with this key), and the enclave's own nonce means no caller
 *   chooses the whole signed message;
 * - key substitution: the public key is inside the signed bytes and its fingerprint is what the API pins.
 * Fields after the context have fixed lengths, so no two inputs encode alike.
 */
import { createHash, createPublicKey, verify } from 'node:crypto';
import { decodeBase64Strict } from './base64.ts';
import type { EnclaveOps } from './protocol.ts';

/** Domain separation of handshake signatures. Changing it is a protocol version change. */
export const HELLO_CONTEXT = 'wcs-enclave-identity-v1 hello: enclave to api';
export const CHALLENGE_BYTES = 32;
export const NONCE_BYTES = 32;
export const IDENTITY_PUBLIC_KEY_BYTES = 32;
const SIGNATURE_BYTES = 64;
/** DER prefix of an Ed25519 SubjectPublicKeyInfo (RFC 8410): SEQUENCE { SEQUENCE { OID 1.3.101.112 }, BIT STRING }. */
const ED25519_SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

export type HelloResult = EnclaveOps['hello']['result'];

/** A verified enclave identity: the raw public key (base64) and its fingerprint. */
export interface EnclaveIdentity {
  publicKey: string;
  /** Hex SHA-256 of the key's SPKI DER, as the ECIES key's fingerprint is computed. */
  fingerprint: string;
}

/** The bytes the enclave signs in answer to `challenge`. */
export function helloMessage(challenge: Uint8Array, nonce: Uint8Array, publicKey: Uint8Array): Buffer {
  if (challenge.length !== CHALLENGE_BYTES || nonce.length !== NONCE_BYTES) {
    throw new RangeError(`challenge and nonce must be ${CHALLENGE_BYTES} bytes`);
  }
  if (publicKey.length !== IDENTITY_PUBLIC_KEY_BYTES) throw new RangeError('an Ed25519 public key is 32 bytes');
  return Buffer.concat([Buffer.from(`${HELLO_CONTEXT}\0`, 'utf8'), challenge, nonce, publicKey]);
}

function spki(publicKey: Uint8Array): Buffer {
  return Buffer.concat([ED25519_SPKI_PREFIX, publicKey]);
}

/** The fingerprint operators compare: hex SHA-256 of the SPKI DER of the raw 32-byte Ed25519 public key. */
export function identityFingerprint(publicKey: Uint8Array): string {
  if (publicKey.length !== IDENTITY_PUBLIC_KEY_BYTES) throw new RangeError('an Ed25519 public key is 32 bytes');
  return createHash('sha256').update(spki(publicKey)).digest('hex');
}

/** True for a well-formed fingerprint (64 lowercase hex characters). */
export function isFingerprint(value: string): boolean {
  return /^[0-9a-f]{64}$/.test(value);
}

/**
 * Checks the enclave's answer to `hello` against the challenge this client sent: shapes, lengths and the Ed25519
 * signature (node:crypto) over the message above. Returns the identity, or a problem naming what failed.
 */
export function verifyHello(
  challenge: Uint8Array,
  result: unknown,
): { ok: true; identity: EnclaveIdentity } | { ok: false; problem: string } {
  if (typeof result !== 'object' || result === null) return { ok: false, problem: 'the hello answer is not an object' };
  const { publicKey, nonce, signature } = result as Record<string, unknown>;
  const decode = (value: unknown, bytes: number): Uint8Array | undefined => {
    const decoded = typeof value === 'string' ? decodeBase64Strict(value) : undefined;
    return decoded?.length === bytes ? decoded : undefined;
  };
  const key = decode(publicKey, IDENTITY_PUBLIC_KEY_BYTES);
  const nonceBytes = decode(nonce, NONCE_BYTES);
  const signatureBytes = decode(signature, SIGNATURE_BYTES);
  if (!key || !nonceBytes || !signatureBytes) {
    return {
      ok: false,
      problem: 'the hello answer lacks a 32-byte public key, a 32-byte nonce or a 64-byte signature',
    };
  }
  let valid = false;
  try {
    const keyObject = createPublicKey({ key: spki(key), format: 'der', type: 'spki' });
    valid = verify(null, helloMessage(challenge, nonceBytes, key), keyObject, signatureBytes);
  } catch {
    valid = false;
  }
  if (!valid) return { ok: false, problem: 'the hello signature does not verify for this challenge' };
  return { ok: true, identity: { publicKey: publicKey as string, fingerprint: identityFingerprint(key) } };
}
