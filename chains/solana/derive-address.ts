import bs58 from 'bs58';
import { parseEd25519PublicKey } from '../parse-ed25519-public-key.ts';

/**
 * Derives the Solana address (Base58 of the 32 key bytes) of an ed25519 public key given as 64 hex
 * characters (no `0x`). Throws an `Error` on malformed input.
 */
export function deriveSolanaAddress(publicKeyHex: string): string {
  return bs58.encode(parseEd25519PublicKey(publicKeyHex));
}
