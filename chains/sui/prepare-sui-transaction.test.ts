import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519';
import { Transaction } from '@mysten/sui/transactions';
import { verifyTransactionSignature } from '@mysten/sui/verify';
import { ed25519 } from '@noble/curves/ed25519.js';
import { blake2b } from '@noble/hashes/blake2.js';
import { ChainInputError } from '../chain-input-error.ts';
import { encodeSuiSignature } from './encode-sui-signature.ts';
import { prepareSuiTransaction } from './prepare-sui-transaction.ts';

const seed = new Uint8Array(32).fill(51);
const keypair = Ed25519Keypair.fromSecretKey(seed);
const publicKey = ed25519.getPublicKey(seed);
const RECIPIENT = `0x${'22'.repeat(32)}`;

/** TransactionData built offline: every input is given, so no client is needed. */
async function buildTransfer(amounts: number[] = [1000]): Promise<Uint8Array> {
  const tx = new Transaction();
  tx.setSender(keypair.toSuiAddress());
  tx.setGasPrice(1000);
  tx.setGasBudget(5_000_000);
  tx.setGasPayment([
    { objectId: `0x${'11'.repeat(32)}`, version: '7', digest: '4vJ9JU1bJJE96FWSJKvHsmmFADCg4gpZQff4P3bkLKi' },
  ]);
  const coins = tx.splitCoins(tx.gas, amounts);
  tx.transferObjects(
    amounts.map((_, i) => coins[i]!),
    RECIPIENT,
  );
  return tx.build({});
}

const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64');

function throwsTransaction(value: unknown, message?: RegExp): void {
  assert.throws(
    () => prepareSuiTransaction(value as string),
    (error: unknown) => {
      assert.ok(error instanceof ChainInputError, `expected ChainInputError, got ${String(error)}`);
      assert.equal(error.field, 'transaction');
      if (message) assert.match(error.message, message);
      return true;
    },
  );
}

describe('prepareSuiTransaction', () => {
  it('keeps the bytes and hashes intent [0, 0, 0] ‖ bytes with BLAKE2b-256', async () => {
    const bytes = await buildTransfer();
    const prepared = prepareSuiTransaction(b64(bytes));
    assert.deepEqual(prepared.bytes, bytes);
    assert.deepEqual(prepared.digest, blake2b(Uint8Array.of(0, 0, 0, ...bytes), { dkLen: 32 }));
  });

  for (const amounts of [[1000], [1, 2, 3]]) {
    it(`signs like signTransaction and verifies for the wallet address (${amounts.length} splits)`, async () => {
      const bytes = await buildTransfer(amounts);
      const prepared = prepareSuiTransaction(b64(bytes));
      const signature = encodeSuiSignature(ed25519.sign(prepared.digest, seed), publicKey);
      assert.equal(signature, (await keypair.signTransaction(bytes)).signature);
      const signer = await verifyTransactionSignature(bytes, signature, { address: keypair.toSuiAddress() });
      assert.equal(signer.toSuiAddress(), keypair.toSuiAddress());
    });
  }

  it('does not verify after a flipped signature byte or for other bytes', async () => {
    const bytes = await buildTransfer();
    const prepared = prepareSuiTransaction(b64(bytes));
    const sig = ed25519.sign(prepared.digest, seed);
    const address = keypair.toSuiAddress();
    await assert.rejects(
      verifyTransactionSignature(await buildTransfer([999]), encodeSuiSignature(sig, publicKey), { address }),
    );
    sig[63] = sig[63]! ^ 0x01;
    await assert.rejects(verifyTransactionSignature(bytes, encodeSuiSignature(sig, publicKey), { address }));
  });

  it('refuses trailing bytes, truncation, unknown variants and garbage', async () => {
    const bytes = await buildTransfer();
    throwsTransaction(b64(Uint8Array.of(...bytes, 0)), /trailing bytes or a non-canonical/);
    throwsTransaction(b64(bytes.subarray(0, bytes.length - 1)), /not valid BCS TransactionData/);
    throwsTransaction(b64(bytes.subarray(0, 50)), /not valid BCS TransactionData/);
    throwsTransaction(b64(Uint8Array.of(1, ...bytes.subarray(1))), /not valid BCS TransactionData/);
    throwsTransaction(b64(new Uint8Array(33).fill(0xff)), /not valid BCS TransactionData/);
    for (let size = 1; size < 400; size += 9) {
      throwsTransaction(b64(Uint8Array.from({ length: size }, (_, i) => (i * 53 + size) & 0xff)));
    }
  });

  it('refuses a non-canonical encoding that decodes to the same transaction', async () => {
    const bytes = await buildTransfer();
    // TransactionData::V1 (0), TransactionKind::ProgrammableTransaction (0), then the ULEB128 input count: write
    // that count in two bytes instead of one. BCS decoders accept it; the re-encoding differs.
    assert.deepEqual([bytes[0], bytes[1]], [0, 0]);
    assert.ok(bytes[2]! < 0x80);
    throwsTransaction(
      b64(Uint8Array.of(0, 0, bytes[2]! | 0x80, 0x00, ...bytes.subarray(3))),
      /non-canonical BCS encoding/,
    );
  });

  it('refuses malformed base64, oversize input and non-strings', async () => {
    const good = b64(await buildTransfer());
    for (const bad of [
      good.replace(/=+$/, '') === good ? `${good}=` : good.replace(/=+$/, ''),
      ` ${good}`,
      '',
      '@@@@',
    ]) {
      throwsTransaction(bad);
    }
    throwsTransaction(b64(new Uint8Array(128 * 1024 + 1)), /too large/);
    for (const bad of [undefined, null, 5, [good], { transaction: good }, Buffer.from(good, 'base64')])
      throwsTransaction(bad);
  });
});
