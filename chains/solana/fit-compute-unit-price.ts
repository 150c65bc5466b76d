import { MAX_COMPUTE_UNIT_PRICE } from './choose-compute-unit-price.ts';

/**
 * What a signature costs on Solana: the base fee is charged per signature, a protocol constant since genesis
 * (`lamports_per_signature`); a transfer the service builds has one, the wallet's.
 */
export const LAMPORTS_PER_SIGNATURE = 5_000n;

/** The priority fee of a transaction (lamports): its compute-unit limit × price (micro-lamports), rounded up. */
export function priorityFeeLamports(computeUnitLimit: number, computeUnitPrice: number): bigint {
  return (BigInt(computeUnitLimit) * BigInt(computeUnitPrice) + 999_999n) / 1_000_000n;
}

/** What an attempt of an auto-retry transfer bids, and what it costs at most (base plus priority fee, lamports). */
export type FittedPrice =
  | { fits: true; computeUnitPrice: number; baseFee: bigint; priorityFee: bigint }
  | { fits: false; baseFee: bigint };

/**
 * The compute-unit price of an attempt whose base plus priority fee must stay within `ceiling` lamports (the spec's
 * `maxExecutionFeeLamports`): the market's price (`market`, chosen by chooseComputeUnitPrice), or for a rebuilt
 * attempt at least 12.5% above the previous attempt's price (`raiseFrom`, rounded up; the EVM rule's increase, so
 * that a rebuilt attempt outbids the one that expired), never above MAX_COMPUTE_UNIT_PRICE, and lowered until the
 * fee fits the ceiling. `fits: false` when the base fee alone is above the ceiling: no attempt can fit.
 */
export function fitComputeUnitPrice(o: {
  market: number;
  computeUnitLimit: number;
  ceiling: bigint;
  signatures?: number;
  raiseFrom?: number;
}): FittedPrice {
  const baseFee = LAMPORTS_PER_SIGNATURE * BigInt(o.signatures ?? 1);
  if (baseFee > o.ceiling) return { fits: false, baseFee };
  const raised = o.raiseFrom === undefined ? 0 : Math.ceil((o.raiseFrom * 9) / 8);
  const wanted = Math.min(Math.max(o.market, raised), MAX_COMPUTE_UNIT_PRICE);
  // The highest price whose priority fee fits what the base fee leaves: limit × price ≤ budget × 10^6.
  const budget = o.ceiling - baseFee;
  const affordable = o.computeUnitLimit === 0 ? wanted : Number((budget * 1_000_000n) / BigInt(o.computeUnitLimit));
  const computeUnitPrice = Math.min(wanted, affordable);
  return {
    fits: true,
    computeUnitPrice,
    baseFee,
    priorityFee: priorityFeeLamports(o.computeUnitLimit, computeUnitPrice),
  };
}
