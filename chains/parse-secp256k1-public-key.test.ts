import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { parseSecp256k1PublicKey } from './parse-secp256k1-public-key.ts';

const randomKey = (): Uint8Array => secp256k1.getPublicKey(secp256k1.utils.randomSecretKey(), false);

describe('parseSecp256k1PublicKey', () => {
  it('returns the 65 bytes of a valid uncompressed key', () => {
    for (let i = 0; i < 20; i++) {
      const key = randomKey();
      assert.deepEqual(parseSecp256k1PublicKey(bytesToHex(key)), key);
      assert.deepEqual(parseSecp256k1PublicKey(bytesToHex(key).toUpperCase()), key);
    }
  });

  it('refuses a compressed key with a message that says so', () => {
    const compressed = bytesToHex(secp256k1.getPublicKey(secp256k1.utils.randomSecretKey(), true));
    assert.throws(() => parseSecp256k1PublicKey(compressed), /must be uncompressed .* compressed key/);
  });

  it('refuses a 65-byte key that does not start with 04', () => {
    const key = bytesToHex(randomKey());
    assert.throws(() => parseSecp256k1PublicKey(`05${key.slice(2)}`), /must start with 04/);
    assert.throws(() => parseSecp256k1PublicKey(`02${key.slice(2)}`), /must start with 04/);
  });

  it('refuses a point that is not on the curve', () => {
    const key = randomKey();
    key[64] = key[64]! ^ 0x01; // y → y ± 1: y² changes, x³ + 7 does not
    assert.throws(() => parseSecp256k1PublicKey(bytesToHex(key)), /not a point on the secp256k1 curve/);
    assert.throws(() => parseSecp256k1PublicKey(`04${'00'.repeat(64)}`), /not a point on the secp256k1 curve/);
    assert.throws(() => parseSecp256k1PublicKey(`04${'ff'.repeat(64)}`), /not a point on the secp256k1 curve/);
  });

  it('refuses malformed hex', () => {
    const key = bytesToHex(randomKey());
    assert.throws(() => parseSecp256k1PublicKey(`0x${key}`), /without a 0x prefix/);
    assert.throws(() => parseSecp256k1PublicKey(key.slice(0, 128)), /65 bytes \(130 hex characters\), got 128/);
    assert.throws(() => parseSecp256k1PublicKey(`${key}00`), /got 132 characters/);
    assert.throws(() => parseSecp256k1PublicKey(`${key.slice(0, 129)}g`), /only hex characters/);
    assert.throws(() => parseSecp256k1PublicKey(undefined as unknown as string), /must be a hex string/);
  });
});
