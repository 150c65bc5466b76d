import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ed25519 } from '@noble/curves/ed25519.js';
import { ChainInputError } from './chain-input-error.ts';
import { encodeEd25519Signature } from './encode-ed25519-signature.ts';

describe('encodeEd25519Signature', () => {
  it('encodes R‖S as 128 lowercase hex characters that verify', () => {
    const secret = ed25519.utils.randomSecretKey();
    const message = new TextEncoder().encode('hello');
    const hex = encodeEd25519Signature(ed25519.sign(message, secret));
    assert.match(hex, /^[0-9a-f]{128}$/);
    assert.equal(ed25519.verify(Buffer.from(hex, 'hex'), message, ed25519.getPublicKey(secret)), true);
  });

  it('encodes only the view it is given', () => {
    const backing = new Uint8Array(80).fill(0xee);
    backing.fill(0xab, 8, 72);
    assert.equal(encodeEd25519Signature(backing.subarray(8, 72)), 'ab'.repeat(64));
  });

  it('refuses a signature that is not 64 bytes', () => {
    assert.throws(() => encodeEd25519Signature(new Uint8Array(63)), ChainInputError);
    assert.throws(() => encodeEd25519Signature(new Uint8Array(65)), /signature must be 64 bytes, got 65/);
  });
});
