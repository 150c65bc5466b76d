import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { getAddress } from 'viem';
import { resolveLendingMarket } from './resolve-lending-market.ts';

describe('resolveLendingMarket', () => {
  it("answers the real protocol's addresses on the three yield chains", () => {
    assert.deepEqual(resolveLendingMarket(1), {
      chainId: 1,
      pool: '0x87870Bca3F3fD6335C3F4ce8392D69350B4fA4E2',
      usdc: '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48',
    });
    assert.deepEqual(resolveLendingMarket(8453), {
      chainId: 8453,
      pool: '0xA238Dd80C259a72e81d7e4664a9801593F98d1c5',
      usdc: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
    });
    assert.deepEqual(resolveLendingMarket(11155111), {
      chainId: 11155111,
      pool: '0x6Ae43d3271ff6888e7Fc43Fd7321a503ff738951',
      usdc: '0x94a9D9AC8a22534E3FaCa9F4e7F2E2cf85d5E4C8',
    });
  });

  it("takes a chain's yield entry instead, in checksummed form, and leaves the other chains alone", () => {
    const overrides = [{ chainId: 8453, pool: `0x${'ab'.repeat(20)}`, usdc: `0x${'CD'.repeat(20)}` }];
    const market = resolveLendingMarket(8453, overrides)!;
    assert.deepEqual(market, {
      chainId: 8453,
      pool: getAddress(`0x${'ab'.repeat(20)}`),
      usdc: getAddress(`0x${'cd'.repeat(20)}`),
    });
    assert.notEqual(market.pool, market.pool.toLowerCase(), 'EIP-55 mixed case');
    assert.equal(resolveLendingMarket(1, overrides)!.pool, '0x87870Bca3F3fD6335C3F4ce8392D69350B4fA4E2');
  });

  it('has no market on other chains, even with an entry', () => {
    assert.equal(resolveLendingMarket(31337), null);
    assert.equal(resolveLendingMarket(5), null);
    assert.equal(
      resolveLendingMarket(31337, [{ chainId: 31337, pool: `0x${'1'.repeat(40)}`, usdc: `0x${'2'.repeat(40)}` }]),
      null,
    );
  });
});
