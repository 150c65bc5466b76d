import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ChainInputError } from '../chain-input-error.ts';
import { parseU64Amount } from './parse-u64-amount.ts';

describe('parseU64Amount', () => {
  it('reads positive integers up to 2^64 - 1', () => {
    assert.equal(parseU64Amount('1', 'value'), 1n);
    assert.equal(parseU64Amount('18446744073709551615', 'value'), 2n ** 64n - 1n);
  });

  it('refuses everything else, naming the field', () => {
    for (const bad of [
      '0',
      '-1',
      '+1',
      '01',
      '1.0',
      '1e3',
      ' 1',
      '',
      '18446744073709551616',
      '9'.repeat(30),
      1,
      1n,
      null,
    ]) {
      assert.throws(
        () => parseU64Amount(bad, 'value'),
        (error) => error instanceof ChainInputError && error.field === 'value',
        String(bad),
      );
    }
  });
});
