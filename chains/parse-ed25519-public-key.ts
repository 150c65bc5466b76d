import { decodeHex } from './decode-hex.ts';

const ED25519_PUBLIC_KEY_BYTES = 32;

/**
 * Decodes a raw ed25519 public key as the enclave returns it (64 hex characters, no `0x`) and returns the
 * 32 bytes. Only the format is checked: decompressing the point would cost ~0.1 ms per key, and the enclave
 * derives the key from its own secret, so a well-formed value is a real key.
 */
export function parseEd25519PublicKey(publicKeyHex: string): Uint8Array {
  return decodeHex(publicKeyHex, ED25519_PUBLIC_KEY_BYTES, 'ed25519 public key');
}
