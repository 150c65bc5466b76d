import { ChainRpcError } from '../payment-chain.ts';

const QUANTITY = /^0x(?:0|[1-9a-fA-F][0-9a-fA-F]*)$/;

function invalid(problem: string): ChainRpcError {
  return new ChainRpcError(
    'transient',
    'RPC_UNAVAILABLE',
    `the chain's RPC node gave no usable fee history to price the priority fee: ${problem}`,
  );
}

/**
 * The priority fee (wei per gas) that recent blocks paid, from an `eth_feeHistory` answer requested with exactly
 * one reward percentile: the median, over the blocks that held transactions, of each block's reward at that
 * percentile. Blocks with no gas used pay no tip by definition and are left out, so that a quiet chain does not
 * drag the tip to zero; with no such block, or all of them at zero, the tip is zero (the spec's "all-zero history
 * keeps a zero tip"). Throws a transient `ChainRpcError` RPC_UNAVAILABLE when the answer is not a valid history.
 */
export function tipFromFeeHistory(history: unknown): bigint {
  if (typeof history !== 'object' || history === null) throw invalid('the answer is not an object');
  const { reward, gasUsedRatio } = history as { reward?: unknown; gasUsedRatio?: unknown };
  if (!Array.isArray(gasUsedRatio)) throw invalid('gasUsedRatio is not a list');
  if (!Array.isArray(reward)) throw invalid('reward is not a list');
  if (reward.length !== gasUsedRatio.length) {
    throw invalid(`${reward.length} rewards for ${gasUsedRatio.length} blocks`);
  }
  if (reward.length === 0) throw invalid('it covers no block');
  const paid: bigint[] = [];
  for (let i = 0; i < reward.length; i++) {
    const ratio = gasUsedRatio[i];
    const rewards = reward[i];
    if (typeof ratio !== 'number' || !Number.isFinite(ratio) || ratio < 0) {
      throw invalid(`gasUsedRatio[${i}] is not a non-negative number`);
    }
    if (!Array.isArray(rewards) || rewards.length !== 1) throw invalid(`reward[${i}] is not a one-percentile list`);
    const tip = rewards[0];
    if (typeof tip !== 'string' || !QUANTITY.test(tip) || tip.length > 66) {
      throw invalid(`reward[${i}][0] is not a hex quantity`);
    }
    if (ratio > 0) paid.push(BigInt(tip));
  }
  if (paid.length === 0) return 0n;
  paid.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return paid[paid.length >> 1]!;
}
