import { isYieldChainId, type YieldChainId } from '../domain/yield.ts';
import { checksumEvmAddress } from './checksum-address.ts';
import type { LendingMarket } from './lending-protocol.ts';

/**
 * The real Aave v3 markets: the Pool and native USDC on Ethereum mainnet and Base, and on Sepolia the Pool with the
 * protocol's test USDC. A chains file's `yield` entry replaces a chain's pair.
 */
export const DEFAULT_LENDING_MARKETS: Readonly<Record<YieldChainId, Omit<LendingMarket, 'chainId'>>> = {
  1: { pool: '0x87870Bca3F3fD6335C3F4ce8392D69350B4fA4E2', usdc: '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48' },
  8453: { pool: '0xA238Dd80C259a72e81d7e4664a9801593F98d1c5', usdc: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913' },
  11155111: { pool: '0x6Ae43d3271ff6888e7Fc43Fd7321a503ff738951', usdc: '0x94a9D9AC8a22534E3FaCa9F4e7F2E2cf85d5E4C8' },
};

/** A chains file `yield` entry, as its schema accepted it (api/chains-config.ts). */
export interface LendingMarketOverride {
  chainId: number;
  pool: string;
  usdc: string;
}

/**
 * The market of a chain: its `yield` entry from the chains file when there is one, else the real protocol's
 * addresses. Null for a chain yield does not run on (the spec's three chain ids only).
 */
export function resolveLendingMarket(
  chainId: number,
  overrides: readonly LendingMarketOverride[] = [],
): LendingMarket | null {
  if (!isYieldChainId(chainId)) return null;
  const entry = overrides.find((o) => o.chainId === chainId) ?? DEFAULT_LENDING_MARKETS[chainId];
  return {
    chainId,
    pool: checksumEvmAddress(entry.pool) as `0x${string}`,
    usdc: checksumEvmAddress(entry.usdc) as `0x${string}`,
  };
}
