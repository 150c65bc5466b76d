import { decodeAbiParameters, getAddress, type Hex } from 'viem';
import { decodeReserveConfiguration } from './decode-reserve-configuration.ts';
import { RESERVE_DATA_COMPONENTS, type ReserveData } from './lending-protocol.ts';

const RESERVE_DATA_BYTES = 15 * 32;

/**
 * Decodes the answer of Aave v3's `Pool.getReserveData(asset)`: the 15-word `ReserveDataLegacy` of v3.0 to v3.6.
 * Throws a RangeError on an answer of another length (an address that is no Aave v3 pool answers otherwise).
 */
export function decodeReserveData(data: Hex): ReserveData {
  if (!/^0x[0-9a-fA-F]*$/.test(data) || data.length !== 2 + 2 * RESERVE_DATA_BYTES) {
    throw new RangeError(`getReserveData answers ${RESERVE_DATA_BYTES} bytes; got ${(data.length - 2) / 2}`);
  }
  const [r] = decodeAbiParameters([{ type: 'tuple', components: RESERVE_DATA_COMPONENTS }], data);
  return {
    configurationBitmap: r.configuration.data,
    configuration: decodeReserveConfiguration(r.configuration.data),
    liquidityIndex: r.liquidityIndex,
    currentLiquidityRate: r.currentLiquidityRate,
    lastUpdateTimestamp: r.lastUpdateTimestamp,
    aToken: getAddress(r.aTokenAddress),
    variableDebtToken: getAddress(r.variableDebtTokenAddress),
    accruedToTreasury: r.accruedToTreasury,
  };
}
