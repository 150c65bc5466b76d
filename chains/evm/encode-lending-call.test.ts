import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodeFunctionData, erc20Abi } from 'viem';
import { encodeLendingCall } from './encode-lending-call.ts';
import { AAVE_V3_POOL_ABI, type LendingMarket, WITHDRAW_ALL } from './lending-protocol.ts';

const market: LendingMarket = {
  chainId: 1,
  pool: '0x87870Bca3F3fD6335C3F4ce8392D69350B4fA4E2',
  usdc: '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48',
};
const wallet = '0x1111111111111111111111111111111111111111';

describe('encodeLendingCall', () => {
  it('approves the Pool for exactly the amount, on USDC', () => {
    const { to, data } = encodeLendingCall(market, { kind: 'approve', amount: 2_500_000n });
    assert.equal(to, market.usdc);
    assert.equal(data.slice(0, 10), '0x095ea7b3', 'approve(address,uint256)');
    assert.deepEqual(decodeFunctionData({ abi: erc20Abi, data }).args, [market.pool, 2_500_000n]);
  });

  it('supplies USDC on behalf of the wallet with referral code 0, on the Pool', () => {
    const { to, data } = encodeLendingCall(market, { kind: 'supply', amount: 1n, onBehalfOf: wallet });
    assert.equal(to, market.pool);
    assert.equal(data.slice(0, 10), '0x617ba037', 'supply(address,uint256,address,uint16)');
    assert.equal(data.length, 2 + 2 * (4 + 4 * 32));
    assert.deepEqual(decodeFunctionData({ abi: AAVE_V3_POOL_ABI, data }).args, [market.usdc, 1n, wallet, 0]);
  });

  it('withdraws an amount, or everything with 2^256 - 1, to the wallet', () => {
    const some = encodeLendingCall(market, { kind: 'withdraw', amount: 7n, to: wallet });
    assert.equal(some.to, market.pool);
    assert.equal(some.data.slice(0, 10), '0x69328dec', 'withdraw(address,uint256,address)');
    assert.deepEqual(decodeFunctionData({ abi: AAVE_V3_POOL_ABI, data: some.data }).args, [market.usdc, 7n, wallet]);
    const all = encodeLendingCall(market, { kind: 'withdraw', amount: WITHDRAW_ALL, to: wallet });
    assert.equal(all.data.slice(10 + 64, 10 + 128), 'f'.repeat(64));
  });

  it('never approves an unlimited amount, and refuses amounts no caller should send', () => {
    assert.throws(() => encodeLendingCall(market, { kind: 'approve', amount: WITHDRAW_ALL }), /never unlimited/);
    assert.throws(() => encodeLendingCall(market, { kind: 'supply', amount: WITHDRAW_ALL, onBehalfOf: wallet }));
    for (const amount of [0n, -1n, WITHDRAW_ALL + 1n]) {
      assert.throws(() => encodeLendingCall(market, { kind: 'approve', amount }), RangeError);
      assert.throws(() => encodeLendingCall(market, { kind: 'supply', amount, onBehalfOf: wallet }), RangeError);
      assert.throws(() => encodeLendingCall(market, { kind: 'withdraw', amount, to: wallet }), RangeError);
    }
  });
});
