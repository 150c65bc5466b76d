import { bytesToHex } from '@noble/hashes/utils.js';
import { keccak256 } from '../keccak-256.ts';
import { parseSecp256k1PublicKey } from '../parse-secp256k1-public-key.ts';
import { checksumEvmAddress } from './checksum-address.ts';

/**
 * Derives the EIP-55 checksummed EVM address (`0x…`, 42 characters) of an uncompressed secp256k1 public
 * key given as 130 hex characters (`04‖X‖Y`, no `0x`). Throws an `Error` on a malformed or off-curve key.
 */
export function deriveEvmAddress(publicKeyHex: string): string {
  const publicKey = parseSecp256k1PublicKey(publicKeyHex);
  // Yellow Paper: address = last 20 bytes of Keccak-256(X‖Y), the key without its 04 prefix.
  const hash = keccak256(publicKey.subarray(1));
  return checksumEvmAddress(`0x${bytesToHex(hash.subarray(12))}`);
}
