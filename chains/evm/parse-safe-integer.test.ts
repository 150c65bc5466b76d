import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseSafeInteger } from './parse-safe-integer.ts';

describe('parseSafeInteger', () => {
  it('returns integers from min to 2^53 - 1', () => {
    assert.equal(parseSafeInteger(0, 'nonce', 0), 0);
    assert.equal(parseSafeInteger(1, 'chainId', 1), 1);
    assert.equal(parseSafeInteger(Number.MAX_SAFE_INTEGER, 'chainId', 1), Number.MAX_SAFE_INTEGER);
  });

  it('refuses values below min, fractions, unsafe and non-finite numbers', () => {
    for (const value of [0, -1, 1.5, 2 ** 53, 1e300, Number.NaN, Number.POSITIVE_INFINITY]) {
      assert.throws(() => parseSafeInteger(value, 'chainId', 1), {
        name: 'ChainInputError',
        field: 'chainId',
        message: /chainId must be an integer from 1 to 2\^53 - 1, got/,
      });
    }
  });

  it('refuses strings and other types', () => {
    for (const value of ['1', '0x1', 1n, null, undefined, [1], {}]) {
      assert.throws(() => parseSafeInteger(value, 'nonce', 0), {
        name: 'ChainInputError',
        field: 'nonce',
        message: /nonce must be an integer number, got/,
      });
    }
  });
});
