import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodeShortVec } from './decode-short-vec.ts';

// The compact-u16 test vectors of solana-sdk (short_vec.rs).
const VECTORS: [number, number[]][] = [
  [0x0, [0x0]],
  [0x7f, [0x7f]],
  [0x80, [0x80, 0x01]],
  [0xff, [0xff, 0x01]],
  [0x100, [0x80, 0x02]],
  [0x7fff, [0xff, 0xff, 0x01]],
  [0xffff, [0xff, 0xff, 0x03]],
];

describe('decodeShortVec', () => {
  it('decodes the solana-sdk vectors at any offset', () => {
    for (const [value, encoded] of VECTORS) {
      assert.deepEqual(decodeShortVec(Uint8Array.from(encoded), 0), { value, length: encoded.length });
      assert.deepEqual(decodeShortVec(Uint8Array.from([9, 9, ...encoded, 9]), 2), { value, length: encoded.length });
    }
  });

  it('refuses truncated, overlong, non-canonical and too-large encodings', () => {
    for (const encoded of [
      [],
      [0x80],
      [0xff, 0xff],
      [0x80, 0x00],
      [0x80, 0x80, 0x00],
      [0xff, 0xff, 0x04],
      [0x80, 0x80, 0x80, 0x01],
    ]) {
      assert.equal(decodeShortVec(Uint8Array.from(encoded), 0), undefined, JSON.stringify(encoded));
    }
  });
});
