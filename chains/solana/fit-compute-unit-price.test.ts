import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { MAX_COMPUTE_UNIT_PRICE } from './choose-compute-unit-price.ts';
import { fitComputeUnitPrice, priorityFeeLamports } from './fit-compute-unit-price.ts';

describe('priorityFeeLamports', () => {
  it('is limit × price in micro-lamports, rounded up to a lamport', () => {
    assert.equal(priorityFeeLamports(1_000, 0), 0n);
    assert.equal(priorityFeeLamports(1_000, 1), 1n);
    assert.equal(priorityFeeLamports(1_000, 1_000), 1n);
    assert.equal(priorityFeeLamports(1_000, 1_001), 2n);
    assert.equal(priorityFeeLamports(200_000, 1_000_000), 200_000n);
  });
});

describe('fitComputeUnitPrice', () => {
  it("bids the market's price when it fits the ceiling", () => {
    assert.deepEqual(fitComputeUnitPrice({ market: 5_000, computeUnitLimit: 1_000, ceiling: 100_000n }), {
      fits: true,
      computeUnitPrice: 5_000,
      baseFee: 5_000n,
      priorityFee: 5n,
    });
  });

  it('lowers the price until base plus priority fee fit the ceiling', () => {
    const r = fitComputeUnitPrice({ market: 1_000_000, computeUnitLimit: 30_000, ceiling: 5_010n });
    assert.deepEqual(r, { fits: true, computeUnitPrice: 333, baseFee: 5_000n, priorityFee: 10n });
  });

  it('a ceiling of exactly the base fee bids nothing; below it nothing fits', () => {
    assert.deepEqual(fitComputeUnitPrice({ market: 50, computeUnitLimit: 1_000, ceiling: 5_000n }), {
      fits: true,
      computeUnitPrice: 0,
      baseFee: 5_000n,
      priorityFee: 0n,
    });
    assert.deepEqual(fitComputeUnitPrice({ market: 0, computeUnitLimit: 1_000, ceiling: 4_999n }), {
      fits: false,
      baseFee: 5_000n,
    });
  });

  it('a rebuilt attempt bids at least 12.5% above the previous one (rounded up), or the market if higher', () => {
    const r1 = fitComputeUnitPrice({ market: 100, computeUnitLimit: 1_000, ceiling: 10n ** 9n, raiseFrom: 1_000 });
    assert.equal(r1.fits && r1.computeUnitPrice, 1_125);
    const r2 = fitComputeUnitPrice({ market: 100, computeUnitLimit: 1_000, ceiling: 10n ** 9n, raiseFrom: 9 });
    assert.equal(r2.fits && r2.computeUnitPrice, 100);
    const r3 = fitComputeUnitPrice({ market: 0, computeUnitLimit: 1_000, ceiling: 10n ** 9n, raiseFrom: 1 });
    assert.equal(r3.fits && r3.computeUnitPrice, 2, '1 × 1.125 rounds up to 2');
    const r4 = fitComputeUnitPrice({ market: 0, computeUnitLimit: 1_000, ceiling: 10n ** 9n, raiseFrom: 0 });
    assert.equal(r4.fits && r4.computeUnitPrice, 0);
  });

  it('never fits a fee above the ceiling, never bids above the cap, never bids more than asked', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 2_000_000 }),
        fc.integer({ min: 0, max: 1_400_000 }),
        fc.bigInt({ min: 0n, max: 10n ** 12n }),
        fc.option(fc.integer({ min: 0, max: MAX_COMPUTE_UNIT_PRICE }), { nil: undefined }),
        (market, computeUnitLimit, ceiling, raiseFrom) => {
          const r = fitComputeUnitPrice({
            market,
            computeUnitLimit,
            ceiling,
            ...(raiseFrom === undefined ? {} : { raiseFrom }),
          });
          if (!r.fits) return r.baseFee > ceiling;
          const wanted = Math.max(market, raiseFrom === undefined ? 0 : Math.ceil((raiseFrom * 9) / 8));
          return (
            r.baseFee + r.priorityFee <= ceiling &&
            r.priorityFee === priorityFeeLamports(computeUnitLimit, r.computeUnitPrice) &&
            r.computeUnitPrice <= MAX_COMPUTE_UNIT_PRICE &&
            r.computeUnitPrice <= wanted &&
            r.computeUnitPrice >= 0
          );
        },
      ),
    );
  });
});
