import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { encodeAbiParameters } from 'viem';
import { decodeReserveData } from './decode-reserve-data.ts';
import { RESERVE_DATA_COMPONENTS } from './lending-protocol.ts';

const A_TOKEN = '0x98C23E9d8f34FEFb1B7BD6a91B7FF122F4e16F5c';
const DEBT_TOKEN = '0x72E95b8931767C79bA4EeE721354d6E99a61D004';

function reserveData(overrides: { configuration?: bigint; aTokenAddress?: `0x${string}` } = {}) {
  return encodeAbiParameters(
    [{ type: 'tuple', components: RESERVE_DATA_COMPONENTS }],
    [
      {
        configuration: { data: overrides.configuration ?? (1n << 56n) | (6n << 48n) | (1_000_000_000n << 116n) },
        liquidityIndex: 1_051_234_567_890_123_456_789_012_345n,
        currentLiquidityRate: 41_234_567_890_123_456_789_012n,
        variableBorrowIndex: 10n ** 27n,
        currentVariableBorrowRate: 0n,
        currentStableBorrowRate: 0n,
        lastUpdateTimestamp: 1_750_000_000,
        id: 3,
        aTokenAddress: overrides.aTokenAddress ?? A_TOKEN,
        stableDebtTokenAddress: '0x0000000000000000000000000000000000000000',
        variableDebtTokenAddress: DEBT_TOKEN,
        interestRateStrategyAddress: '0x0000000000000000000000000000000000000001',
        accruedToTreasury: 12_345n,
        unbacked: 0n,
        isolationModeTotalDebt: 0n,
      },
    ],
  );
}

describe('decodeReserveData', () => {
  it('reads the 15-word tuple: aToken, index, configuration with its supply cap', () => {
    const data = reserveData();
    assert.equal(data.length, 2 + 2 * 480, 'fifteen static words');
    const decoded = decodeReserveData(data);
    assert.equal(decoded.aToken, A_TOKEN);
    assert.equal(decoded.variableDebtToken, DEBT_TOKEN);
    assert.equal(decoded.liquidityIndex, 1_051_234_567_890_123_456_789_012_345n);
    assert.equal(decoded.currentLiquidityRate, 41_234_567_890_123_456_789_012n);
    assert.equal(decoded.lastUpdateTimestamp, 1_750_000_000);
    assert.equal(decoded.accruedToTreasury, 12_345n);
    assert.equal(decoded.configuration.supplyCap, 1_000_000_000n);
    assert.equal(decoded.configuration.decimals, 6);
    assert.equal(decoded.configuration.active, true);
    assert.equal(decoded.configurationBitmap, (1n << 56n) | (6n << 48n) | (1_000_000_000n << 116n));
  });

  it('an unlisted asset answers zeros: the zero aToken', () => {
    const decoded = decodeReserveData(`0x${'0'.repeat(960)}`);
    assert.equal(decoded.aToken, '0x0000000000000000000000000000000000000000');
    assert.equal(decoded.configuration.active, false);
  });

  it('refuses an answer of another length than 15 words', () => {
    assert.throws(() => decodeReserveData('0x'), RangeError);
    assert.throws(() => decodeReserveData(`${reserveData()}00`), RangeError);
    assert.throws(() => decodeReserveData(reserveData().slice(0, -64) as `0x${string}`), RangeError);
    assert.throws(() => decodeReserveData(`0x${'zz'.repeat(480)}`), RangeError);
  });
});
