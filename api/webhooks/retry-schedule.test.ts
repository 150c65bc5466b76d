import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MAX_ATTEMPTS, probeDelayMs, retryDelayMs, scheduleSpanMs } from './retry-schedule.ts';

test('the default schedule: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h, then dead after the eighth attempt', () => {
  const base = 5_000;
  const mid = (n: number) => retryDelayMs(base, n, 0.5);
  assert.deepEqual(
    [1, 2, 3, 4, 5, 6, 7].map(mid),
    [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000],
  );
  assert.equal(MAX_ATTEMPTS, 8);
  assert.equal(retryDelayMs(base, 8, 0.5), null);
  assert.ok(scheduleSpanMs(base) > 27 * 3600_000, 'the whole schedule spans more than a day');
});

test('jitter spreads each delay by ±20 %', () => {
  assert.equal(retryDelayMs(1_000, 1, 0), 800);
  assert.equal(retryDelayMs(1_000, 1, 0.999_999), 1_200);
});

test('probes of a failing endpoint follow the schedule but never wait more than 60 units', () => {
  assert.deepEqual(
    [1, 2, 3, 4, 10].map((n) => probeDelayMs(5_000, n, 0.5)),
    [5_000, 300_000, 300_000, 300_000, 300_000],
  );
});
