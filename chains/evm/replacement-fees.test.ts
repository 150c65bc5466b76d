import assert from 'node:assert/strict';
import { test } from 'node:test';
import { bumped, type EvmFees, replacementFees } from './replacement-fees.ts';

const GWEI = 1_000_000_000n;
const type2: EvmFees = { type: 2, gasLimit: 21_000n, maxFeePerGas: 20n * GWEI, maxPriorityFeePerGas: 2n * GWEI };
const RICH = 10n ** 21n;

test('+12.5% rounded up, never less than a node asks (+10%)', () => {
  assert.equal(bumped(8n), 9n);
  assert.equal(bumped(9n), 11n, '10.125 rounds up to 11');
  assert.equal(bumped(0n), 0n);
  assert.equal(bumped(1n), 2n);
  for (const x of [1n, 7n, 100n, 12_345_678_901n, 2n ** 200n + 3n]) {
    assert.ok(bumped(x) * 8n >= x * 9n, `${x}: at least 12.5% more`);
    assert.ok((bumped(x) - 1n) * 8n < x * 9n, `${x}: the least such integer`);
  }
});

test('type 2: both fields bumped; the market wins when higher; capped at the ceiling per gas', () => {
  const calm = replacementFees(
    type2,
    { baseFee: 5n * GWEI, tip: 1n * GWEI, gasPrice: 6n * GWEI },
    10n ** 18n,
    RICH,
    1n,
  );
  assert.deepEqual(calm, {
    kind: 'replace',
    fees: { type: 2, gasLimit: 21_000n, maxFeePerGas: bumped(20n * GWEI), maxPriorityFeePerGas: bumped(2n * GWEI) },
  });
  const busy = replacementFees(
    type2,
    { baseFee: 30n * GWEI, tip: 4n * GWEI, gasPrice: 40n * GWEI },
    10n ** 18n,
    RICH,
    1n,
  );
  assert.deepEqual(busy, {
    kind: 'replace',
    fees: { type: 2, gasLimit: 21_000n, maxFeePerGas: 64n * GWEI, maxPriorityFeePerGas: 4n * GWEI },
  });
  // The ceiling allows 30 gwei a gas: the market's 64 is cut to it (the minimum, 22.5, fits).
  const capped = replacementFees(
    type2,
    { baseFee: 25n * GWEI, tip: 4n * GWEI, gasPrice: 40n * GWEI },
    21_000n * 30n * GWEI,
    RICH,
    1n,
  );
  assert.deepEqual(capped, {
    kind: 'replace',
    fees: { type: 2, gasLimit: 21_000n, maxFeePerGas: 30n * GWEI, maxPriorityFeePerGas: 4n * GWEI },
  });
});

test('the minimum increase over the ceiling stops the retry; a base fee over it, or short funds, only wait', () => {
  const ceiling = 21_000n * 22n * GWEI; // under bumped(20 gwei) = 22.5 gwei
  assert.deepEqual(replacementFees(type2, { baseFee: GWEI, tip: GWEI, gasPrice: GWEI }, ceiling, RICH, 1n), {
    kind: 'stop',
    reason: 'FEE_CEILING_REACHED',
  });
  const roomy = 21_000n * 40n * GWEI;
  assert.deepEqual(replacementFees(type2, { baseFee: 39n * GWEI, tip: GWEI, gasPrice: GWEI }, roomy, RICH, 1n), {
    kind: 'wait',
    reason: 'BASE_FEE_ABOVE_CEILING',
  });
  const replacement = replacementFees(type2, { baseFee: GWEI, tip: GWEI, gasPrice: GWEI }, roomy, RICH, 1n);
  assert.equal(replacement.kind, 'replace');
  const most = 21_000n * (replacement as { fees: EvmFees }).fees.maxFeePerGas!;
  assert.deepEqual(replacementFees(type2, { baseFee: GWEI, tip: GWEI, gasPrice: GWEI }, roomy, most + 9n, 10n), {
    kind: 'wait',
    reason: 'INSUFFICIENT_FUNDS_FOR_REPLACEMENT',
  });
  assert.equal(
    replacementFees(type2, { baseFee: GWEI, tip: GWEI, gasPrice: GWEI }, roomy, most + 10n, 10n).kind,
    'replace',
  );
});

test('type 0: the price bumped, at least the market and base fee plus tip, within the ceiling', () => {
  const legacy: EvmFees = { type: 0, gasLimit: 50_000n, gasPrice: 10n * GWEI };
  assert.deepEqual(replacementFees(legacy, { tip: GWEI, gasPrice: 5n * GWEI }, 10n ** 18n, RICH, 0n), {
    kind: 'replace',
    fees: { type: 0, gasLimit: 50_000n, gasPrice: bumped(10n * GWEI) },
  });
  assert.deepEqual(
    replacementFees(legacy, { baseFee: 20n * GWEI, tip: GWEI, gasPrice: 5n * GWEI }, 10n ** 18n, RICH, 0n),
    {
      kind: 'replace',
      fees: { type: 0, gasLimit: 50_000n, gasPrice: 21n * GWEI },
    },
  );
  assert.deepEqual(replacementFees(legacy, { tip: GWEI, gasPrice: GWEI }, 50_000n * 11n * GWEI, RICH, 0n), {
    kind: 'stop',
    reason: 'FEE_CEILING_REACHED',
  });
  assert.deepEqual(
    replacementFees(legacy, { baseFee: 30n * GWEI, tip: GWEI, gasPrice: GWEI }, 50_000n * 20n * GWEI, RICH, 0n),
    {
      kind: 'wait',
      reason: 'BASE_FEE_ABOVE_CEILING',
    },
  );
});
