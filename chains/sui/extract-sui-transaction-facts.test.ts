import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519';
import { Transaction } from '@mysten/sui/transactions';
import { extractSuiTransactionFacts } from './extract-sui-transaction-facts.ts';
import { prepareSuiTransaction } from './prepare-sui-transaction.ts';

const wallet = Ed25519Keypair.fromSecretKey(new Uint8Array(32).fill(7)).toSuiAddress();
const sponsor = Ed25519Keypair.fromSecretKey(new Uint8Array(32).fill(8)).toSuiAddress();
const recipient = `0x${'22'.repeat(32)}`;
const GAS_COIN = {
  objectId: `0x${'11'.repeat(32)}`,
  version: '5',
  digest: '4vJ9JU1bJJE96FWSJKvHsmmFADCg4gpZQff4P3bkLKi',
};

/** TransactionData as `Transaction.build()` makes it, through the route's own check. */
async function build(fill: (tx: Transaction) => void, gasOwner = wallet): Promise<Uint8Array> {
  const tx = new Transaction();
  tx.setSender(wallet);
  tx.setGasOwner(gasOwner);
  tx.setGasPrice(1000);
  tx.setGasBudget(5_000_000);
  tx.setGasPayment([GAS_COIN]);
  fill(tx);
  const bytes = await tx.build();
  return prepareSuiTransaction(Buffer.from(bytes).toString('base64')).bytes;
}

const payment = (amount: bigint) => (tx: Transaction) => {
  const [coin] = tx.splitCoins(tx.gas, [amount]);
  tx.transferObjects([coin!], recipient);
};

const unknown = { network: 'sui', facts: {}, spend: { moved: [], complete: false } };

describe('extractSuiTransactionFacts', () => {
  it('reads SplitCoins(GasCoin) then TransferObjects as a payment of SUI', async () => {
    assert.deepEqual(extractSuiTransactionFacts(await build(payment(123_456_789n)), wallet), {
      network: 'sui',
      facts: { to: recipient, value: '123456789', asset: 'native' },
      spend: { moved: [{ asset: 'native', amount: '123456789' }], complete: true },
    });
  });

  it("knows nothing of other shapes: two amounts, a Move call, a sponsor's gas coin, another sender", async () => {
    const two = await build((tx) => {
      const [a, b] = tx.splitCoins(tx.gas, [1n, 2n]);
      tx.transferObjects([a!, b!], recipient);
    });
    assert.deepEqual(extractSuiTransactionFacts(two, wallet), unknown);
    const call = await build((tx) => {
      tx.moveCall({ target: '0x2::coin::zero', typeArguments: ['0x2::sui::SUI'] });
    });
    assert.deepEqual(extractSuiTransactionFacts(call, wallet), unknown);
    assert.deepEqual(extractSuiTransactionFacts(await build(payment(5n), sponsor), wallet), unknown);
    assert.deepEqual(extractSuiTransactionFacts(await build(payment(5n)), sponsor), unknown);
    assert.deepEqual(extractSuiTransactionFacts(Uint8Array.of(0, 1, 2), wallet), unknown);
  });
});
