import { ChainInputError } from '../chain-input-error.ts';
import { describeType } from '../describe-type.ts';

/**
 * Parses a JSON number that must be an integer from `min` to 2^53−1 (a chain ID or a nonce). Strings,
 * fractions and unsafe integers are refused. Throws a `ChainInputError` naming `field`.
 */
export function parseSafeInteger(value: unknown, field: string, min: number): number {
  if (typeof value !== 'number') {
    throw new ChainInputError(`${field} must be an integer number, got ${describeType(value)}`, field);
  }
  if (!Number.isSafeInteger(value) || value < min) {
    throw new ChainInputError(`${field} must be an integer from ${min} to 2^53 - 1, got ${value}`, field);
  }
  return value;
}
