import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  Keypair,
  type PublicKey,
  SystemProgram,
  Transaction,
  TransactionInstruction,
  TransactionMessage,
  VersionedTransaction,
} from '@solana/web3.js';
import { ChainInputError } from '../chain-input-error.ts';
import { prepareSolanaTransaction } from './prepare-solana-transaction.ts';

const wallet = Keypair.fromSeed(new Uint8Array(32).fill(1));
const feePayer = Keypair.fromSeed(new Uint8Array(32).fill(2));
const recipient = Keypair.fromSeed(new Uint8Array(32).fill(3)).publicKey;
const BLOCKHASH = 'GfVcyD4kkTrj4bKc7WA9sZCin9JDbdT4Zkd3EittNR1W';

const transfer = (from: PublicKey) => SystemProgram.transfer({ fromPubkey: from, toPubkey: recipient, lamports: 1000 });

function legacyWire(payer: PublicKey): Uint8Array {
  const tx = new Transaction({ feePayer: payer, recentBlockhash: BLOCKHASH }).add(transfer(wallet.publicKey));
  return tx.serialize({ requireAllSignatures: false, verifySignatures: false });
}

function v0Wire(): VersionedTransaction {
  const message = new TransactionMessage({
    payerKey: feePayer.publicKey,
    recentBlockhash: BLOCKHASH,
    instructions: [transfer(wallet.publicKey)],
  }).compileToV0Message();
  return new VersionedTransaction(message);
}

const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64');

function throwsTransaction(base64: unknown, message: RegExp, signer = wallet.publicKey.toBase58()): void {
  assert.throws(
    () => prepareSolanaTransaction(base64 as string, signer),
    (error: unknown) => {
      assert.ok(error instanceof ChainInputError, `expected ChainInputError, got ${String(error)}`);
      assert.equal(error.field, 'transaction');
      assert.match(error.message, message);
      return true;
    },
  );
}

