import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MAX_AUTO_RETRY_MS, parseAutoRetryTerms } from './auto-retry-terms.ts';
import { ChainInputError } from './chain-input-error.ts';

const NOW = Date.parse('2026-11-26T12:00:00Z');
const inAnHour = '2026-11-26T13:00:00Z';

function refused(value: unknown, family: 'EVM' | 'SOLANA', field: string) {
  assert.throws(
    () => parseAutoRetryTerms(value, family, NOW),
    (err: unknown) => err instanceof ChainInputError && err.field === field,
    `${JSON.stringify(value)} names ${field}`,
  );
}

test("a family's ceiling and a deadline with a time zone within 24 hours", () => {
  assert.deepEqual(parseAutoRetryTerms({ maxExecutionFeeWei: '1000', expiresAt: inAnHour }, 'EVM', NOW), {
    ceiling: '1000',
    expiresAt: NOW + 3_600_000,
  });
  assert.deepEqual(
    parseAutoRetryTerms({ maxExecutionFeeLamports: '5000', expiresAt: '2026-11-27T13:59:59.5+02:00' }, 'SOLANA', NOW),
    { ceiling: '5000', expiresAt: Date.parse('2026-11-27T11:59:59.5Z') },
  );
  assert.equal(
    parseAutoRetryTerms(
      { maxExecutionFeeWei: '1', expiresAt: new Date(NOW + MAX_AUTO_RETRY_MS).toISOString() },
      'EVM',
      NOW,
    ).expiresAt,
    NOW + MAX_AUTO_RETRY_MS,
  );
});

test('bad terms are refused naming the field', () => {
  refused(null, 'EVM', 'autoRetry');
  refused([], 'EVM', 'autoRetry');
  refused({ expiresAt: inAnHour }, 'EVM', 'autoRetry.maxExecutionFeeWei');
  refused({ maxExecutionFeeWei: '0', expiresAt: inAnHour }, 'EVM', 'autoRetry.maxExecutionFeeWei');
  refused({ maxExecutionFeeWei: '1.5', expiresAt: inAnHour }, 'EVM', 'autoRetry.maxExecutionFeeWei');
  refused({ maxExecutionFeeWei: 1000, expiresAt: inAnHour }, 'EVM', 'autoRetry.maxExecutionFeeWei');
  refused({ maxExecutionFeeWei: '-1', expiresAt: inAnHour }, 'EVM', 'autoRetry.maxExecutionFeeWei');
  refused({ maxExecutionFeeWei: (2n ** 256n).toString(), expiresAt: inAnHour }, 'EVM', 'autoRetry.maxExecutionFeeWei');
  refused(
    { maxExecutionFeeLamports: (2n ** 64n).toString(), expiresAt: inAnHour },
    'SOLANA',
    'autoRetry.maxExecutionFeeLamports',
  );
  // Each family's ceiling on the other family.
  refused(
    { maxExecutionFeeWei: '1', maxExecutionFeeLamports: '1', expiresAt: inAnHour },
    'EVM',
    'autoRetry.maxExecutionFeeLamports',
  );
  refused({ maxExecutionFeeWei: '1', expiresAt: inAnHour }, 'SOLANA', 'autoRetry.maxExecutionFeeWei');
  refused({ maxExecutionFeeWei: '1', expiresAt: inAnHour, extra: 1 }, 'EVM', 'autoRetry.extra');
  // Deadlines: missing, without a zone, not a date, past, now, beyond 24 hours.
  refused({ maxExecutionFeeWei: '1' }, 'EVM', 'autoRetry.expiresAt');
  refused({ maxExecutionFeeWei: '1', expiresAt: '2026-11-26T13:00:00' }, 'EVM', 'autoRetry.expiresAt');
  // A day the month does not have (JavaScript would read December 1, within the 24 hours of this `now`).
  const lateNovember = Date.parse('2026-11-30T12:00:00Z');
  assert.throws(
    () => parseAutoRetryTerms({ maxExecutionFeeWei: '1', expiresAt: '2026-11-31T01:00:00Z' }, 'EVM', lateNovember),
    (err: unknown) => err instanceof ChainInputError && err.field === 'autoRetry.expiresAt',
  );
  assert.equal(
    parseAutoRetryTerms({ maxExecutionFeeWei: '1', expiresAt: '2026-12-01T01:00:00Z' }, 'EVM', lateNovember).expiresAt,
    Date.parse('2026-12-01T01:00:00Z'),
  );
  assert.equal(
    parseAutoRetryTerms({ maxExecutionFeeWei: '1', expiresAt: '2026-12-01T01:00-01:00' }, 'EVM', lateNovember)
      .expiresAt,
    Date.parse('2026-12-01T02:00:00Z'),
    'seconds may be omitted',
  );
  refused({ maxExecutionFeeWei: '1', expiresAt: '2026-11-26T12:60:00Z' }, 'EVM', 'autoRetry.expiresAt');
  refused({ maxExecutionFeeWei: '1', expiresAt: 'tomorrow' }, 'EVM', 'autoRetry.expiresAt');
  refused({ maxExecutionFeeWei: '1', expiresAt: '2026-11-26T11:59:59Z' }, 'EVM', 'autoRetry.expiresAt');
  refused({ maxExecutionFeeWei: '1', expiresAt: '2026-11-26T12:00:00Z' }, 'EVM', 'autoRetry.expiresAt');
  refused({ maxExecutionFeeWei: '1', expiresAt: '2026-11-27T12:00:00.001Z' }, 'EVM', 'autoRetry.expiresAt');
});
