import { ChainInputError } from '../chain-input-error.ts';
import { describeType } from '../describe-type.ts';
import { USDC_DECIMALS } from './lending-protocol.ts';

/**
 * The largest amount taken, in base units: 2^128 − 1. Aave v3 keeps reserve amounts in uint128 (a larger one
 * reverts in its SafeCast), and the bound keeps every explicit amount far from the 2^256 − 1 that `withdraw` reads
 * as "everything".
 */
export const MAX_USDC_BASE_UNITS = 2n ** 128n - 1n;
// 2^128 − 1 base units is a 33-digit number of whole USDC: longer integer parts are refused before any arithmetic.
const MAX_INTEGER_DIGITS = 33;

const AMOUNT = /^(0|[1-9][0-9]*)(?:\.([0-9]+))?$/;

/** Why `value` is no decimal amount, in a partner's words; undefined when it has the right form. */
function formProblem(value: string, field: string): string | undefined {
  if (value === '') return `${field} must not be empty`;
  if (/\s/.test(value)) return `${field} must not contain spaces`;
  if (value.startsWith('-')) return `${field} must be positive`;
  if (value.startsWith('+')) return `${field} takes no '+' sign`;
  if (/[eE]/.test(value) && /^[0-9.]+[eE][-+]?[0-9]+$/.test(value)) {
    return `${field} must be written out in full, without an exponent`;
  }
  if (/^[0-9]*\.[0-9]*$/.test(value) && (value.startsWith('.') || value.endsWith('.'))) {
    return `${field} needs digits on both sides of the decimal point`;
  }
  if (/^0[0-9]/.test(value)) return `${field} must not have leading zeros`;
  if (!AMOUNT.test(value)) return `${field} must be a decimal number of USDC such as "1.5" or "0.000001"`;
  return undefined;
}

/**
 * Parses an amount of USDC written as a positive decimal string with at most six decimal places (`"1"`, `"0.5"`,
 * `"0.000001"`, `"2.500000"`) into base units (10^-6 USDC), exactly: digits only, never a floating-point number.
 * Refused, with a `ChainInputError` naming `field` and the reason: anything not a string, zero, negative amounts,
 * a `+` sign, seven or more decimal places, exponents, spaces, leading zeros, a bare decimal point, and amounts
 * above `MAX_USDC_BASE_UNITS`. (`all`, for a withdrawal, is the caller's to recognise before calling this.)
 */
export function parseUsdcAmount(value: unknown, field: string): bigint {
  if (typeof value !== 'string') {
    throw new ChainInputError(`${field} must be a decimal string such as "1.5", got ${describeType(value)}`, field);
  }
  const problem = formProblem(value, field);
  if (problem !== undefined) throw new ChainInputError(problem, field);
  const [, whole, fraction = ''] = AMOUNT.exec(value)!;
  if (fraction.length > USDC_DECIMALS) {
    throw new ChainInputError(
      `${field} has more than ${USDC_DECIMALS} decimal places (USDC has ${USDC_DECIMALS})`,
      field,
    );
  }
  if (whole!.length > MAX_INTEGER_DIGITS) throw new ChainInputError(`${field} is too large`, field);
  const baseUnits = BigInt(whole! + fraction.padEnd(USDC_DECIMALS, '0'));
  if (baseUnits === 0n) throw new ChainInputError(`${field} must be greater than zero`, field);
  if (baseUnits > MAX_USDC_BASE_UNITS) throw new ChainInputError(`${field} is too large`, field);
  return baseUnits;
}
