import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ChainRpcError } from '../payment-chain.ts';
import { tipFromFeeHistory } from './tip-from-fee-history.ts';

const history = (reward: unknown[], gasUsedRatio: unknown[]) => ({
  oldestBlock: '0x1',
  baseFeePerGas: [],
  reward,
  gasUsedRatio,
});

describe('tipFromFeeHistory', () => {
  it('takes the median of the tips paid in blocks that held transactions', () => {
    assert.equal(tipFromFeeHistory(history([['0x5'], ['0x1'], ['0x3']], [0.1, 0.2, 0.3])), 3n);
    // An even count takes the upper middle: a tip that was paid, not an average that was not.
    assert.equal(tipFromFeeHistory(history([['0x1'], ['0x2'], ['0x7'], ['0x9']], [1, 1, 1, 1])), 7n);
  });

  it('leaves empty blocks out, so a quiet chain keeps the tip its transactions paid', () => {
    assert.equal(tipFromFeeHistory(history([['0x0'], ['0x0'], ['0x4'], ['0x0']], [0, 0, 0.5, 0])), 4n);
  });

  it('keeps a zero tip when the history is all zero or has no transactions', () => {
    assert.equal(tipFromFeeHistory(history([['0x0'], ['0x0']], [0.4, 0.9])), 0n);
    assert.equal(tipFromFeeHistory(history([['0x0']], [0])), 0n);
  });

  it('refuses an answer that is not a valid history as transient RPC_UNAVAILABLE', () => {
    for (const bad of [
      null,
      '0x1',
      { reward: [['0x1']] },
      { gasUsedRatio: [0.5] },
      history([], []),
      history([['0x1']], [0.5, 0.5]),
      history([['0x1', '0x2']], [0.5]),
      history([[]], [0.5]),
      history([['1']], [0.5]),
      history([['0x01']], [0.5]),
      history([[1]], [0.5]),
      history([['0x1']], [-1]),
      history([['0x1']], [Number.NaN]),
      history([['0x1']], ['0.5']),
      history([`0x${'f'.repeat(65)}`], [0.5]),
    ]) {
      assert.throws(
        () => tipFromFeeHistory(bad),
        (error: unknown) => error instanceof ChainRpcError && error.transient && error.code === 'RPC_UNAVAILABLE',
        JSON.stringify(bad),
      );
    }
  });
});
