import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Value } from '@sinclair/typebox/value';
import { prepareEvmTransaction } from '../../chains/evm/prepare-evm-transaction.ts';
import { SignTransactionBodyDocumented } from './signing.ts';

// The document's `transaction` schema and the EVM adapter, which validates the route, must agree on each field.
const legacy = {
  to: '0x000000000000000000000000000000000000bEEF',
  value: '1',
  chainId: 1,
  type: 0,
  nonce: 0,
  gasLimit: '21000',
  gasPrice: '1000000000',
};
const eip1559 = {
  ...legacy,
  type: 2,
  gasPrice: undefined,
  maxFeePerGas: '2',
  maxPriorityFeePerGas: '1',
  data: '0xabcd',
};
const creation = {
  chainId: 8453,
  type: 2,
  nonce: 7,
  gasLimit: '500000',
  maxFeePerGas: '2',
  maxPriorityFeePerGas: '0',
  data: '0x6000',
};
const valid = [legacy, JSON.parse(JSON.stringify(eip1559)), creation];

const accepted = (transaction: unknown) => Value.Check(SignTransactionBodyDocumented, { transaction });
const adapterAccepts = (transaction: unknown) => {
  try {
    prepareEvmTransaction(transaction as never);
    return true;
  } catch {
    return false;
  }
};

test('the documented EVM transaction accepts what the adapter accepts', () => {
  for (const tx of valid) {
    assert.ok(adapterAccepts(tx), JSON.stringify(tx));
    assert.ok(accepted(tx), JSON.stringify(tx));
  }
  const example = (SignTransactionBodyDocumented.examples as Array<{ transaction: unknown }>)[0]!.transaction;
  assert.ok(adapterAccepts(example) && accepted(example));
});

test('the documented EVM transaction refuses what the adapter refuses, field by field', () => {
  for (const bad of [
    { ...legacy, value: '0x10' },
    { ...legacy, value: '-1' },
    { ...legacy, gasLimit: 21000 },
    { ...legacy, nonce: -1 },
    { ...legacy, nonce: 1.5 },
    { ...legacy, chainId: 0 },
    { ...legacy, type: 1 },
    { ...legacy, to: '0x1234' },
    { ...legacy, data: '0xabc' },
    { ...legacy, accessList: [] },
  ]) {
    assert.equal(adapterAccepts(bad), false, JSON.stringify(bad));
    assert.equal(accepted(bad), false, JSON.stringify(bad));
  }
});

test('SOLANA, STELLAR and SUI transactions are base64 strings in the document', () => {
  assert.ok(accepted('AQID'));
  assert.equal(accepted(''), false);
});
