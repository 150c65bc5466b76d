/**
 * The fees of an EVM replacement (spec, "Transfer", EVM rules, and the "Auto-retry `state`" table): at least 12.5%
 * above the previous attempt's, rounded up (for type 2 both the cap and the tip), following the market when it is
 * higher, within the payment's ceiling on `gasLimit × maxFeePerGas` (or `× gasPrice`). Pure: the caller reads the
 * market and the balance. The answer is one of:
 * - `replace` with the new fees;
 * - `wait` (the payment stays active, no bump, checked again later): the wallet cannot pay the replacement's most
 *   fee, or the base fee plus the tip exceeds what the ceiling allows per gas (no replacement under it could be
 *   included now);
 * - `stop`: the minimum increase does not fit the ceiling, which no later market can change.
 */

export interface EvmFees {
  type: 0 | 2;
  gasLimit: bigint;
  maxFeePerGas?: bigint;
  maxPriorityFeePerGas?: bigint;
  gasPrice?: bigint;
}

/** What the node says now: the base fee (absent on chains without one), its tip, and its legacy price. */
export interface EvmMarket {
  baseFee?: bigint;
  tip: bigint;
  gasPrice: bigint;
}

export type ReplacementDecision =
  | { kind: 'replace'; fees: EvmFees }
  | { kind: 'wait'; reason: 'INSUFFICIENT_FUNDS_FOR_REPLACEMENT' | 'BASE_FEE_ABOVE_CEILING' }
  | { kind: 'stop'; reason: 'FEE_CEILING_REACHED' };

/** +12.5%, rounded up: the least a replacement offers over the fee it replaces. */
export function bumped(fee: bigint): bigint {
  return fee + (fee + 7n) / 8n;
}

const max = (a: bigint, b: bigint) => (a > b ? a : b);
const min = (a: bigint, b: bigint) => (a < b ? a : b);

/**
 * The next attempt's fees after `previous`, for a payment whose attempts may each cost at most `ceilingWei`, from a
 * wallet holding `balance` that sends `value` wei with it.
 */
export function replacementFees(
  previous: EvmFees,
  market: EvmMarket,
  ceilingWei: bigint,
  balance: bigint,
  value: bigint,
): ReplacementDecision {
  const { gasLimit } = previous;
  /** The most per gas the ceiling allows. */
  const perGasCeiling = ceilingWei / gasLimit;
  let fees: EvmFees;
  if (previous.type === 2) {
    const minTip = bumped(previous.maxPriorityFeePerGas!);
    const minCap = bumped(previous.maxFeePerGas!);
    if (minCap > perGasCeiling) return { kind: 'stop', reason: 'FEE_CEILING_REACHED' };
    const tip = max(minTip, market.tip);
    // Included now needs base fee plus tip under the cap; the ceiling may not allow it yet.
    if (market.baseFee !== undefined && market.baseFee + minTip > perGasCeiling) {
      return { kind: 'wait', reason: 'BASE_FEE_ABOVE_CEILING' };
    }
    const wanted = market.baseFee === undefined ? minCap : max(minCap, 2n * market.baseFee + tip);
    const cap = min(wanted, perGasCeiling);
    fees = { type: 2, gasLimit, maxFeePerGas: cap, maxPriorityFeePerGas: min(tip, cap) };
  } else {
    const minPrice = bumped(previous.gasPrice!);
    if (minPrice > perGasCeiling) return { kind: 'stop', reason: 'FEE_CEILING_REACHED' };
    const floor = market.baseFee === undefined ? 0n : market.baseFee + market.tip;
    if (floor > perGasCeiling) return { kind: 'wait', reason: 'BASE_FEE_ABOVE_CEILING' };
    fees = { type: 0, gasLimit, gasPrice: min(max(minPrice, max(market.gasPrice, floor)), perGasCeiling) };
  }
  const most = gasLimit * (fees.type === 2 ? fees.maxFeePerGas! : fees.gasPrice!);
  if (balance < value + most) return { kind: 'wait', reason: 'INSUFFICIENT_FUNDS_FOR_REPLACEMENT' };
  return { kind: 'replace', fees };
}
