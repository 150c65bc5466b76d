import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Account, Asset, BASE_FEE, Keypair, Networks, Operation, TransactionBuilder } from '@stellar/stellar-sdk';
import { inlineSteps, localWalletKey } from '../../test/helpers/local-wallet-key.ts';
import { ChainInputError } from '../chain-input-error.ts';
import { stellarPoolSteps } from './stellar-pool-steps.ts';
import { stellarSigner } from './stellar-signer.ts';

const SEED = new Uint8Array(32).fill(61);
const keypair = Keypair.fromRawEd25519Seed(Buffer.from(SEED));
const key = localWalletKey(stellarSigner, SEED);
const wallet = { address: key.address, publicKey: key.publicKey };

function payment(networkPassphrase: string) {
  return new TransactionBuilder(new Account(keypair.publicKey(), '7'), { fee: BASE_FEE, networkPassphrase })
    .addOperation(Operation.payment({ destination: keypair.publicKey(), asset: Asset.native(), amount: '1' }))
    .setTimeout(60)
    .build();
}

describe('stellarSigner', () => {
  it("derives the keypair's G address", () => {
    assert.equal(key.address, keypair.publicKey());
  });

  it('signs the UTF-8 bytes of a message (no SEP-0053 envelope), as hex the SDK verifies', async () => {
    const signature = Buffer.from(await stellarSigner.signMessage('hello ✓', key), 'hex');
    assert.equal(keypair.verify(Buffer.from('hello ✓'), signature), true);
    assert.equal(keypair.verify(Buffer.from('hello'), signature), false);
    const data = Buffer.from('raw bytes');
    assert.equal(keypair.verify(data, Buffer.from(await stellarSigner.signRaw(data, key), 'hex')), true);
  });

  it('signs an envelope on its pool steps for the network named, which is the chain the policy sees', async () => {
    const { steps, ran } = inlineSteps(stellarPoolSteps);
    const tx = payment(Networks.TESTNET);
    const prepared = await stellarSigner.prepareTransaction!(
      { transaction: tx.toXDR(), networkPassphrase: Networks.TESTNET },
      wallet,
      steps,
    );
    assert.equal(prepared.chainId, Networks.TESTNET);
    const { signedTransaction } = await prepared.sign(key);
    assert.deepEqual(ran, ['prepareStellarTransaction', 'attachStellarSignature']);
    tx.sign(keypair);
    assert.equal(signedTransaction, tx.toXDR());
  });

  it('names the body field at fault', async () => {
    const { steps } = inlineSteps(stellarPoolSteps);
    await assert.rejects(
      stellarSigner.prepareTransaction!({ transaction: 'AAAA', networkPassphrase: Networks.TESTNET }, wallet, steps),
      (error: unknown) => error instanceof ChainInputError && error.field === 'transaction',
    );
    await assert.rejects(
      stellarSigner.prepareTransaction!(
        { transaction: payment(Networks.TESTNET).toXDR(), networkPassphrase: ' ' },
        wallet,
        steps,
      ),
      (error: unknown) => error instanceof ChainInputError && error.field === 'networkPassphrase',
    );
  });
});
