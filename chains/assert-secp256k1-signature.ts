import { ChainInputError } from './chain-input-error.ts';
import { isPlainObject } from './is-plain-object.ts';
import type { Secp256k1Signature } from './signing-types.ts';

/** The secp256k1 group order n, big-endian. */
const N = Buffer.from('fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141', 'hex');
/** n/2 rounded down, big-endian: a low-s signature has s ≤ n/2. */
const HALF_N = Buffer.from('7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0', 'hex');
const ZERO = Buffer.alloc(32);

/**
 * Checks that `signature` is a well-formed `Secp256k1Signature`: `rs` 64 bytes with r and s in 1..n−1 and s at
 * most n/2 (low-s, as EIP-2 and the Cosmos SDK require), `recovery` 0 or 1. Throws a `ChainInputError` naming
 * `rs` or `recovery` otherwise. It does not check whose key made it.
 *
 * The ranges are checked by comparing the 32-byte big-endian halves with the constants (a big-endian byte order
 * is the numeric order), not by parsing them into bigints: this runs on every secp256k1 signature the API answers.
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
  const bytes = Buffer.from(rs.buffer, rs.byteOffset, 64);
  const r = bytes.subarray(0, 32);
  const s = bytes.subarray(32, 64);
  // SEC 1 §4.1.4 step 1: r and s must lie in [1, n − 1].
  if (r.equals(ZERO) || s.equals(ZERO) || Buffer.compare(r, N) >= 0 || Buffer.compare(s, N) >= 0) {
    throw new ChainInputError('signature r and s must each be between 1 and the secp256k1 group order − 1', 'rs');
  }
  if (Buffer.compare(s, HALF_N) > 0) {
    throw new ChainInputError('signature s must be in the lower half of the secp256k1 group order (low-s)', 'rs');
  }
}
