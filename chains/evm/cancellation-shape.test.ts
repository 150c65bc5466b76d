import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isCancellationOf } from './cancellation-shape.ts';
import type { EvmTransactionInput } from './prepare-evm-transaction.ts';

const WALLET = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';
const type2: EvmTransactionInput = {
  to: WALLET.toLowerCase(),
  value: '0',
  chainId: 31337,
  type: 2,
  nonce: 4,
  gasLimit: '21000',
  maxFeePerGas: '3000000000',
  maxPriorityFeePerGas: '2000000000',
  data: '0x',
};

test('exactly the spec shape cancels the payment at that nonce', () => {
  assert.equal(isCancellationOf(type2, WALLET, 31337, 4), true);
  const { value: _v, data: _d, ...bare } = type2;
  assert.equal(isCancellationOf(bare, WALLET, 31337, 4), true, 'value and data may be omitted');
  assert.equal(
    isCancellationOf(
      { to: WALLET, chainId: 31337, type: 0, nonce: 4, gasLimit: '21000', gasPrice: '1' },
      WALLET,
      31337,
      4,
    ),
    true,
  );
  for (const [change, why] of [
    [{ to: '0x000000000000000000000000000000000000bEEF' }, 'to another address'],
    [{ nonce: 5 }, 'another nonce'],
    [{ chainId: 1 }, 'another chain'],
    [{ value: '1' }, 'a value'],
    [{ data: '0x00' }, 'data'],
    [{ gasLimit: '21001' }, 'another gas limit'],
    [{ maxPriorityFeePerGas: '4000000000' }, 'a tip above the cap'],
    [{ maxFeePerGas: '0', maxPriorityFeePerGas: '0' }, 'a zero cap'],
    [{ maxPriorityFeePerGas: undefined }, 'no explicit tip'],
    [{ gasPrice: '5' }, 'type 2 with a gas price'],
    [{ type: 1 }, 'type 1'],
  ] as const) {
    assert.equal(isCancellationOf({ ...type2, ...change } as EvmTransactionInput, WALLET, 31337, 4), false, why);
  }
  assert.equal(
    isCancellationOf(
      { to: WALLET, chainId: 31337, type: 0, nonce: 4, gasLimit: '21000', gasPrice: '0' },
      WALLET,
      31337,
      4,
    ),
    false,
    'a zero gas price',
  );
});
