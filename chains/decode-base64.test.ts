import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { ChainInputError } from './chain-input-error.ts';
import { decodeBase64 } from './decode-base64.ts';

describe('decodeBase64', () => {
  it('decodes canonical base64 of every padding length to a plain Uint8Array', () => {
    for (let length = 1; length < 40; length++) {
      const bytes = randomBytes(length);
      const decoded = decodeBase64(bytes.toString('base64'), 'transaction');
      assert.ok(!Buffer.isBuffer(decoded));
      assert.deepEqual(decoded, new Uint8Array(bytes));
    }
    assert.deepEqual(decodeBase64('+/8=', 'x'), Uint8Array.of(0xfb, 0xff));
  });

  it('refuses non-strings and the empty string', () => {
    for (const value of [undefined, null, 42, ['AAAA'], { value: 'AAAA' }, new Uint8Array(3)]) {
      assert.throws(() => decodeBase64(value, 'transaction'), { name: 'ChainInputError', field: 'transaction' });
    }
    assert.throws(() => decodeBase64(null, 'transaction'), {
      message: 'transaction must be a base64 string, got null',
    });
    assert.throws(() => decodeBase64('', 'transaction'), { message: 'transaction must not be empty' });
  });

  it('refuses foreign characters, URL-safe alphabet, whitespace and wrong padding', () => {
    for (const value of [
      'AA$A',
      '-_8=',
      '_/8=',
      'AAAA AAAA',
      'AAAA\n',
      ' AAAA',
      'AAA',
      'AA=',
      'AA',
      'A===',
      'AA==AAAA',
      'AAA==',
      '====',
      'AAAA=',
    ]) {
      assert.throws(
        () => decodeBase64(value, 'transaction'),
        (error: unknown) => {
          assert.ok(error instanceof ChainInputError, value);
          assert.equal(error.field, 'transaction');
          assert.match(error.message, /must be standard base64/);
          return true;
        },
      );
    }
  });

  it('refuses non-zero unused bits in the last character', () => {
    assert.deepEqual(decodeBase64('QQ==', 'x'), Uint8Array.of(0x41));
    assert.throws(() => decodeBase64('QR==', 'x'), /not canonical base64/);
    assert.throws(() => decodeBase64('QUF=', 'x'), /not canonical base64/);
  });

  it('refuses more than maxBytes, before decoding a huge string', () => {
    assert.equal(decodeBase64(Buffer.alloc(13).toString('base64'), 'x', 13).length, 13);
    assert.throws(() => decodeBase64(Buffer.alloc(14).toString('base64'), 'x', 13), /too large: 14 bytes, at most 13/);
    assert.throws(() => decodeBase64(Buffer.alloc(16).toString('base64'), 'x', 13), /too large: at most 13 bytes/);
    assert.throws(() => decodeBase64('A'.repeat(10_000_000), 'x', 1232), /too large: at most 1232 bytes/);
  });
});
