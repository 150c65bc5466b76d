import { toBech32 } from '@cosmjs/encoding';
import { ripemd160 } from '@noble/hashes/legacy.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { compressSecp256k1PublicKey } from '../compress-secp256k1-public-key.ts';
import { parseSecp256k1PublicKey } from '../parse-secp256k1-public-key.ts';
import { isValidCosmosPrefix } from './validate-prefix.ts';

/**
 * Derives the Bech32 Cosmos SDK account address of an uncompressed secp256k1 public key given as 130 hex
 * characters (`04‖X‖Y`, no `0x`), under `prefix` (default `cosmos`). Throws an `Error` on a malformed or
 * off-curve key, or on a prefix refused by `isValidCosmosPrefix`.
 */
export function deriveCosmosAddress(publicKeyHex: string, prefix = 'cosmos'): string {
  if (!isValidCosmosPrefix(prefix)) {
    throw new Error(
      'Cosmos address prefix must be 1-20 lowercase letters or digits starting with a letter (for example cosmos, osmo)',
    );
  }
  const compressed = compressSecp256k1PublicKey(parseSecp256k1PublicKey(publicKeyHex));
  // Cosmos SDK secp256k1 PubKey.Address(): RIPEMD-160(SHA-256(33-byte compressed key)), 20 bytes, Bech32.
  return toBech32(prefix, ripemd160(sha256(compressed)));
}
