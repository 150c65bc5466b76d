import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ComputeBudgetProgram, Keypair, SystemProgram, Transaction } from '@solana/web3.js';
import bs58 from 'bs58';
import { readComputeUnitPrice } from './read-compute-unit-price.ts';

const payer = Keypair.generate();
const blockhash = bs58.encode(Buffer.alloc(32, 7));

function wire(tx: Transaction, sign = false): string {
  if (sign) tx.sign(payer);
  return tx.serialize({ requireAllSignatures: false, verifySignatures: false }).toString('base64');
}

const transfer = () =>
  SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: Keypair.generate().publicKey, lamports: 1 });

describe('readComputeUnitPrice', () => {
  it('reads the SetComputeUnitPrice of an unsigned and of a signed transaction', () => {
    const tx = () =>
      new Transaction({ feePayer: payer.publicKey, blockhash, lastValidBlockHeight: 1 }).add(
        ComputeBudgetProgram.setComputeUnitLimit({ units: 1_000 }),
        ComputeBudgetProgram.setComputeUnitPrice({ microLamports: 123_456 }),
        transfer(),
      );
    assert.equal(readComputeUnitPrice(wire(tx())), 123_456);
    assert.equal(readComputeUnitPrice(wire(tx(), true)), 123_456);
  });

  it('is 0 without a price instruction (a limit alone does not set one)', () => {
    const tx = new Transaction({ feePayer: payer.publicKey, blockhash, lastValidBlockHeight: 1 }).add(
      ComputeBudgetProgram.setComputeUnitLimit({ units: 1_000 }),
      transfer(),
    );
    assert.equal(readComputeUnitPrice(wire(tx)), 0);
  });
});
