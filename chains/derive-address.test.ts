import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ed25519 } from '@noble/curves/ed25519.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { deriveCosmosAddress } from './cosmos/derive-address.ts';
import { deriveAddress } from './derive-address.ts';
import type { WalletType } from './domain/wallets.ts';
import { deriveEvmAddress } from './evm/derive-address.ts';
import { deriveSolanaAddress } from './solana/derive-address.ts';
import { deriveStellarAddress } from './stellar/derive-address.ts';
import { deriveSuiAddress } from './sui/derive-address.ts';

const secpKey = bytesToHex(secp256k1.getPublicKey(secp256k1.utils.randomSecretKey(), false));
const edKey = bytesToHex(ed25519.getPublicKey(ed25519.utils.randomSecretKey()));

describe('deriveAddress', () => {
  it('dispatches on the wallet type', () => {
    assert.equal(deriveAddress({ type: 'EVM', publicKeyHex: secpKey }), deriveEvmAddress(secpKey));
    assert.equal(deriveAddress({ type: 'COSMOS', publicKeyHex: secpKey }), deriveCosmosAddress(secpKey, 'cosmos'));
    assert.equal(deriveAddress({ type: 'SOLANA', publicKeyHex: edKey }), deriveSolanaAddress(edKey));
    assert.equal(deriveAddress({ type: 'STELLAR', publicKeyHex: edKey }), deriveStellarAddress(edKey));
    assert.equal(deriveAddress({ type: 'SUI', publicKeyHex: edKey }), deriveSuiAddress(edKey));
  });

  it('uses cosmosPrefix for COSMOS, defaulting to cosmos', () => {
    assert.match(deriveAddress({ type: 'COSMOS', publicKeyHex: secpKey }), /^cosmos1/);
    assert.match(deriveAddress({ type: 'COSMOS', publicKeyHex: secpKey, cosmosPrefix: undefined }), /^cosmos1/);
    assert.equal(
      deriveAddress({ type: 'COSMOS', publicKeyHex: secpKey, cosmosPrefix: 'osmo' }),
      deriveCosmosAddress(secpKey, 'osmo'),
    );
    assert.throws(
      () => deriveAddress({ type: 'COSMOS', publicKeyHex: secpKey, cosmosPrefix: 'OSMO' }),
      /Cosmos address prefix must be/,
    );
  });

  it('refuses cosmosPrefix for other types', () => {
    assert.throws(
      () => deriveAddress({ type: 'EVM', publicKeyHex: secpKey, cosmosPrefix: 'osmo' }),
      /cosmosPrefix applies only to COSMOS wallets, not EVM/,
    );
  });

  it('refuses a key of the other curve for every type', () => {
    for (const type of ['EVM', 'COSMOS'] as const) {
      assert.throws(() => deriveAddress({ type, publicKeyHex: edKey }), /secp256k1 public key must be 65 bytes/);
    }
    for (const type of ['SOLANA', 'STELLAR', 'SUI'] as const) {
      assert.throws(() => deriveAddress({ type, publicKeyHex: secpKey }), /ed25519 public key must be 32 bytes/);
    }
  });

  it('refuses an unknown type', () => {
    assert.throws(
      () => deriveAddress({ type: 'BITCOIN' as WalletType, publicKeyHex: secpKey }),
      /Unknown wallet type: BITCOIN/,
    );
  });
});
