import { ChainInputError } from '../chain-input-error.ts';
import { describeType } from '../describe-type.ts';

const U64_MAX = 2n ** 64n - 1n;

/**
 * Parses a transfer amount in the smallest unit (lamports, token base units): a decimal string of a positive
 * integer without sign, leading zeros or fraction, at most 2^64 − 1 (Solana amounts are u64). Throws a
 * `ChainInputError` naming `field`.
 */
export function parseU64Amount(value: unknown, field: string): bigint {
  if (typeof value !== 'string') {
    throw new ChainInputError(
      `${field} must be a string holding a positive integer, got ${describeType(value)}`,
      field,
    );
  }
  if (!/^[1-9][0-9]{0,19}$/.test(value)) {
    throw new ChainInputError(
      `${field} must be a positive integer in the smallest unit, as decimal digits without sign, fraction or leading zeros`,
      field,
    );
  }
  const amount = BigInt(value);
  if (amount > U64_MAX) throw new ChainInputError(`${field} is larger than 2^64 - 1, the most Solana can move`, field);
  return amount;
}
