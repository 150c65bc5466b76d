import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodeFunctionData, encodeAbiParameters, erc20Abi } from 'viem';
import { InternalError } from '../domain/errors.ts';
import { ChainRpcError } from '../payment-chain.ts';
import { AAVE_V3_POOL_ABI, type LendingMarket } from './lending-protocol.ts';
import { prepareLendingRead } from './prepare-lending-read.ts';

const market: LendingMarket = {
  chainId: 8453,
  pool: '0xA238Dd80C259a72e81d7e4664a9801593F98d1c5',
  usdc: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
};
const owner = '0x1111111111111111111111111111111111111111';
const word = (value: bigint) => encodeAbiParameters([{ type: 'uint256' }], [value]);

function callOf(read: { call: { method: string; params: unknown[] } }) {
  assert.equal(read.call.method, 'eth_call');
  const [{ to, data }, tag] = read.call.params as [{ to: string; data: `0x${string}` }, string];
  return { to, data, tag };
}

describe('prepareLendingRead', () => {
  it("reads the Pool's allowance on USDC, at the latest block unless told", () => {
    const read = prepareLendingRead(market, { kind: 'allowance', owner });
    const { to, data, tag } = callOf(read);
    assert.equal(to, market.usdc);
    assert.equal(tag, 'latest');
    assert.deepEqual(decodeFunctionData({ abi: erc20Abi, data }).args, [owner, market.pool]);
    assert.equal(read.decode(word(2_500_000n)), 2_500_000n);
  });

  it('reads a balance of any token, at a block number given', () => {
    const aToken = '0x2222222222222222222222222222222222222222';
    const read = prepareLendingRead(market, { kind: 'balanceOf', token: aToken, owner }, 1_234n);
    const { to, data, tag } = callOf(read);
    assert.equal(to, aToken);
    assert.equal(tag, '0x4d2');
    assert.deepEqual(decodeFunctionData({ abi: erc20Abi, data }).args, [owner]);
    assert.equal(read.decode(word(7n)), 7n);
  });

  it("reads the account's debt from getUserAccountData, and the reserve from getReserveData", () => {
    const account = prepareLendingRead(market, { kind: 'userAccountData', user: owner }, 'finalized');
    assert.equal(callOf(account).to, market.pool);
    assert.equal(callOf(account).tag, 'finalized');
    assert.deepEqual(decodeFunctionData({ abi: AAVE_V3_POOL_ABI, data: callOf(account).data }).args, [owner]);
    const six = encodeAbiParameters(
      Array.from({ length: 6 }, () => ({ type: 'uint256' })),
      [500n, 300n, 0n, 7800n, 7500n, 10n ** 18n],
    );
    assert.deepEqual(account.decode(six), {
      totalCollateralBase: 500n,
      totalDebtBase: 300n,
      availableBorrowsBase: 0n,
      currentLiquidationThreshold: 7800n,
      ltv: 7500n,
      healthFactor: 10n ** 18n,
    });
    const reserve = prepareLendingRead(market, { kind: 'reserveData' });
    assert.deepEqual(decodeFunctionData({ abi: AAVE_V3_POOL_ABI, data: callOf(reserve).data }).args, [market.usdc]);
    assert.equal(reserve.decode(`0x${'0'.repeat(960)}`).aToken, '0x0000000000000000000000000000000000000000');
  });

  it('an empty or short answer is a market that is not the protocol; a non-hex one, a broken node', () => {
    const read = prepareLendingRead(market, { kind: 'reserveData' });
    for (const answer of ['0x', word(1n)]) {
      assert.throws(
        () => read.decode(answer),
        (error: unknown) => error instanceof InternalError && error.code === 'LENDING_MARKET_INVALID',
      );
    }
    assert.throws(
      () => prepareLendingRead(market, { kind: 'allowance', owner }).decode('0x'),
      (error: unknown) => error instanceof InternalError && /check the chains file/.test(error.message),
    );
    for (const answer of [null, 12, 'latest', '0x123']) {
      assert.throws(
        () => read.decode(answer),
        (error: unknown) => error instanceof ChainRpcError && error.code === 'RPC_UNAVAILABLE' && error.transient,
      );
    }
  });
});
