import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { encodeFunctionData, erc20Abi } from 'viem';
import { extractEvmTransactionFacts } from './extract-evm-transaction-facts.ts';
import { extractEvmTransferFacts } from './extract-evm-transfer-facts.ts';
import type { EvmTransactionInput } from './prepare-evm-transaction.ts';
import { prepareEvmTransaction } from './prepare-evm-transaction.ts';

const BOB = '0xbBbBBBBbbBBBbbbBbbBbbbbBBbBbbbbBbBbbBBbB';
const TOKEN = '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48';
const bob = BOB.toLowerCase();
const token = TOKEN.toLowerCase();

/** A partner's transaction as sign-transaction receives it, checked the way the route checks it. */
function facts(fields: Partial<EvmTransactionInput>) {
  const input = {
    chainId: 8453,
    type: 2,
    nonce: 7,
    gasLimit: '60000',
    maxFeePerGas: '30',
    maxPriorityFeePerGas: '1',
    ...fields,
  };
  const prepared = prepareEvmTransaction(input as EvmTransactionInput);
  return extractEvmTransactionFacts({ ...prepared.transaction, chainId: prepared.chainId });
}

const erc20 = (name: 'transfer' | 'approve', to: string, amount: bigint) =>
  encodeFunctionData({ abi: erc20Abi, functionName: name, args: [to as `0x${string}`, amount] });

describe('extractEvmTransactionFacts', () => {
  it('reads a native transfer: network, tx.* and the payment, counted in full', () => {
    assert.deepEqual(facts({ to: BOB, value: '1000000000000000000' }), {
      network: 'eip155:8453',
      facts: {
        'tx.chainId': '8453',
        'tx.value': '1000000000000000000',
        'tx.to': bob,
        'tx.selector': '0x',
        to: bob,
        value: '1000000000000000000',
        asset: 'native',
      },
      spend: { moved: [{ asset: 'native', amount: '1000000000000000000' }], complete: true },
    });
  });

  it('reads an ERC-20 transfer as a payment of the token to its recipient (legacy type 0 too)', () => {
    const data = erc20('transfer', BOB, 2500n);
    assert.deepEqual(
      facts({ to: TOKEN, data, type: 0, gasPrice: '5', maxFeePerGas: undefined, maxPriorityFeePerGas: undefined }),
      {
        network: 'eip155:8453',
        facts: {
          'tx.chainId': '8453',
          'tx.value': '0',
          'tx.to': token,
          'tx.selector': '0xa9059cbb',
          to: bob,
          value: '2500',
          asset: token,
        },
        spend: {
          moved: [
            { asset: 'native', amount: '0' },
            { asset: token, amount: '2500' },
          ],
          complete: true,
        },
      },
    );
  });

  it('counts both amounts of a token transfer that also carries value, with no single payment', () => {
    const read = facts({ to: TOKEN, value: '3', data: erc20('transfer', BOB, 4n) });
    assert.equal(read.facts.to, undefined);
    assert.equal(read.facts.asset, undefined);
    assert.deepEqual(read.spend, {
      moved: [
        { asset: 'native', amount: '3' },
        { asset: token, amount: '4' },
      ],
      complete: true,
    });
  });

  it('counts an approve as moving no token, and gives it no payment facts', () => {
    const read = facts({ to: TOKEN, data: erc20('approve', BOB, 10n ** 30n) });
    assert.equal(read.facts['tx.selector'], '0x095ea7b3');
    assert.equal(read.facts.to, undefined);
    assert.deepEqual(read.spend, { moved: [{ asset: 'native', amount: '0' }], complete: true });
  });

  it('knows only the native value of another call, and nothing of a creation but its value', () => {
    const call = facts({
      to: TOKEN,
      value: '9',
      data: encodeFunctionData({ abi: erc20Abi, functionName: 'transferFrom', args: [BOB, BOB, 1n] }),
    });
    assert.equal(call.facts['tx.selector'], '0x23b872dd');
    assert.equal(call.facts.to, undefined);
    assert.deepEqual(call.spend, { moved: [{ asset: 'native', amount: '9' }], complete: false });
    const creation = facts({ data: '0x6080604052', value: '1' });
    assert.deepEqual(creation, {
      network: 'eip155:8453',
      facts: { 'tx.chainId': '8453', 'tx.value': '1' },
      spend: { moved: [{ asset: 'native', amount: '1' }], complete: false },
    });
  });

  it('gives the same facts for a transfer the service builds as for the transaction it becomes', () => {
    const intent = { kind: 'ERC20' as const, to: BOB, value: '0042', tokenAddress: TOKEN };
    const built = extractEvmTransactionFacts({ chainId: 1, to: TOKEN, value: 0n, data: erc20('transfer', BOB, 42n) });
    assert.deepEqual(extractEvmTransferFacts('1', intent), built);
    const nativeIntent = { kind: 'NATIVE' as const, to: BOB, value: '7' };
    assert.deepEqual(
      extractEvmTransferFacts('1', nativeIntent),
      extractEvmTransactionFacts({ chainId: 1, to: BOB, value: 7n, data: '0x' }),
    );
  });
});
