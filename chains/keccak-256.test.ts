import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { keccak_256 } from '@noble/hashes/sha3.js';
import fc from 'fast-check';
import { keccak256 } from './keccak-256.ts';

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex');

describe('keccak256', () => {
  it('hashes the empty input to the published Keccak-256 digest', () => {
    assert.equal(hex(keccak256()), 'c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470');
    assert.equal(hex(keccak256(new Uint8Array(0))), hex(keccak_256(new Uint8Array(0))));
  });

  it('equals @noble/hashes on the concatenation of any parts, across block boundaries, call after call', () => {
    fc.assert(
      fc.property(fc.array(fc.uint8Array({ maxLength: 400 }), { maxLength: 4 }), (parts) => {
        const joined = Buffer.concat(parts);
        assert.equal(hex(keccak256(...parts)), hex(keccak_256(joined)));
        // A second call starts from a fresh state (the sponge is reused).
        assert.equal(hex(keccak256(joined)), hex(keccak_256(joined)));
      }),
      { numRuns: 300 },
    );
  });

  it('hashes views into larger buffers by their own bytes only, and returns a digest that later calls keep', () => {
    const backing = Buffer.from('xxhello worldyy');
    const view = new Uint8Array(backing.buffer, backing.byteOffset + 2, 11);
    const first = keccak256(view);
    const copy = Uint8Array.from(first);
    keccak256(Buffer.from('something else'));
    assert.deepEqual(first, copy);
    assert.equal(hex(first), hex(keccak_256(Buffer.from('hello world'))));
  });
});
