import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ed25519 } from '@noble/curves/ed25519.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { parseEd25519PublicKey } from './parse-ed25519-public-key.ts';

describe('parseEd25519PublicKey', () => {
  it('returns the 32 bytes of a key', () => {
    const key = ed25519.getPublicKey(ed25519.utils.randomSecretKey());
    assert.deepEqual(parseEd25519PublicKey(bytesToHex(key)), key);
    assert.deepEqual(parseEd25519PublicKey(bytesToHex(key).toUpperCase()), key);
  });

  it('refuses a secp256k1 key, a short key, a 0x prefix and non-hex characters', () => {
    const key = bytesToHex(ed25519.getPublicKey(ed25519.utils.randomSecretKey()));
    assert.throws(() => parseEd25519PublicKey(`04${'11'.repeat(64)}`), {
      message: 'ed25519 public key must be 32 bytes (64 hex characters), got 130 characters',
    });
    assert.throws(() => parseEd25519PublicKey(key.slice(2)), /got 62 characters/);
    assert.throws(() => parseEd25519PublicKey(`0x${key.slice(2)}`), /without a 0x prefix/);
    assert.throws(() => parseEd25519PublicKey(`${key.slice(1)}q`), /only hex characters/);
  });
});
