import { bytesToHex } from '@noble/hashes/utils.js';
import { assertSecp256k1Signature } from '../assert-secp256k1-signature.ts';
import type { Secp256k1Signature } from '../signing-types.ts';

/**
 * Encodes a secp256k1 signature the way `personal_sign` and `eth_signTypedData_v4` return it: 65 bytes
 * r‖s‖v with v = 27 + recovery, as 130 hex characters without `0x`. Throws a `ChainInputError` for a
 * malformed or high-s signature.
 */
export function encodeEvmSignature(sig: Secp256k1Signature): string {
  assertSecp256k1Signature(sig);
  const bytes = new Uint8Array(65);
  bytes.set(sig.rs, 0);
  // Yellow Paper appendix F: v = 27 + the parity of R's y coordinate.
  bytes[64] = 27 + sig.recovery;
  return bytesToHex(bytes);
}
