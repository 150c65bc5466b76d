import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { encodeSecp256k1Pubkey, pubkeyToAddress } from '@cosmjs/amino';
import { fromBase64, fromBech32 } from '@cosmjs/encoding';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { deriveCosmosAddress } from './derive-address.ts';

describe('deriveCosmosAddress', () => {
  it('matches @cosmjs/amino for 50 random keys under several prefixes', () => {
    for (let i = 0; i < 50; i++) {
      const secret = secp256k1.utils.randomSecretKey();
      const publicKeyHex = bytesToHex(secp256k1.getPublicKey(secret, false));
      const aminoPubkey = encodeSecp256k1Pubkey(secp256k1.getPublicKey(secret, true));
      for (const prefix of ['cosmos', 'osmo', 'celestia', 'sei']) {
        assert.equal(deriveCosmosAddress(publicKeyHex, prefix), pubkeyToAddress(aminoPubkey, prefix));
      }
      assert.equal(deriveCosmosAddress(publicKeyHex), pubkeyToAddress(aminoPubkey, 'cosmos'));
    }
  });

  it('derives the well-known HASH160 of the generator (private key 1)', () => {
    const secret = new Uint8Array(32);
    secret[31] = 1;
    const address = deriveCosmosAddress(bytesToHex(secp256k1.getPublicKey(secret, false)));
    // fromBech32 needs an explicit limit: @cosmjs/encoding 0.39 defaults it to Infinity, which @scure/base 2 refuses.
    const { prefix, data } = fromBech32(address, 90);
    assert.equal(prefix, 'cosmos');
    // RIPEMD160(SHA256(0279be…1798)), the witness program of BIP-173's first P2WPKH vector.
    assert.equal(bytesToHex(data), '751e76e8199196d454941c45d1b3a323f1433bd6');
  });

  it('derives the address of the cosmjs test vector from its uncompressed form', () => {
    const compressed = fromBase64('AtQaCqFnshaZQp6rIkvAPyzThvCvXSDO+9AzbxVErqJP');
    const uncompressed = secp256k1.Point.fromBytes(compressed).toBytes(false);
    assert.equal(deriveCosmosAddress(bytesToHex(uncompressed)), 'cosmos1h806c7khnvmjlywdrkdgk2vrayy2mmvf9rxk2r');
  });

  it('refuses an invalid prefix and a malformed key', () => {
    const secret = secp256k1.utils.randomSecretKey();
    const publicKeyHex = bytesToHex(secp256k1.getPublicKey(secret, false));
    for (const prefix of ['', 'Cosmos', '1abc', 'cosmos-hub', 'a'.repeat(21)]) {
      assert.throws(() => deriveCosmosAddress(publicKeyHex, prefix), /Cosmos address prefix must be/, prefix);
    }
    assert.throws(() => deriveCosmosAddress(bytesToHex(secp256k1.getPublicKey(secret, true))), /must be uncompressed/);
    assert.throws(() => deriveCosmosAddress('ab'.repeat(32)), /must be 65 bytes/);
    assert.throws(() => deriveCosmosAddress(`0x${publicKeyHex}`), /without a 0x prefix/);
  });
});
