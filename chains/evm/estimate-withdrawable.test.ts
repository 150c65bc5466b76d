import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { estimateWithdrawable } from './estimate-withdrawable.ts';
import type { YieldSnapshot } from './read-yield-position.ts';

function position(o: { supplied: bigint; liquidity: bigint; debt?: bigint; paused?: boolean; active?: boolean }) {
  return {
    suppliedBalance: o.supplied,
    availableLiquidity: o.liquidity,
    accountData: { totalDebtBase: o.debt ?? 0n },
    reserve: { configuration: { active: o.active ?? true, paused: o.paused ?? false } },
  } as YieldSnapshot;
}

describe('estimateWithdrawable', () => {
  it('is the supplied balance, capped by the liquidity', () => {
    assert.equal(estimateWithdrawable(position({ supplied: 5n, liquidity: 9n })), 5n);
    assert.equal(estimateWithdrawable(position({ supplied: 5n, liquidity: 3n })), 3n);
    assert.equal(estimateWithdrawable(position({ supplied: 0n, liquidity: 3n })), 0n);
  });

  it('is null with debt, and 0 while the reserve is paused or inactive', () => {
    assert.equal(estimateWithdrawable(position({ supplied: 5n, liquidity: 9n, debt: 1n })), null);
    assert.equal(estimateWithdrawable(position({ supplied: 5n, liquidity: 9n, paused: true })), 0n);
    assert.equal(estimateWithdrawable(position({ supplied: 5n, liquidity: 9n, active: false })), 0n);
  });
});
