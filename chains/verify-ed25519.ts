import { crypto_sign_verify_detached } from 'sodium-native';

/**
 * True when `signature` is a valid Ed25519 signature (RFC 8032, with libsodium's strict checks) of `message` under
 * the raw 32-byte `publicKey`. The enclave's own check after every signature uses it too.
 */
export function verifyEd25519(message: Uint8Array, signature: Uint8Array, publicKey: Uint8Array): boolean {
  if (signature.length !== 64 || publicKey.length !== 32) return false;
  const view = (bytes: Uint8Array) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return crypto_sign_verify_detached(view(signature), view(message), view(publicKey));
}
