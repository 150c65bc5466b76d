import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { chooseComputeUnitPrice, MAX_COMPUTE_UNIT_PRICE } from './choose-compute-unit-price.ts';

const fees = (...values: unknown[]) => values.map((prioritizationFee, slot) => ({ slot, prioritizationFee }));

describe('chooseComputeUnitPrice', () => {
  it('takes the 75th percentile of the recent per-slot fees, rounded up', () => {
    assert.equal(chooseComputeUnitPrice(fees(1, 2, 3, 4)), 3);
    assert.equal(chooseComputeUnitPrice(fees(0, 0, 0, 1000)), 0);
    assert.equal(chooseComputeUnitPrice(fees(0, 1000, 1000, 1000)), 1000);
    assert.equal(chooseComputeUnitPrice(fees(10.2)), 11);
  });

  it('caps the price and ignores what is not a fee', () => {
    assert.equal(chooseComputeUnitPrice(fees(5e9, 5e9)), MAX_COMPUTE_UNIT_PRICE);
    assert.equal(chooseComputeUnitPrice(fees(-1, 'x', null, 7)), 7);
    assert.equal(chooseComputeUnitPrice([]), 0);
    assert.equal(chooseComputeUnitPrice({ value: [] }), 0);
  });
});
