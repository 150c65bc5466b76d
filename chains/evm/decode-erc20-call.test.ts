import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { encodeFunctionData, erc20Abi } from 'viem';
import { decodeErc20Call } from './decode-erc20-call.ts';

const BOB = '0x2222222222222222222222222222222222222222';
const CHECKSUMMED = '0xCD2a3d9F938E13CD947Ec05AbC7FE734Df8DD826';
const call = (name: 'transfer' | 'approve', to: string, amount: bigint) =>
  encodeFunctionData({ abi: erc20Abi, functionName: name, args: [to as `0x${string}`, amount] });

describe('decodeErc20Call', () => {
  it('reads transfer(address,uint256) as the recipient (lower-case) and the amount, up to 2^256 - 1', () => {
    assert.deepEqual(decodeErc20Call(call('transfer', CHECKSUMMED, 5n)), {
      kind: 'transfer',
      to: CHECKSUMMED.toLowerCase(),
      amount: 5n,
    });
    assert.deepEqual(
      decodeErc20Call(
        call('transfer', BOB, 2n ** 256n - 1n)
          .toUpperCase()
          .replace('0X', '0x'),
      ),
      {
        kind: 'transfer',
        to: BOB,
        amount: 2n ** 256n - 1n,
      },
    );
  });

  it('reads approve as moving nothing', () => {
    assert.deepEqual(decodeErc20Call(call('approve', BOB, 10n ** 30n)), { kind: 'approve' });
  });

  it('refuses to read anything else: other functions, trailing or missing bytes, dirty address padding', () => {
    const transfer = call('transfer', BOB, 5n);
    const transferFrom = encodeFunctionData({ abi: erc20Abi, functionName: 'transferFrom', args: [BOB, BOB, 1n] });
    const dirty = `${transfer.slice(0, 10)}ff${transfer.slice(12)}`;
    for (const data of [
      '0x',
      '0xa9059cbb',
      `${transfer}00`,
      transfer.slice(0, -2),
      transferFrom,
      dirty,
      '0xdeadbeef',
    ]) {
      assert.equal(decodeErc20Call(data), null, data);
    }
  });
});
