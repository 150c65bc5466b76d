import { ChainInputError } from '../chain-input-error.ts';
import { describeType } from '../describe-type.ts';

const DECIMAL = /^(?:0|[1-9][0-9]*)$/;
const MAX_UINT256 = 2n ** 256n - 1n;
// 2^256 − 1 has 78 decimal digits: anything longer is refused before it is parsed.
const MAX_DIGITS = 78;

/**
 * Parses an EVM quantity sent as a decimal integer string (`"21000"`, no sign, no leading zeros, no exponent)
 * in 0..2^256−1, the range of an RLP-encoded transaction field. Numbers are refused: JSON numbers above
 * 2^53 lose digits before they arrive. Throws a `ChainInputError` naming `field`.
 */
export function parseEvmQuantity(value: unknown, field: string): bigint {
  if (typeof value !== 'string') {
    throw new ChainInputError(`${field} must be a decimal integer string, got ${describeType(value)}`, field);
  }
  if (value.length > MAX_DIGITS || !DECIMAL.test(value)) {
    throw new ChainInputError(
      `${field} must be a non-negative decimal integer string without leading zeros, up to 2^256 - 1`,
      field,
    );
  }
  const quantity = BigInt(value);
  if (quantity > MAX_UINT256) throw new ChainInputError(`${field} must be at most 2^256 - 1`, field);
  return quantity;
}
