import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { encodeUtf8 } from './encode-utf8.ts';

describe('encodeUtf8', () => {
  it('encodes text, including astral characters and the empty string', () => {
    assert.deepEqual(encodeUtf8('hé😀', 'message'), new Uint8Array(Buffer.from('hé😀', 'utf8')));
    assert.deepEqual(encodeUtf8('', 'message'), new Uint8Array(0));
  });

  it('refuses unpaired surrogates instead of signing U+FFFD', () => {
    for (const value of ['\ud800', 'a\udc00b', '😀'.slice(0, 1), '\ude00\ud83d']) {
      assert.throws(() => encodeUtf8(value, 'message'), {
        name: 'ChainInputError',
        field: 'message',
        message: 'message is not valid Unicode text (it holds an unpaired UTF-16 surrogate)',
      });
    }
  });

  it('refuses non-strings', () => {
    for (const value of [undefined, null, 1, ['a'], { text: 'a' }, new Uint8Array(1)]) {
      assert.throws(() => encodeUtf8(value, 'message'), { name: 'ChainInputError', field: 'message' });
    }
    assert.throws(() => encodeUtf8(42, 'message'), { message: 'message must be a string, got number' });
  });
});
