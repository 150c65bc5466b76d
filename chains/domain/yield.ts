/**
 * The yield vocabulary (spec: yield routes). Part of the domain module (chains/domain/), which imports nothing.
 */

/** The chains yield runs on: Ethereum mainnet, Base, and the Sepolia test network (the protocol's test USDC). */
export const YIELD_CHAIN_IDS = [1, 8453, 11155111] as const;
export type YieldChainId = (typeof YIELD_CHAIN_IDS)[number];

export function isYieldChainId(value: unknown): value is YieldChainId {
  return typeof value === 'number' && (YIELD_CHAIN_IDS as readonly number[]).includes(value);
}

/** What a yield operation does: put USDC into the lending market, or take it back. */
export const YIELD_ACTIONS = ['deposit', 'withdraw'] as const;
export type YieldAction = (typeof YIELD_ACTIONS)[number];

/** A yield operation's status (spec: Yield operation `status`). */
export const YIELD_STATUSES = ['pending', 'submitted', 'confirmed', 'failed', 'requires_action', 'cancelled'] as const;
export type YieldStatus = (typeof YIELD_STATUSES)[number];

/** The transactions a yield operation signs: USDC `approve` to the pool, the pool's `supply` or `withdraw`. */
export const YIELD_STEP_KINDS = ['approve', 'supply', 'withdraw'] as const;
export type YieldStepKind = (typeof YIELD_STEP_KINDS)[number];

/** Confirmations of its final transaction on the canonical chain at which an operation is `confirmed` (spec). */
export const YIELD_CONFIRMATIONS = 2;
