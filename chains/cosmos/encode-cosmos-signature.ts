import { bytesToHex } from '@noble/hashes/utils.js';
import { assertSecp256k1Signature } from '../assert-secp256k1-signature.ts';
import type { Secp256k1Signature } from '../signing-types.ts';

/**
 * Encodes a secp256k1 signature in the Cosmos SDK wire format: 64 bytes r‖s with low s (no recovery byte),
 * as 128 hex characters without `0x`. Throws a `ChainInputError` for a malformed or high-s signature, which
 * the SDK's `VerifySignature` would reject.
 */
export function encodeCosmosSignature(sig: Secp256k1Signature): string {
  assertSecp256k1Signature(sig);
  return bytesToHex(sig.rs);
}
