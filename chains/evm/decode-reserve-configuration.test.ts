import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { encodeReserveConfiguration } from '../../fixtures/lending-protocol.ts';
import { decodeReserveConfiguration } from './decode-reserve-configuration.ts';

describe('decodeReserveConfiguration', () => {
  it("reads each field from Aave's bit positions", () => {
    const bitmap =
      (2_000_000_000n << 116n) | // supply cap: 2 billion whole tokens
      (1n << 60n) | // paused
      (1n << 56n) | // active
      (6n << 48n) | // decimals
      (10_450n << 32n) | // liquidation bonus (not read)
      (7_800n << 16n) |
      7_500n;
    assert.deepEqual(decodeReserveConfiguration(bitmap), {
      ltv: 7500,
      liquidationThreshold: 7800,
      decimals: 6,
      active: true,
      frozen: false,
      paused: true,
      supplyCap: 2_000_000_000n,
    });
  });

  it('takes the supply cap from bits 116 to 151 only: its neighbours never leak in', () => {
    const maxCap = (1n << 36n) - 1n;
    const neighbours = (1n << 115n) | (1n << 152n) | (((1n << 80n) - 1n) << 36n); // bit 115, bit 152, the borrow cap
    assert.equal(decodeReserveConfiguration(neighbours).supplyCap, 0n);
    assert.equal(decodeReserveConfiguration((maxCap << 116n) | neighbours).supplyCap, maxCap);
    assert.equal(decodeReserveConfiguration(2n ** 256n - 1n).supplyCap, maxCap);
    assert.equal(decodeReserveConfiguration(0n).supplyCap, 0n, 'no cap');
  });

  it('refuses what is not a uint256', () => {
    assert.throws(() => decodeReserveConfiguration(-1n), RangeError);
    assert.throws(() => decodeReserveConfiguration(2n ** 256n), RangeError);
  });

  it("decodes what the local protocol's encoder wrote, whatever the other bits", () => {
    fc.assert(
      fc.property(
        fc.record({
          ltv: fc.integer({ min: 0, max: 0xffff }),
          liquidationThreshold: fc.integer({ min: 0, max: 0xffff }),
          decimals: fc.integer({ min: 0, max: 0xff }),
          active: fc.boolean(),
          frozen: fc.boolean(),
          paused: fc.boolean(),
          supplyCap: fc.bigInt({ min: 0n, max: (1n << 36n) - 1n }),
        }),
        fc.bigInt({ min: 0n, max: 2n ** 256n - 1n }),
        (fields, background) => {
          assert.deepEqual(decodeReserveConfiguration(encodeReserveConfiguration(fields, background)), { ...fields });
        },
      ),
      { numRuns: 1_000 },
    );
  });
});
