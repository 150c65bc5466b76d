import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { recoverAddress, recoverTransactionAddress, type TransactionSerialized, verifyMessage } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { inlineSteps, localWalletKey } from '../../test/helpers/local-wallet-key.ts';
import { ChainInputError } from '../chain-input-error.ts';
import { keccak256 } from '../keccak-256.ts';
import { evmPoolSteps } from './evm-pool-steps.ts';
import { evmSigner } from './evm-signer.ts';

// Anvil's first account.
const SEED = Buffer.from('ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80', 'hex');
const account = privateKeyToAccount(`0x${SEED.toString('hex')}`);
const key = localWalletKey(evmSigner, SEED);
const wallet = { address: key.address, publicKey: key.publicKey };
const TX = {
  type: 2,
  chainId: 31337,
  nonce: 3,
  gasLimit: '21000',
  maxFeePerGas: '2000000000',
  maxPriorityFeePerGas: '1000000000',
  to: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
  value: '1',
};

describe('evmSigner', () => {
  it("derives the account's checksummed address", () => {
    assert.equal(key.address, account.address);
  });

  it('signs EIP-191 messages that viem verifies', async () => {
    const signature = await evmSigner.signMessage('hello ✓', key);
    assert.match(signature, /^[0-9a-f]{130}$/);
    assert.equal(
      await verifyMessage({ address: account.address, message: 'hello ✓', signature: `0x${signature}` }),
      true,
    );
    assert.equal(
      await verifyMessage({ address: account.address, message: 'hello', signature: `0x${signature}` }),
      false,
    );
  });

  it('signs a raw 32-byte digest as is', async () => {
    const digest = keccak256(Buffer.from('payload'));
    const signature = await evmSigner.signRaw(digest, key);
    assert.equal(await recoverAddress({ hash: digest, signature: `0x${signature}` }), account.address);
    assert.equal(evmSigner.rawDigestBytes, 32);
  });

  it('prepares a transaction on its pool steps, names its chain id and signs it for the wallet', async () => {
    const { steps, ran } = inlineSteps(evmPoolSteps);
    const prepared = await evmSigner.prepareTransaction!({ transaction: TX }, wallet, steps);
    assert.equal(prepared.chainId, '31337');
    assert.deepEqual(ran, ['prepareEvmTransaction']);
    const { signedTransaction } = await prepared.sign(key);
    assert.deepEqual(ran, ['prepareEvmTransaction', 'serializeSignedEvmTransaction']);
    assert.equal(
      await recoverTransactionAddress({ serializedTransaction: signedTransaction as TransactionSerialized }),
      account.address,
    );
    assert.equal(
      signedTransaction,
      await account.signTransaction({
        type: 'eip1559',
        chainId: 31337,
        nonce: 3,
        gas: 21000n,
        maxFeePerGas: 2000000000n,
        maxPriorityFeePerGas: 1000000000n,
        to: TX.to as `0x${string}`,
        value: 1n,
      }),
    );
  });

  it('names a bad field by its path in the request body', async () => {
    const { steps } = inlineSteps(evmPoolSteps);
    const refused = (transaction: unknown, field: string) =>
      assert.rejects(evmSigner.prepareTransaction!({ transaction }, wallet, steps), (error: unknown) => {
        assert.ok(error instanceof ChainInputError);
        assert.equal(error.field, field);
        return true;
      });
    await refused({ ...TX, chainId: -1 }, 'transaction.chainId');
    await refused({ ...TX, colour: 'red' }, 'transaction.colour');
    await refused('0x02f8', 'transaction');
  });
});
