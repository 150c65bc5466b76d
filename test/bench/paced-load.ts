/**
 * Open-loop load at a steady rate: request i leaves at start + i / rate whatever happened to the ones before it,
 * and its latency counts from that scheduled moment (so a stall that delays sending is charged to the service, not
 * hidden: no coordinated omission). autocannon's `overallRate` is closed-loop per connection: each connection sends
 * its share of a second back to back and then waits, so "300/s" arrives as bursts of several hundred a second for
 * part of each second. This sends what a steady 300/s is.
 */
import { Pool } from 'undici';

export interface PacedRequest {
  method: 'POST' | 'GET';
  path: string;
  headers: Record<string, string>;
  body?: string;
}

export interface PacedResult {
  /** Requests answered per second, from the first scheduled send to the last answer. */
  achieved: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  /** Answers other than 2xx, plus requests that failed outright. */
  bad: number;
  /** Largest lag of a send behind its schedule (ms): the load generator's own limit. */
  sendLagMax: number;
}

function percentile(sorted: number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

/** Sends `count` requests to `origin` at `rate` per second (request i from `make(i)`); latencies in ms. */
export async function pacedLoad(
  origin: string,
  rate: number,
  count: number,
  make: (i: number) => PacedRequest,
): Promise<PacedResult> {
  const pool = new Pool(origin, { connections: 256, pipelining: 1, keepAliveTimeout: 30_000 });
  const latencies: number[] = [];
  let bad = 0;
  let sendLagMax = 0;
  const inFlight: Array<Promise<void>> = [];
  const start = performance.now() + 20;
  try {
    for (let i = 0; i < count; i++) {
      const due = start + (i * 1000) / rate;
      const wait = due - performance.now();
      if (wait > 1) await new Promise((r) => setTimeout(r, wait));
      sendLagMax = Math.max(sendLagMax, performance.now() - due);
      const req = make(i);
      inFlight.push(
        pool
          .request({ origin, method: req.method, path: req.path, headers: req.headers, body: req.body ?? null })
          .then(async (res) => {
            await res.body.text();
            latencies.push(performance.now() - due);
            if (res.statusCode < 200 || res.statusCode > 299) bad += 1;
          })
          .catch(() => {
            bad += 1;
          }),
      );
    }
    await Promise.all(inFlight);
  } finally {
    await pool.close();
  }
  const elapsed = (performance.now() - start) / 1000;
  latencies.sort((a, b) => a - b);
  return {
    achieved: latencies.length / elapsed,
    p50: percentile(latencies, 0.5),
    p90: percentile(latencies, 0.9),
    p99: percentile(latencies, 0.99),
    max: percentile(latencies, 1),
    bad,
    sendLagMax,
  };
}

/** One line of figures. */
export function formatPaced(r: PacedResult): string {
  const ms = (v: number) => `${v.toFixed(0)} ms`;
  return `${r.achieved.toFixed(0).padStart(6)} /s   p50 ${ms(r.p50)}   p90 ${ms(r.p90)}   p99 ${ms(r.p99)}   max ${ms(r.max)}   non-2xx/errors ${r.bad}   (sends at most ${r.sendLagMax.toFixed(1)} ms behind schedule)`;
}
