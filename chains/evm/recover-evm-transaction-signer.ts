import { bytesToHex } from '@noble/hashes/utils.js';
import secp256k1 from 'secp256k1';
import { keccak256 } from '../keccak-256.ts';
import type { Secp256k1Signature } from '../signing-types.ts';
import { checksumEvmAddress } from './checksum-address.ts';

/**
 * The EVM address whose key made `signature` over `digest` (a transaction's signing hash): what a payment checks
 * against its wallet's address before broadcasting (the spec's `signer_verify` stage). Uses libsecp256k1's
 * recovery (the native bindings the enclave signs with), several times faster than a JavaScript one.
 * Throws an `Error` when no key can be recovered.
 */
export function recoverEvmTransactionSigner(digest: Uint8Array, signature: Secp256k1Signature): string {
  const publicKey = secp256k1.ecdsaRecover(signature.rs, signature.recovery, digest, false);
  return checksumEvmAddress(`0x${bytesToHex(keccak256(publicKey.subarray(1)).subarray(12))}`);
}
