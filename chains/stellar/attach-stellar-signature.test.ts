import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ed25519 } from '@noble/curves/ed25519.js';
import {
  Account,
  Asset,
  BASE_FEE,
  type FeeBumpTransaction,
  Keypair,
  Networks,
  Operation,
  type Transaction,
  TransactionBuilder,
} from '@stellar/stellar-sdk';
import { ChainInputError } from '../chain-input-error.ts';
import { attachStellarSignature } from './attach-stellar-signature.ts';
import { type PreparedStellarTransaction, prepareStellarTransaction } from './prepare-stellar-transaction.ts';

const seed = new Uint8Array(32).fill(31);
const publicKey = ed25519.getPublicKey(seed);
const wallet = Keypair.fromRawEd25519Seed(Buffer.from(seed));
const other = Keypair.fromRawEd25519Seed(Buffer.alloc(32, 32));

function payment(from: string, networkPassphrase = Networks.TESTNET): Transaction {
  return new TransactionBuilder(new Account(from, '7'), { fee: BASE_FEE, networkPassphrase })
    .addOperation(Operation.payment({ destination: other.publicKey(), asset: Asset.native(), amount: '1' }))
    .setTimeout(60)
    .build();
}

const reparse = (xdr: string, passphrase = Networks.TESTNET) =>
  TransactionBuilder.fromXDR(xdr, passphrase) as Transaction | FeeBumpTransaction;

describe('attachStellarSignature', () => {
  it('produces the same envelope as the SDK signing with the keypair', () => {
    const tx = payment(wallet.publicKey());
    const prepared = prepareStellarTransaction(tx.toXDR(), Networks.TESTNET);
    const signed = attachStellarSignature(prepared, publicKey, ed25519.sign(prepared.hash, seed));
    tx.sign(wallet);
    assert.equal(signed, tx.toXDR());
    const parsed = reparse(signed);
    assert.equal(parsed.signatures.length, 1);
    assert.deepEqual([...parsed.signatures[0]!.hint()], [...publicKey.subarray(28)]);
    assert.equal(wallet.verify(parsed.hash(), parsed.signatures[0]!.signature()), true);
  });

  it('adds to existing signatures and leaves prepared untouched', () => {
    const tx = payment(other.publicKey());
    tx.sign(other);
    const prepared = prepareStellarTransaction(tx.toXDR(), Networks.TESTNET);
    const before = structuredClone(prepared);
    const sig = ed25519.sign(prepared.hash, seed);
    const signed = attachStellarSignature(prepared, publicKey, sig);
    assert.equal(attachStellarSignature(prepared, publicKey, sig), signed);
    assert.deepEqual(prepared, before);
    tx.sign(wallet);
    assert.equal(signed, tx.toXDR());
    assert.equal(reparse(signed).signatures.length, 2);
  });

  it('signing an envelope that already carries the signature adds no second copy', () => {
    const tx = payment(wallet.publicKey());
    const prepared = prepareStellarTransaction(tx.toXDR(), Networks.TESTNET);
    const once = attachStellarSignature(prepared, publicKey, ed25519.sign(prepared.hash, seed));
    const again = prepareStellarTransaction(once, Networks.TESTNET);
    const twice = attachStellarSignature(again, publicKey, ed25519.sign(again.hash, seed));
    assert.equal(twice, once);
    assert.equal(reparse(twice).signatures.length, 1);
  });

  it('signs a fee bump envelope like the SDK', () => {
    const inner = payment(other.publicKey());
    inner.sign(other);
    const bump = TransactionBuilder.buildFeeBumpTransaction(wallet.publicKey(), '500', inner, Networks.TESTNET);
    const prepared = prepareStellarTransaction(bump.toXDR(), Networks.TESTNET);
    const signed = attachStellarSignature(prepared, publicKey, ed25519.sign(prepared.hash, seed));
    bump.sign(wallet);
    assert.equal(signed, bump.toXDR());
  });

  it('refuses a signature made for another network, another key or with a flipped byte', () => {
    const xdr = payment(wallet.publicKey()).toXDR();
    const testnet = prepareStellarTransaction(xdr, Networks.TESTNET);
    const mainnet = prepareStellarTransaction(xdr, Networks.PUBLIC);
    const sig = ed25519.sign(testnet.hash, seed);
    const refused = { name: 'ChainInputError', field: 'signature', message: /does not verify/ };
    assert.throws(() => attachStellarSignature(mainnet, publicKey, sig), refused);
    assert.throws(() => attachStellarSignature(testnet, other.rawPublicKey(), sig), refused);
    const flipped = Uint8Array.from(sig);
    flipped[10] = flipped[10]! ^ 0x01;
    assert.throws(() => attachStellarSignature(testnet, publicKey, flipped), refused);
  });

  it('refuses malformed keys, signatures and prepared values', () => {
    const prepared = prepareStellarTransaction(payment(wallet.publicKey()).toXDR(), Networks.TESTNET);
    const sig = ed25519.sign(prepared.hash, seed);
    for (const key of [new Uint8Array(33), new Uint8Array(31), wallet.publicKey(), null, Array.from(publicKey)]) {
      assert.throws(() => attachStellarSignature(prepared, key as Uint8Array, sig), {
        name: 'ChainInputError',
        field: 'publicKey',
      });
    }
    for (const bad of [new Uint8Array(63), new Uint8Array(65), Buffer.from(sig).toString('base64'), undefined]) {
      assert.throws(() => attachStellarSignature(prepared, publicKey, bad as Uint8Array), {
        name: 'ChainInputError',
        field: 'signature',
      });
    }
    for (const bad of [
      null,
      {},
      { transaction: null },
      { envelope: 'AAAA' },
      { ...prepared, envelope: 'AAAA' },
      { ...prepared, envelope: undefined },
      { ...prepared, networkPassphrase: 5 },
    ]) {
      assert.throws(
        () => attachStellarSignature(bad as unknown as PreparedStellarTransaction, publicKey, sig),
        ChainInputError,
      );
    }
  });
});
