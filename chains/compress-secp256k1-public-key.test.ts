import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { compressSecp256k1PublicKey } from './compress-secp256k1-public-key.ts';

describe('compressSecp256k1PublicKey', () => {
  it('matches noble compression for random keys (both parities)', () => {
    const prefixes = new Set<number>();
    for (let i = 0; i < 50; i++) {
      const secret = secp256k1.utils.randomSecretKey();
      const compressed = compressSecp256k1PublicKey(secp256k1.getPublicKey(secret, false));
      assert.deepEqual(compressed, secp256k1.getPublicKey(secret, true));
      prefixes.add(compressed[0]!);
    }
    assert.deepEqual([...prefixes].sort(), [0x02, 0x03]);
  });

  it('compresses the generator (private key 1) to its well-known form', () => {
    const secret = new Uint8Array(32);
    secret[31] = 1;
    assert.equal(
      bytesToHex(compressSecp256k1PublicKey(secp256k1.getPublicKey(secret, false))),
      '0279be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798',
    );
  });

  it('refuses anything but a 65-byte 04 key', () => {
    const secret = secp256k1.utils.randomSecretKey();
    assert.throws(() => compressSecp256k1PublicKey(secp256k1.getPublicKey(secret, true)), /got 33 bytes/);
    const wrongPrefix = secp256k1.getPublicKey(secret, false);
    wrongPrefix[0] = 0x06;
    assert.throws(() => compressSecp256k1PublicKey(wrongPrefix), /65 bytes starting 04/);
  });
});
