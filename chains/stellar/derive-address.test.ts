import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ed25519 } from '@noble/curves/ed25519.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { Keypair, StrKey } from '@stellar/stellar-sdk';
import { deriveStellarAddress } from './derive-address.ts';

describe('deriveStellarAddress', () => {
  it('matches @stellar/stellar-sdk for 50 random keys', () => {
    for (let i = 0; i < 50; i++) {
      const seed = ed25519.utils.randomSecretKey();
      const publicKey = ed25519.getPublicKey(seed);
      const address = deriveStellarAddress(bytesToHex(publicKey));
      assert.equal(address, StrKey.encodeEd25519PublicKey(Buffer.from(publicKey)));
      assert.equal(address, Keypair.fromRawEd25519Seed(Buffer.from(seed)).publicKey());
      assert.equal(StrKey.isValidEd25519PublicKey(address), true);
      assert.match(address, /^G[A-Z2-7]{55}$/);
    }
  });

  it('derives the SEP-23 account ID vector', () => {
    assert.equal(
      deriveStellarAddress('3f0c34bf93ad0d9971d04ccc90f705511c838aad9734a4a2fb0d7a03fc7fe89a'),
      'GA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVSGZ',
    );
  });

  it('round-trips through the SDK decoder for edge keys', () => {
    for (const hex of ['00'.repeat(32), 'ff'.repeat(32), `${'00'.repeat(31)}01`]) {
      assert.equal(bytesToHex(StrKey.decodeEd25519PublicKey(deriveStellarAddress(hex))), hex);
    }
  });

  it('refuses wrong length, a 0x prefix and non-hex', () => {
    const hex = bytesToHex(ed25519.getPublicKey(ed25519.utils.randomSecretKey()));
    assert.throws(() => deriveStellarAddress(hex.slice(0, 62)), /must be 32 bytes/);
    assert.throws(() => deriveStellarAddress(`0x${hex.slice(2)}`), /without a 0x prefix/);
    assert.throws(() => deriveStellarAddress(`G${hex.slice(1)}`), /only hex characters/);
  });
});
