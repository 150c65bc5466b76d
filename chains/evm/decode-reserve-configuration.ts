import type { ReserveConfiguration } from './lending-protocol.ts';

const bits = (bitmap: bigint, start: number, width: number): bigint =>
  (bitmap >> BigInt(start)) & ((1n << BigInt(width)) - 1n);

/**
 * Decodes Aave v3's reserve configuration bitmap (its ReserveConfiguration library; the positions used here are
 * the same from v3.0 to v3.6): LTV bits 0–15, liquidation threshold 16–31, decimals 48–55, active 56, frozen 57,
 * paused 60, supply cap 116–151 in whole tokens (0: no cap).
 */
export function decodeReserveConfiguration(bitmap: bigint): ReserveConfiguration {
  if (bitmap < 0n || bitmap >= 1n << 256n) throw new RangeError('a reserve configuration is a uint256');
  return {
    ltv: Number(bits(bitmap, 0, 16)),
    liquidationThreshold: Number(bits(bitmap, 16, 16)),
    decimals: Number(bits(bitmap, 48, 8)),
    active: bits(bitmap, 56, 1) === 1n,
    frozen: bits(bitmap, 57, 1) === 1n,
    paused: bits(bitmap, 60, 1) === 1n,
    supplyCap: bits(bitmap, 116, 36),
  };
}
