/** The most a transfer bids per compute unit, in micro-lamports: 1 lamport per unit. */
export const MAX_COMPUTE_UNIT_PRICE = 1_000_000;

/**
 * The compute-unit price (micro-lamports) a transfer bids, from `getRecentPrioritizationFees` for the accounts it
 * writes: the 75th percentile (nearest rank) of the per-slot fees the node reports (about 150 recent slots, where
 * quiet slots count as 0), rounded up, capped at MAX_COMPUTE_UNIT_PRICE. Above the median so that a transfer
 * lands in a busy minute without a retry; capped so that a fee spike (or a node reporting nonsense) cannot cost
 * more than a bounded amount. Entries that are not non-negative numbers are ignored; none at all gives 0.
 */
export function chooseComputeUnitPrice(recentFees: unknown): number {
  const fees = (Array.isArray(recentFees) ? recentFees : [])
    .map((entry) => (entry as { prioritizationFee?: unknown })?.prioritizationFee)
    .filter((fee): fee is number => typeof fee === 'number' && Number.isFinite(fee) && fee >= 0)
    .sort((a, b) => a - b);
  if (fees.length === 0) return 0;
  const rank = Math.ceil(0.75 * fees.length);
  return Math.min(Math.ceil(fees[rank - 1]!), MAX_COMPUTE_UNIT_PRICE);
}
