import { secp256k1 } from '@noble/curves/secp256k1.js';
import { ChainInputError } from './chain-input-error.ts';
import { isPlainObject } from './is-plain-object.ts';
import type { Secp256k1Signature } from './signing-types.ts';

/**
 * Checks that `signature` is a well-formed `Secp256k1Signature`: `rs` 64 bytes with r and s in 1..n−1 and s at
 * most n/2 (low-s, as EIP-2 and the Cosmos SDK require), `recovery` 0 or 1. Throws a `ChainInputError` naming
 * `rs` or `recovery` otherwise. It does not check whose key made it.
 */
export function assertSecp256k1Signature(signature: unknown): asserts signature is Secp256k1Signature {
  if (!isPlainObject(signature)) {
    throw new ChainInputError('signature must be an object with rs (64 bytes) and recovery (0 or 1)');
  }
  const { rs, recovery } = signature;
  if (!(rs instanceof Uint8Array) || rs.length !== 64) {
    throw new ChainInputError('signature rs must be 64 bytes (r‖s)', 'rs');
  }
  if (recovery !== 0 && recovery !== 1) {
    throw new ChainInputError('signature recovery must be 0 or 1', 'recovery');
  }
  let parsed: ReturnType<typeof secp256k1.Signature.fromBytes>;
  try {
    // SEC 1 §4.1.4 step 1: r and s must lie in [1, n − 1].
    parsed = secp256k1.Signature.fromBytes(rs, 'compact');
  } catch {
    throw new ChainInputError('signature r and s must each be between 1 and the secp256k1 group order − 1', 'rs');
  }
  if (parsed.hasHighS()) {
    throw new ChainInputError('signature s must be in the lower half of the secp256k1 group order (low-s)', 'rs');
  }
}
