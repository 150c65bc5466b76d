import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { ChainInputError } from '../chain-input-error.ts';
import { MAX_USDC_BASE_UNITS, parseUsdcAmount } from './parse-usdc-amount.ts';

function refusal(value: unknown): string {
  try {
    parseUsdcAmount(value, 'amount');
  } catch (error) {
    assert.ok(error instanceof ChainInputError, `expected a ChainInputError, got ${String(error)}`);
    assert.equal(error.field, 'amount');
    assert.equal(error.httpStatus, 400);
    return error.message;
  }
  assert.fail(`${JSON.stringify(value)} was accepted`);
}

describe('parseUsdcAmount', () => {
  it('converts exactly, at the edges of six decimal places', () => {
    assert.equal(parseUsdcAmount('0.000001', 'amount'), 1n);
    assert.equal(parseUsdcAmount('1', 'amount'), 1_000_000n);
    assert.equal(parseUsdcAmount('1.5', 'amount'), 1_500_000n);
    assert.equal(parseUsdcAmount('2.500000', 'amount'), 2_500_000n, 'trailing zeros within six places');
    assert.equal(parseUsdcAmount('0.999999', 'amount'), 999_999n);
    assert.equal(parseUsdcAmount('123456789.123456', 'amount'), 123_456_789_123_456n);
    // Floating point would not survive these.
    assert.equal(parseUsdcAmount('0.1', 'amount') + parseUsdcAmount('0.2', 'amount'), parseUsdcAmount('0.3', 'amount'));
    assert.equal(parseUsdcAmount('9007199254740993.000001', 'amount'), 9_007_199_254_740_993_000_001n);
  });

  it('takes amounts up to 2^128 - 1 base units, and refuses one more', () => {
    const whole = MAX_USDC_BASE_UNITS / 1_000_000n;
    const fraction = (MAX_USDC_BASE_UNITS % 1_000_000n).toString().padStart(6, '0');
    assert.equal(parseUsdcAmount(`${whole}.${fraction}`, 'amount'), MAX_USDC_BASE_UNITS);
    const over = MAX_USDC_BASE_UNITS + 1n;
    assert.match(
      refusal(`${over / 1_000_000n}.${(over % 1_000_000n).toString().padStart(6, '0')}`),
      /amount is too large/,
    );
    assert.match(refusal('9'.repeat(1_000)), /amount is too large/);
  });

  it('refuses each bad form with its reason', () => {
    assert.match(refusal('1.0000001'), /more than 6 decimal places/);
    assert.match(refusal('0.0000001'), /more than 6 decimal places/);
    assert.match(refusal('1.0000000'), /more than 6 decimal places/, 'seven places even when zeros');
    assert.match(refusal('0'), /greater than zero/);
    assert.match(refusal('0.000000'), /greater than zero/);
    assert.match(refusal('-1'), /must be positive/);
    assert.match(refusal('-0.5'), /must be positive/);
    assert.match(refusal('+1'), /no '\+' sign/);
    assert.match(refusal('1e6'), /without an exponent/);
    assert.match(refusal('1.5E-3'), /without an exponent/);
    assert.match(refusal(' 1'), /spaces/);
    assert.match(refusal('1 '), /spaces/);
    assert.match(refusal('1\n'), /spaces/);
    assert.match(refusal(''), /must not be empty/);
    assert.match(refusal('.5'), /both sides of the decimal point/);
    assert.match(refusal('5.'), /both sides of the decimal point/);
    assert.match(refusal('01'), /leading zeros/);
    assert.match(refusal('00.5'), /leading zeros/);
    for (const value of ['1,5', '1.2.3', '0x10', 'all', 'NaN', 'Infinity', '１', '1_000', '½']) {
      assert.match(refusal(value), /must be a decimal number of USDC/, value);
    }
  });

  it('refuses anything that is not a string, naming its type', () => {
    assert.match(refusal(1.5), /got number/);
    assert.match(refusal(1n), /got bigint/);
    assert.match(refusal(null), /got null/);
    assert.match(refusal(undefined), /got undefined/);
    assert.match(refusal(['1']), /got array/);
    assert.match(refusal({ amount: '1' }), /got object/);
  });

  it('never throws anything but a ChainInputError, and accepts only digits with at most six places', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.stringMatching(/^[-+ .0-9eE]{0,12}$/)), (value) => {
        let parsed: bigint | undefined;
        try {
          parsed = parseUsdcAmount(value, 'amount');
        } catch (error) {
          assert.ok(error instanceof ChainInputError);
          return;
        }
        assert.match(value, /^(0|[1-9][0-9]*)(\.[0-9]{1,6})?$/);
        assert.ok(parsed > 0n);
      }),
      { numRuns: 2_000 },
    );
  });
});