describe('prepareSolanaTransaction', () => {
  it('finds the wallet as the fee payer of a legacy transaction', () => {
    const wire = legacyWire(wallet.publicKey);
    const prepared = prepareSolanaTransaction(b64(wire), wallet.publicKey.toBase58());
    assert.equal(prepared.version, 'legacy');
    assert.equal(prepared.signerIndex, 0);
    assert.deepEqual(prepared.wire, new Uint8Array(wire));
    assert.deepEqual(prepared.messageBytes, new Uint8Array(Transaction.from(wire).serializeMessage()));
  });

  it('finds the wallet at index 1 of a legacy transaction paid by another signer', () => {
    const prepared = prepareSolanaTransaction(b64(legacyWire(feePayer.publicKey)), wallet.publicKey.toBase58());
    assert.equal(prepared.version, 'legacy');
    assert.equal(prepared.signerIndex, 1);
    assert.deepEqual(
      prepared.messageBytes,
      new Uint8Array(Transaction.from(legacyWire(feePayer.publicKey)).serializeMessage()),
    );
  });

  it('reads a v0 transaction, already signed by the fee payer', () => {
    const tx = v0Wire();
    tx.sign([feePayer]);
    const prepared = prepareSolanaTransaction(b64(tx.serialize()), wallet.publicKey.toBase58());
    assert.equal(prepared.version, 0);
    assert.equal(prepared.signerIndex, 1);
    assert.deepEqual(prepared.messageBytes, tx.message.serialize());
    assert.deepEqual(prepared.wire, tx.serialize());
  });

  it('refuses a wallet that is not a required signer, even when it appears as an account', () => {
    const tx = new Transaction({ feePayer: feePayer.publicKey, recentBlockhash: BLOCKHASH }).add(
      SystemProgram.transfer({ fromPubkey: feePayer.publicKey, toPubkey: wallet.publicKey, lamports: 1 }),
    );
    const wire = b64(tx.serialize({ requireAllSignatures: false, verifySignatures: false }));
    assert.throws(() => prepareSolanaTransaction(wire, wallet.publicKey.toBase58()), {
      name: 'ChainInputError',
      field: 'transaction',
      message: `the wallet ${wallet.publicKey.toBase58()} is not a required signer of this transaction`,
    });
  });

  it('refuses trailing bytes, truncation, a signature count that does not match and bad versions', () => {
    const wire = legacyWire(feePayer.publicKey);
    throwsTransaction(b64(Uint8Array.from([...wire, 0])), /trailing bytes or a non-canonical encoding/);
    throwsTransaction(b64(wire.subarray(0, wire.length - 1)), /not a valid Solana transaction/);
    throwsTransaction(b64(wire.subarray(0, 1 + 64 * 2)), /truncated/);
    const oneSlot = Uint8Array.from([1, ...wire.subarray(1 + 64)]);
    throwsTransaction(b64(oneSlot), /carries 1 signature slots but its message requires 2/);
    const threeSlots = Uint8Array.from([3, ...new Uint8Array(64), ...wire.subarray(1)]);
    throwsTransaction(b64(threeSlots), /carries 3 signature slots but its message requires 2/);
    const v1 = v0Wire().serialize();
    v1[1 + 64 * 2] = 0x81;
    throwsTransaction(b64(v1), /version 1 transaction; only legacy and v0/);
    const v2 = v0Wire().serialize();
    v2[1 + 64 * 2] = 0x82;
    throwsTransaction(b64(v2), /version 2 transaction; only legacy and v0/);
    // A v1 transaction (message first, opening with 0x81) is recognised before anything else.
    throwsTransaction(
      b64(Uint8Array.of(0x81, ...v0Wire().message.serialize().subarray(1), ...new Uint8Array(128))),
      /version 1 transaction/,
    );
    throwsTransaction(b64(Uint8Array.of(0x80, 0x00, ...wire.subarray(1))), /valid signature count/);
  });

  it('refuses a transaction listing one account twice', () => {
    const tx = new Transaction({ feePayer: wallet.publicKey, recentBlockhash: BLOCKHASH }).add(
      new TransactionInstruction({ keys: [], programId: SystemProgram.programId, data: Buffer.alloc(0) }),
    );
    const wire = tx.serialize({ requireAllSignatures: false, verifySignatures: false });
    // Overwrite the program id (second account) with the fee payer's key: [1 sig][64][3-byte header][1 count][32][32].
    const duplicated = Uint8Array.from(wire);
    duplicated.set(wallet.publicKey.toBytes(), 1 + 64 + 3 + 1 + 32);
    throwsTransaction(b64(duplicated), /more than once/);
  });

  it('refuses more than 1232 bytes before parsing', () => {
    throwsTransaction(b64(new Uint8Array(1233)), /too large/);
    throwsTransaction('A'.repeat(5_000_000), /too large/);
  });

  it('refuses malformed base64 and non-strings', () => {
    const good = b64(legacyWire(wallet.publicKey));
    for (const bad of [
      good.replace(/=+$/, ''),
      `${good} `,
      good.replaceAll('+', '-').replaceAll('/', '_') + (good.includes('+') || good.includes('/') ? '' : '$'),
      '',
      'AAAA',
    ]) {
      assert.throws(
        () => prepareSolanaTransaction(bad, wallet.publicKey.toBase58()),
        { name: 'ChainInputError', field: 'transaction' },
        bad.slice(0, 20),
      );
    }
    for (const bad of [undefined, null, 42, [good], { transaction: good }, legacyWire(wallet.publicKey)]) {
      assert.throws(() => prepareSolanaTransaction(bad as unknown as string, wallet.publicKey.toBase58()), {
        name: 'ChainInputError',
        field: 'transaction',
      });
    }
    // 33 bytes of garbage, and random blobs of every small size.
    throwsTransaction(b64(new Uint8Array(33).fill(0xab)), /not a valid Solana transaction|truncated|signature count/);
    for (let size = 1; size < 300; size += 7) {
      const garbage = Uint8Array.from({ length: size }, (_, i) => (i * 131 + size) & 0xff);
      assert.throws(() => prepareSolanaTransaction(b64(garbage), wallet.publicKey.toBase58()), ChainInputError);
    }
  });

  it('refuses a malformed signer address', () => {
    const good = b64(legacyWire(wallet.publicKey));
    const short = Keypair.generate().publicKey.toBase58().slice(0, 30);
    for (const signer of ['', 'not-base58!', '1'.repeat(45), short, `${wallet.publicKey.toBase58()}z`, null, 5]) {
      assert.throws(() => prepareSolanaTransaction(good, signer as string), {
        name: 'ChainInputError',
        field: 'signerAddress',
      });
    }
  });
});
