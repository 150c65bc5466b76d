import { PublicKey } from '@solana/web3.js';
import bs58 from 'bs58';
import { ChainInputError } from '../chain-input-error.ts';
import { describeType } from '../describe-type.ts';

/**
 * Parses a Solana address (account public key, mint): Base58 of exactly 32 bytes, in canonical form. On- and
 * off-curve keys (program-derived addresses) are both accepted. Throws a `ChainInputError` naming `field`.
 */
export function parseSolanaAddress(value: unknown, field: string): PublicKey {
  if (typeof value !== 'string') {
    throw new ChainInputError(`${field} must be a Base58 Solana address, got ${describeType(value)}`, field);
  }
  // Base58 of 32 bytes takes 32 to 44 characters; anything else is refused before decoding.
  if (value.length < 32 || value.length > 44) {
    throw new ChainInputError(`${field} is not a Solana address (Base58 of 32 bytes)`, field);
  }
  let bytes: Uint8Array;
  try {
    bytes = bs58.decode(value);
  } catch {
    throw new ChainInputError(`${field} is not a Solana address: it is not Base58`, field);
  }
  if (bytes.length !== 32 || bs58.encode(bytes) !== value) {
    throw new ChainInputError(`${field} is not a Solana address (Base58 of 32 bytes)`, field);
  }
  return new PublicKey(bytes);
}
