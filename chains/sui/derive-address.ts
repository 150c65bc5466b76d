import { blake2b } from '@noble/hashes/blake2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { parseEd25519PublicKey } from '../parse-ed25519-public-key.ts';

// Sui signature scheme flag for ed25519.
const ED25519_FLAG = 0x00;

/**
 * Derives the Sui address (`0x` + 64 lowercase hex characters) of an ed25519 public key given as 64 hex
 * characters (no `0x`). Throws an `Error` on malformed input.
 */
export function deriveSuiAddress(publicKeyHex: string): string {
  const publicKey = parseEd25519PublicKey(publicKeyHex);
  // Sui: address = BLAKE2b-256(flag ‖ public key).
  const input = new Uint8Array(33);
  input[0] = ED25519_FLAG;
  input.set(publicKey, 1);
  return `0x${bytesToHex(blake2b(input, { dkLen: 32 }))}`;
}
