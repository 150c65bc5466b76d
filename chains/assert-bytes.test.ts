import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { assertBytes } from './assert-bytes.ts';

describe('assertBytes', () => {
  it('accepts a Uint8Array or Buffer of the length', () => {
    assertBytes(new Uint8Array(64), 64, 'signature');
    assertBytes(Buffer.alloc(32), 32, 'publicKey');
  });

  it('refuses other lengths and other types', () => {
    assert.throws(() => assertBytes(new Uint8Array(33), 32, 'publicKey'), {
      name: 'ChainInputError',
      field: 'publicKey',
      message: 'publicKey must be 32 bytes, got 33',
    });
    for (const value of [undefined, null, 'ab'.repeat(32), Array(32).fill(0), new Uint16Array(32), 32]) {
      assert.throws(() => assertBytes(value, 32, 'publicKey'), { name: 'ChainInputError', field: 'publicKey' });
    }
  });
});
