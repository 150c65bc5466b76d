/**
 * The retry schedule, in units of WEBHOOK_RETRY_BASE_MS (5 s by default): after the first failed attempt the next
 * comes 1 unit later, then 60, 360, 1,440, 3,600, 7,200 and 7,200 units: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and
 * 10 h by default, eight attempts over about 27.6 hours. Each delay is spread by ±20 % (jitter) so that deliveries
 * failed together do not come back together.
 */
export const RETRY_UNITS = [1, 60, 360, 1_440, 3_600, 7_200, 7_200] as const;

/** Attempts a delivery gets before it is dead. */
export const MAX_ATTEMPTS = RETRY_UNITS.length + 1;

/** The whole schedule's length: a delivery pending longer than this while its endpoint fails is dead. */
export function scheduleSpanMs(baseMs: number): number {
  return RETRY_UNITS.reduce((a, u) => a + u, 0) * baseMs * 1.2;
}

/**
 * The delay before the next attempt after `failedAttempts` failed ones (1-based), or null when none is left.
 * `random` in [0, 1) gives the jitter. `cap` repeats the last step instead of giving up (the endpoint's breaker).
 */
export function retryDelayMs(
  baseMs: number,
  failedAttempts: number,
  random: number,
  { cap = false }: { cap?: boolean } = {},
): number | null {
  const i = failedAttempts - 1;
  const units = RETRY_UNITS[Math.min(i, cap ? RETRY_UNITS.length - 1 : i)];
  if (units === undefined) return null;
  return Math.round(units * baseMs * (0.8 + 0.4 * random));
}
