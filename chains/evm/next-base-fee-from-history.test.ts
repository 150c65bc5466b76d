import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { nextBaseFeeFromHistory } from './next-base-fee-from-history.ts';

describe('nextBaseFeeFromHistory', () => {
  it("reads the next block's base fee: the entry after the blocks the history covers", () => {
    const history = {
      oldestBlock: '0x1',
      baseFeePerGas: ['0x3b9aca00', '0x342770c0', '0xba43b7400'],
      gasUsedRatio: [0, 0],
      reward: [['0x0'], ['0x0']],
    };
    assert.equal(nextBaseFeeFromHistory(history), 50_000_000_000n);
  });

  it('gives nothing for an answer that does not name it, so the caller keeps the latest block', () => {
    for (const bad of [
      null,
      'x',
      {},
      { baseFeePerGas: ['0x1'], gasUsedRatio: [0.5] },
      { baseFeePerGas: ['0x1', '0x2', '0x3'], gasUsedRatio: [0.5] },
      { baseFeePerGas: ['0x1', 2], gasUsedRatio: [0.5] },
      { baseFeePerGas: ['0x1', '0x02'], gasUsedRatio: [0.5] },
      { baseFeePerGas: ['0x1', `0x${'f'.repeat(65)}`], gasUsedRatio: [0.5] },
      { baseFeePerGas: ['0x1', '0x2'] },
    ]) {
      assert.equal(nextBaseFeeFromHistory(bad), undefined, JSON.stringify(bad));
    }
  });
});
