import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ed25519 } from '@noble/curves/ed25519.js';
import { Keypair, SystemProgram, Transaction, TransactionMessage, VersionedTransaction } from '@solana/web3.js';
import { ChainInputError } from '../chain-input-error.ts';
import { attachSolanaSignature } from './attach-solana-signature.ts';
import { type PreparedSolanaTransaction, prepareSolanaTransaction } from './prepare-solana-transaction.ts';

const walletSeed = new Uint8Array(32).fill(11);
const wallet = Keypair.fromSeed(walletSeed);
const feePayer = Keypair.fromSeed(new Uint8Array(32).fill(12));
const recipient = Keypair.fromSeed(new Uint8Array(32).fill(13)).publicKey;
const BLOCKHASH = 'GfVcyD4kkTrj4bKc7WA9sZCin9JDbdT4Zkd3EittNR1W';

const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64');
const transfer = () => SystemProgram.transfer({ fromPubkey: wallet.publicKey, toPubkey: recipient, lamports: 42 });

function legacyTransaction(payer: Keypair): Transaction {
  return new Transaction({ feePayer: payer.publicKey, recentBlockhash: BLOCKHASH }).add(transfer());
}

function v0Transaction(): VersionedTransaction {
  return new VersionedTransaction(
    new TransactionMessage({
      payerKey: feePayer.publicKey,
      recentBlockhash: BLOCKHASH,
      instructions: [transfer()],
    }).compileToV0Message(),
  );
}

/** The wallet's side: what the enclave does with messageBytes. */
const signWithWallet = (prepared: PreparedSolanaTransaction) => ed25519.sign(prepared.messageBytes, walletSeed);

describe('attachSolanaSignature', () => {
  it('signs a legacy transaction paid by the wallet like web3.js sign, and it verifies', () => {
    const unsigned = legacyTransaction(wallet).serialize({ requireAllSignatures: false, verifySignatures: false });
    const prepared = prepareSolanaTransaction(b64(unsigned), wallet.publicKey.toBase58());
    const signed = attachSolanaSignature(prepared, signWithWallet(prepared));
    const expected = legacyTransaction(wallet);
    expected.sign(wallet);
    assert.equal(signed, b64(expected.serialize()));
    assert.equal(Transaction.from(Buffer.from(signed, 'base64')).verifySignatures(), true);
  });

  it('fills slot 1 of a legacy transaction, before and after the fee payer signs, like partialSign', () => {
    const unsigned = legacyTransaction(feePayer).serialize({ requireAllSignatures: false, verifySignatures: false });
    const prepared = prepareSolanaTransaction(b64(unsigned), wallet.publicKey.toBase58());
    assert.equal(prepared.signerIndex, 1);
    const signed = attachSolanaSignature(prepared, signWithWallet(prepared));
    const expected = legacyTransaction(feePayer);
    expected.partialSign(wallet);
    assert.equal(signed, b64(expected.serialize({ requireAllSignatures: false })));
    // Still missing the fee payer's signature, so not yet complete, but the wallet's own one checks out.
    assert.equal(Transaction.from(Buffer.from(signed, 'base64')).verifySignatures(false), true);
    assert.equal(Transaction.from(Buffer.from(signed, 'base64')).verifySignatures(true), false);

    const payerFirst = legacyTransaction(feePayer);
    payerFirst.partialSign(feePayer);
    const preparedAfter = prepareSolanaTransaction(
      b64(payerFirst.serialize({ requireAllSignatures: false })),
      wallet.publicKey.toBase58(),
    );
    const complete = Transaction.from(
      Buffer.from(attachSolanaSignature(preparedAfter, signWithWallet(preparedAfter)), 'base64'),
    );
    assert.equal(complete.verifySignatures(), true);
    payerFirst.partialSign(wallet);
    assert.equal(b64(complete.serialize()), b64(payerFirst.serialize()));
  });

  it('fills slot 1 of a v0 transaction, keeping the fee payer signature, like VersionedTransaction.sign', () => {
    const tx = v0Transaction();
    tx.sign([feePayer]);
    const wire = tx.serialize();
    const prepared = prepareSolanaTransaction(b64(wire), wallet.publicKey.toBase58());
    assert.equal(prepared.version, 0);
    const signed = Buffer.from(attachSolanaSignature(prepared, signWithWallet(prepared)), 'base64');
    // Only the 64 bytes of slot 1 changed.
    for (let i = 0; i < wire.length; i++) {
      if (i < 1 + 64 || i >= 1 + 128) assert.equal(signed[i], wire[i], `byte ${i}`);
    }
    const decoded = VersionedTransaction.deserialize(signed);
    const messageBytes = decoded.message.serialize();
    assert.equal(ed25519.verify(decoded.signatures[0]!, messageBytes, feePayer.publicKey.toBytes()), true);
    assert.equal(ed25519.verify(decoded.signatures[1]!, messageBytes, wallet.publicKey.toBytes()), true);
    tx.sign([wallet]);
    assert.deepEqual(new Uint8Array(signed), tx.serialize());
    // The input was not modified.
    assert.deepEqual(prepared.wire, wire);
  });

  it('produces a signature that fails verification after one flipped byte', () => {
    const tx = v0Transaction();
    const prepared = prepareSolanaTransaction(b64(tx.serialize()), wallet.publicKey.toBase58());
    const sig = signWithWallet(prepared);
    sig[0] = sig[0]! ^ 0x01;
    const decoded = VersionedTransaction.deserialize(Buffer.from(attachSolanaSignature(prepared, sig), 'base64'));
    assert.equal(
      ed25519.verify(decoded.signatures[1]!, decoded.message.serialize(), wallet.publicKey.toBytes()),
      false,
    );
  });

  it('refuses a signature that is not 64 bytes and a prepared value that does not hang together', () => {
    const prepared = prepareSolanaTransaction(b64(v0Transaction().serialize()), wallet.publicKey.toBase58());
    for (const sig of [new Uint8Array(63), new Uint8Array(65), 'ab'.repeat(64), null, Array(64).fill(0)]) {
      assert.throws(() => attachSolanaSignature(prepared, sig as Uint8Array), {
        name: 'ChainInputError',
        field: 'signature',
      });
    }
    const sig = signWithWallet(prepared);
    for (const bad of [
      null,
      {},
      { ...prepared, signerIndex: 2 },
      { ...prepared, signerIndex: -1 },
      { ...prepared, signerIndex: 0.5 },
      { ...prepared, signerIndex: undefined },
      { ...prepared, messageBytes: prepared.messageBytes.subarray(1) },
      { ...prepared, wire: prepared.wire.subarray(0, 100) },
      { ...prepared, wire: new Uint8Array(0) },
      { ...prepared, wire: b64(prepared.wire) },
    ]) {
      assert.throws(() => attachSolanaSignature(bad as PreparedSolanaTransaction, sig), ChainInputError);
    }
  });
});
