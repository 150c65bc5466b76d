import { USDC_DECIMALS } from './lending-protocol.ts';

const SCALE = 10n ** BigInt(USDC_DECIMALS);

/**
 * Writes base units (10^-6 USDC) as the canonical decimal string of USDC: no leading zeros, no trailing zeros after
 * the point, and no point for a whole amount (`1500000n` → `"1.5"`, `1n` → `"0.000001"`, `0n` → `"0"`). It is
 * the normalized form of what `parseUsdcAmount` accepts: `formatUsdcAmount(parseUsdcAmount(s))` for any accepted `s`.
 * Throws a RangeError on a negative amount.
 */
export function formatUsdcAmount(baseUnits: bigint): string {
  if (baseUnits < 0n) throw new RangeError('a USDC amount is never negative');
  const whole = baseUnits / SCALE;
  const fraction = (baseUnits % SCALE).toString().padStart(USDC_DECIMALS, '0').replace(/0+$/, '');
  return fraction === '' ? whole.toString() : `${whole}.${fraction}`;
}
