import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ed25519 } from '@noble/curves/ed25519.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { Keypair, PublicKey } from '@solana/web3.js';
import { deriveSolanaAddress } from './derive-address.ts';

describe('deriveSolanaAddress', () => {
  it('matches @solana/web3.js for 50 random keys', () => {
    for (let i = 0; i < 50; i++) {
      const seed = ed25519.utils.randomSecretKey();
      const publicKey = ed25519.getPublicKey(seed);
      const address = deriveSolanaAddress(bytesToHex(publicKey));
      assert.equal(address, new PublicKey(publicKey).toBase58());
      assert.equal(address, Keypair.fromSeed(seed).publicKey.toBase58());
    }
  });

  it('keeps leading zero bytes as leading 1s (known program ids)', () => {
    assert.equal(deriveSolanaAddress('00'.repeat(32)), '11111111111111111111111111111111');
    assert.equal(
      deriveSolanaAddress('06ddf6e1d765a193d9cbe146ceeb79ac1cb485ed5f5b37913a8cf5857eff00a9'),
      'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA',
    );
  });

  it('refuses a secp256k1 key, wrong length, a 0x prefix and non-hex', () => {
    const hex = bytesToHex(ed25519.getPublicKey(ed25519.utils.randomSecretKey()));
    assert.throws(
      () => deriveSolanaAddress(bytesToHex(secp256k1.getPublicKey(secp256k1.utils.randomSecretKey(), false))),
      /ed25519 public key must be 32 bytes/,
    );
    assert.throws(() => deriveSolanaAddress(`${hex}00`), /got 66 characters/);
    assert.throws(() => deriveSolanaAddress(`0x${hex.slice(2)}`), /without a 0x prefix/);
    assert.throws(() => deriveSolanaAddress(`${hex.slice(1)}-`), /only hex characters/);
  });
});
