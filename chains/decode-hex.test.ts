import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodeHex } from './decode-hex.ts';

describe('decodeHex', () => {
  it('decodes lowercase and uppercase hex of the expected length', () => {
    assert.deepEqual(decodeHex('00ff7a', 3, 'key'), Uint8Array.of(0x00, 0xff, 0x7a));
    assert.deepEqual(decodeHex('00FF7A', 3, 'key'), Uint8Array.of(0x00, 0xff, 0x7a));
  });

  it('refuses a non-string', () => {
    assert.throws(() => decodeHex(undefined, 1, 'key'), { message: 'key must be a hex string, got undefined' });
    assert.throws(() => decodeHex(null, 1, 'key'), { message: 'key must be a hex string, got null' });
    assert.throws(() => decodeHex(123, 1, 'key'), { message: 'key must be a hex string, got number' });
  });

  it('refuses a 0x prefix', () => {
    assert.throws(() => decodeHex('0xab', 1, 'key'), /without a 0x prefix/);
    assert.throws(() => decodeHex('0Xab', 1, 'key'), /without a 0x prefix/);
  });

  it('refuses the wrong length, including an odd number of characters', () => {
    assert.throws(() => decodeHex('abcd', 1, 'key'), {
      message: 'key must be 1 bytes (2 hex characters), got 4 characters',
    });
    assert.throws(() => decodeHex('abc', 2, 'key'), /got 3 characters/);
    assert.throws(() => decodeHex('', 1, 'key'), /got 0 characters/);
  });

  it('refuses non-hex characters', () => {
    assert.throws(() => decodeHex('zz', 1, 'key'), /only hex characters/);
    assert.throws(() => decodeHex('a ', 1, 'key'), /only hex characters/);
    assert.throws(() => decodeHex('+1', 1, 'key'), /only hex characters/);
  });
});
