import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseEvmQuantity } from './parse-evm-quantity.ts';

const MAX = 2n ** 256n - 1n;

describe('parseEvmQuantity', () => {
  it('parses decimal strings from 0 to 2^256 - 1 exactly', () => {
    assert.equal(parseEvmQuantity('0', 'value'), 0n);
    assert.equal(parseEvmQuantity('21000', 'gasLimit'), 21000n);
    assert.equal(parseEvmQuantity('9007199254740993', 'value'), 9007199254740993n);
    assert.equal(parseEvmQuantity(MAX.toString(), 'value'), MAX);
  });

  it('refuses 2^256 and longer numbers', () => {
    assert.throws(() => parseEvmQuantity((MAX + 1n).toString(), 'value'), {
      name: 'ChainInputError',
      field: 'value',
      message: 'value must be at most 2^256 - 1',
    });
    assert.throws(() => parseEvmQuantity('9'.repeat(79), 'value'), { name: 'ChainInputError', field: 'value' });
    assert.throws(() => parseEvmQuantity('1'.repeat(1_000_000), 'value'), { name: 'ChainInputError' });
  });

  it('refuses signs, hex, decimals, exponents, whitespace and leading zeros', () => {
    for (const value of ['-1', '+1', '0x10', '1.0', '1e18', ' 1', '1 ', '', '01', '00', '1_000', '١']) {
      assert.throws(() => parseEvmQuantity(value, 'maxFeePerGas'), {
        name: 'ChainInputError',
        field: 'maxFeePerGas',
        message: /must be a non-negative decimal integer string/,
      });
    }
  });

  it('refuses numbers and other types', () => {
    for (const value of [1, 1n, null, undefined, ['1'], { value: '1' }, true]) {
      assert.throws(() => parseEvmQuantity(value, 'value'), {
        name: 'ChainInputError',
        message: /value must be a decimal integer string, got/,
      });
    }
  });
});
