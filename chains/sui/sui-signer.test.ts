import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519';
import { Transaction } from '@mysten/sui/transactions';
import { verifyPersonalMessageSignature, verifyTransactionSignature } from '@mysten/sui/verify';
import { ed25519 } from '@noble/curves/ed25519.js';
import { inlineSteps, localWalletKey } from '../../test/helpers/local-wallet-key.ts';
import { suiPoolSteps } from './sui-pool-steps.ts';
import { suiSigner } from './sui-signer.ts';

const SEED = new Uint8Array(32).fill(71);
const keypair = Ed25519Keypair.fromSecretKey(SEED);
const key = localWalletKey(suiSigner, SEED);
const wallet = { address: key.address, publicKey: key.publicKey };

async function transfer(): Promise<Uint8Array> {
  const tx = new Transaction();
  tx.setSender(keypair.toSuiAddress());
  tx.setGasPrice(1000);
  tx.setGasBudget(5_000_000);
  tx.setGasPayment([
    { objectId: `0x${'11'.repeat(32)}`, version: '7', digest: '4vJ9JU1bJJE96FWSJKvHsmmFADCg4gpZQff4P3bkLKi' },
  ]);
  tx.transferObjects([tx.splitCoins(tx.gas, [1000])[0]!], `0x${'22'.repeat(32)}`);
  return tx.build({});
}

describe('suiSigner', () => {
  it("derives the keypair's address", () => {
    assert.equal(key.address, keypair.toSuiAddress());
  });

  it('signs messages as a PersonalMessage, answered as a serialized Sui signature', async () => {
    const signature = await suiSigner.signMessage('hello ✓', key);
    assert.equal(signature, (await keypair.signPersonalMessage(Buffer.from('hello ✓'))).signature);
    const signer = await verifyPersonalMessageSignature(Buffer.from('hello ✓'), signature, { address: key.address });
    assert.equal(signer.toSuiAddress(), key.address);
    await assert.rejects(verifyPersonalMessageSignature(Buffer.from('hello'), signature, { address: key.address }));
  });

  it('signs raw bytes as they are, as plain hex', async () => {
    const data = new Uint8Array(100).fill(3);
    const signature = await suiSigner.signRaw(data, key);
    assert.match(signature, /^[0-9a-f]{128}$/);
    assert.equal(ed25519.verify(Buffer.from(signature, 'hex'), data, key.publicKey), true);
  });

  it('signs TransactionData on its pool step, answering the transaction unchanged and naming no chain', async () => {
    const { steps, ran } = inlineSteps(suiPoolSteps);
    const bytes = await transfer();
    const transaction = Buffer.from(bytes).toString('base64');
    const prepared = await suiSigner.prepareTransaction!({ transaction, networkPassphrase: 'ignored' }, wallet, steps);
    assert.equal(prepared.chainId, null);
    const signed = await prepared.sign(key);
    assert.deepEqual(ran, ['prepareSuiTransaction']);
    assert.equal(signed.transaction, transaction);
    assert.equal(signed.signature, (await keypair.signTransaction(bytes)).signature);
    const signer = await verifyTransactionSignature(bytes, signed.signature!, { address: key.address });
    assert.equal(signer.toSuiAddress(), key.address);
  });
});
