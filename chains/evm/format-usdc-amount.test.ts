import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { formatUsdcAmount } from './format-usdc-amount.ts';
import { MAX_USDC_BASE_UNITS, parseUsdcAmount } from './parse-usdc-amount.ts';

/** A decimal string parseUsdcAmount accepts: an integer part, then up to six places (trailing zeros allowed). */
const acceptedAmount = fc
  .tuple(fc.bigInt({ min: 0n, max: 10n ** 20n }), fc.stringMatching(/^[0-9]{0,6}$/))
  .filter(([whole, fraction]) => whole > 0n || /[1-9]/.test(fraction))
  .map(([whole, fraction]) => (fraction === '' ? `${whole}` : `${whole}.${fraction}`));

describe('formatUsdcAmount', () => {
  it('writes the canonical decimal', () => {
    assert.equal(formatUsdcAmount(0n), '0');
    assert.equal(formatUsdcAmount(1n), '0.000001');
    assert.equal(formatUsdcAmount(10n), '0.00001');
    assert.equal(formatUsdcAmount(1_000_000n), '1');
    assert.equal(formatUsdcAmount(1_500_000n), '1.5');
    assert.equal(formatUsdcAmount(250_500_000n), '250.5');
    assert.equal(formatUsdcAmount(123_456_789_123_456n), '123456789.123456');
  });

  it('refuses a negative amount', () => {
    assert.throws(() => formatUsdcAmount(-1n), RangeError);
  });

  it('round trip: base units → decimal → the same base units', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 1n, max: MAX_USDC_BASE_UNITS }), (units) => {
        const text = formatUsdcAmount(units);
        assert.doesNotMatch(text, /\.[0-9]*0$/, 'no trailing zero after the point');
        assert.equal(parseUsdcAmount(text, 'amount'), units);
      }),
      { numRuns: 5_000 },
    );
  });

  it('round trip: an accepted decimal → base units → the same number without its trailing zeros', () => {
    fc.assert(
      fc.property(acceptedAmount, (text) => {
        const canonical = text.includes('.') ? text.replace(/0+$/, '').replace(/\.$/, '') : text;
        assert.equal(formatUsdcAmount(parseUsdcAmount(text, 'amount')), canonical);
      }),
      { numRuns: 5_000 },
    );
  });

  it('a seventh decimal place never survives: refused, whatever the digits', () => {
    fc.assert(
      fc.property(acceptedAmount, fc.integer({ min: 0, max: 9 }), (text, digit) => {
        const seven = `${text.includes('.') ? text : `${text}.`}${'0'.repeat(6)}`.replace(
          /\.([0-9]{6})[0-9]*$/,
          `.$1${digit}`,
        );
        assert.throws(() => parseUsdcAmount(seven, 'amount'), /more than 6 decimal places/);
      }),
      { numRuns: 1_000 },
    );
  });
});
