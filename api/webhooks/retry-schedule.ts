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
 * The longest wait between two probes of an endpoint whose breaker is open (60 units, 5 minutes by default): probing
 * costs one request, and a receiver that comes back should not wait hours for its queue.
 */
export const PROBE_MAX_UNITS = 60;

/**
 * The delay before the next attempt after `failedAttempts` failed ones (1-based), or null when none is left.
 * `random` in [0, 1) gives the jitter.
 */
export function retryDelayMs(baseMs: number, failedAttempts: number, random: number): number | null {
  const units = RETRY_UNITS[failedAttempts - 1];
  if (units === undefined) return null;
  return Math.round(units * baseMs * (0.8 + 0.4 * random));
}

/** The delay before the next probe of an endpoint after `failedProbes` failures in a row: the schedule, capped. */
export function probeDelayMs(baseMs: number, failedProbes: number, random: number): number {
  const units = Math.min(RETRY_UNITS[Math.min(failedProbes, RETRY_UNITS.length) - 1]!, PROBE_MAX_UNITS);
  return Math.round(units * baseMs * (0.8 + 0.4 * random));
}
