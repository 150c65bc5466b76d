import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { defaultScheme, WALLET_TYPES, type WalletType } from './domain/wallets.ts';
import { walletFamilies } from './wallet-families.ts';
import { SIGNING_OPERATIONS, type SigningOperation } from './wallet-family.ts';

/** The spec's support matrix of the signing routes ("Signing routes"), written out independently of the adapters. */
const SPEC_MATRIX: Record<SigningOperation, WalletType[]> = {
  'sign-message': ['EVM', 'COSMOS', 'SOLANA', 'STELLAR', 'SUI'],
  'sign-raw': ['EVM', 'COSMOS', 'SOLANA', 'STELLAR', 'SUI'],
  'sign-transaction': ['EVM', 'SOLANA', 'STELLAR', 'SUI'],
  'sign-typed-data': ['EVM'],
  'sign-authorization': ['EVM'],
};

const families = WALLET_TYPES.map((type) => walletFamilies[type]);

describe('walletFamilies', () => {
  it('has exactly one adapter per wallet type, each of its own type and scheme', () => {
    assert.deepEqual(Object.keys(walletFamilies).sort(), [...WALLET_TYPES].sort());
    for (const type of WALLET_TYPES) {
      assert.equal(walletFamilies[type].type, type);
      assert.equal(walletFamilies[type].scheme, defaultScheme(type), type);
    }
  });

  it("declares the spec's support matrix", () => {
    for (const operation of SIGNING_OPERATIONS) {
      const supported = WALLET_TYPES.filter((type) => walletFamilies[type].operations.includes(operation));
      assert.deepEqual(supported, SPEC_MATRIX[operation], operation);
    }
    for (const family of families) {
      for (const operation of family.operations) assert.ok(SIGNING_OPERATIONS.includes(operation));
    }
  });

  it('can prepare a transaction exactly where sign-transaction is supported', () => {
    for (const family of families) {
      assert.equal(
        family.prepareTransaction !== undefined,
        family.operations.includes('sign-transaction'),
        family.type,
      );
    }
  });

  it('counts sign-message as a raw signature on every type but EVM (spec: signing routes)', () => {
    assert.deepEqual(
      families.filter((family) => family.messageIsRawSignature).map((family) => family.type),
      ['COSMOS', 'SOLANA', 'STELLAR', 'SUI'],
    );
  });

  it('has secp256k1 wallets sign-raw a 32-byte digest, and ed25519 wallets the bytes themselves', () => {
    for (const family of families) {
      assert.equal(family.rawDigestBytes, family.scheme === 'DKLS' ? 32 : undefined, family.type);
    }
  });

  it('gives every pool step a name no other adapter uses (the workers look them up by name)', () => {
    const names = families.flatMap((family) => Object.keys(family.poolSteps));
    assert.deepEqual(names.length, new Set(names).size);
  });
});
