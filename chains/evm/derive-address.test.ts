import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ed25519 } from '@noble/curves/ed25519.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { getAddress, isAddress } from 'viem';
import { privateKeyToAddress, publicKeyToAddress } from 'viem/accounts';
import { deriveEvmAddress } from './derive-address.ts';

const secretOf = (n: number): Uint8Array => {
  const secret = new Uint8Array(32);
  secret[31] = n;
  return secret;
};

describe('deriveEvmAddress', () => {
  it('matches viem for 50 random keys, checksummed', () => {
    for (let i = 0; i < 50; i++) {
      const secret = secp256k1.utils.randomSecretKey();
      const publicKeyHex = bytesToHex(secp256k1.getPublicKey(secret, false));
      const address = deriveEvmAddress(publicKeyHex);
      assert.equal(address, publicKeyToAddress(`0x${publicKeyHex}`));
      assert.equal(address, privateKeyToAddress(`0x${bytesToHex(secret)}`));
      assert.equal(isAddress(address, { strict: true }), true);
      assert.equal(getAddress(address.toLowerCase()), address);
      assert.equal(deriveEvmAddress(publicKeyHex.toUpperCase()), address);
    }
  });

  it('derives the known addresses of private keys 1 and 2', () => {
    assert.equal(
      deriveEvmAddress(bytesToHex(secp256k1.getPublicKey(secretOf(1), false))),
      '0x7E5F4552091A69125d5DfCb7b8C2659029395Bdf',
    );
    assert.equal(
      deriveEvmAddress(bytesToHex(secp256k1.getPublicKey(secretOf(2), false))),
      '0x2B5AD5c4795c026514f8317c7a215E218DcCD6cF',
    );
  });

  it('refuses a compressed key, an ed25519 key, a 0x prefix, non-hex and off-curve keys', () => {
    const secret = secp256k1.utils.randomSecretKey();
    const uncompressed = bytesToHex(secp256k1.getPublicKey(secret, false));
    assert.throws(() => deriveEvmAddress(bytesToHex(secp256k1.getPublicKey(secret, true))), /must be uncompressed/);
    assert.throws(
      () => deriveEvmAddress(bytesToHex(ed25519.getPublicKey(ed25519.utils.randomSecretKey()))),
      /must be 65 bytes/,
    );
    assert.throws(() => deriveEvmAddress(`0x${uncompressed}`), /without a 0x prefix/);
    assert.throws(() => deriveEvmAddress(`${uncompressed.slice(0, -1)}x`), /only hex characters/);
    const offCurve = `${uncompressed.slice(0, -2)}${(Number.parseInt(uncompressed.slice(-2), 16) ^ 1).toString(16).padStart(2, '0')}`;
    assert.throws(() => deriveEvmAddress(offCurve), /not a point on the secp256k1 curve/);
    assert.throws(() => deriveEvmAddress(''), /must be 65 bytes/);
  });
});
