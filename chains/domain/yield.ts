/**
 * The yield vocabulary (spec: yield routes). Part of the domain module (chains/domain/), which imports nothing.
 */

/** The chains yield runs on: Ethereum mainnet, Base, and the Sepolia test network (the protocol's test USDC). */
export const YIELD_CHAIN_IDS = [1, 8453, 11155111] as const;
export type YieldChainId = (typeof YIELD_CHAIN_IDS)[number];

export function isYieldChainId(value: unknown): value is YieldChainId {
  return typeof value === 'number' && (YIELD_CHAIN_IDS as readonly number[]).includes(value);
}
