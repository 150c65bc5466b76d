/**
 * Auto-retry transfers at scale against the running appliance (supervisor, enclave and API processes) and a real
 * anvil node that mines nothing until told: every payment is replaced three times, then stops (ATTEMPT_LIMIT_REACHED).
 * Prints figures; asserts nothing. Run: `npm run bench:auto-retry`.
 *
 *   BENCH_LEVELS                payments active at once, one per wallet, one level after the other (default 10,100,1000)
 *   BENCH_POLL_MS               CHAIN_POLL_INTERVAL_MS of the service (default 1000)
 *   BENCH_REPLACEMENT_DELAY_MS  EVM_REPLACEMENT_DELAY_MS of the service (default 5000)
 *   BENCH_PROFILE=1             write CPU profiles of the API and the enclave during the largest level's retries (to
 *                               the temporary directory, wcs-profile-<pid>.cpuprofile)
 *   BENCH_PROFILE=heap          instead, their allocations during those retries, freed ones included (sampled;
 *                               wcs-heap-<pid>.heapprofile)
 *
 * The targets (the issue): each replacement goes out within one polling interval of becoming due; the RPC round trips
 * of a polling round stay bounded whatever the number of payments; the API stays under 300 MB resident. For each
 * level it prints the lateness of every replacement (when it was prepared, from its attempts, against its due time:
 * the previous attempt's send plus the delay), the polling rounds' round trips (the service's gauges) beside every
 * JSON-RPC call anvil served (a counting proxy between the service and anvil), the API main thread's garbage
 * collections (scavenges, full collections, and their pauses), the API's peak resident memory, and
 * then mines the blocks and checks that every payment confirmed with one transaction from its wallet.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { startAnvil } from '../../fixtures/anvil.ts';
import { rpc } from '../../fixtures/evm-helpers.ts';
import { createPartnerKey } from '../helpers/http.ts';
import { BENCH_ADMIN_TOKEN, ROOT, startAppliance, stopAppliance } from './appliance.ts';
import { countsBetween, formatCounts, formatLatency, startCountingRpcProxy } from './counting-rpc-proxy.ts';
import { createWallets, fund } from './evm-wallets.ts';
import { applianceProcesses, threadIds, withCpu } from './process-cpu.ts';

const LEVELS = (process.env['BENCH_LEVELS'] ?? '10,100,1000').split(',').map(Number);
const POLL_MS = Number(process.env['BENCH_POLL_MS'] ?? 1000);
const DELAY_MS = Number(process.env['BENCH_REPLACEMENT_DELAY_MS'] ?? 5000);
/** What the largest level's retries are profiled for, if anything (cpu-profile-preload.mjs, heap-profile-preload.mjs). */
const PROFILE = ({ '1': 'cpu', heap: 'heap' } as const)[process.env['BENCH_PROFILE'] ?? ''] ?? null;
const RSS_TARGET_MB = 300;
const REPLACEMENTS = 3;
const RECIPIENT = '0x000000000000000000000000000000000000bEEF';
/** A ceiling no replacement reaches: 0.01 ETH per attempt, about a hundred times the third replacement's cost. */
const CEILING_WEI = '10000000000000000';

interface Attempt {
  ordinal: number;
  stage: string;
  preparedAt: string;
  hash: string | null;
  lastBroadcastAt: string | null;
}

interface Row {
  id: string;
  walletId: string;
  status: string;
  autoRetry: string | null;
  attempts: string | null;
  monitoring: string | null;
  failureCode: string | null;
}

/** The accounts' latest nonces, in batches. */
async function nonces(rpcUrl: string, addresses: string[]): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (let i = 0; i < addresses.length; i += 500) {
    const slice = addresses.slice(i, i + 500);
    const r = await fetch(rpcUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(
        slice.map((a, j) => ({ jsonrpc: '2.0', id: j, method: 'eth_getTransactionCount', params: [a, 'latest'] })),
      ),
    });
    const answers = (await r.json()) as Array<{ id: number; result?: string }>;
    for (const a of answers) out.set(slice[a.id]!, a.result === undefined ? Number.NaN : Number(a.result));
  }
  return out;
}

/** Every sample of the admin `/metrics`, by series (`name` or `name{labels}`). */
async function metrics(adminUrl: string): Promise<Map<string, number>> {
  const text = await (
    await fetch(`${adminUrl}/metrics`, { headers: { authorization: `Bearer ${BENCH_ADMIN_TOKEN}` } })
  ).text();
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const i = line.lastIndexOf(' ');
    out.set(line.slice(0, i), Number(line.slice(i + 1)));
  }
  return out;
}

/** The first series of `name` (with or without labels). */
function series(m: Map<string, number>, name: string): number {
  for (const [k, v] of m) if (k === name || k.startsWith(`${name}{`)) return v;
  return Number.NaN;
}

/** A histogram's cumulative buckets (upper bound → count). */
function buckets(m: Map<string, number>, name: string): Map<number, number> {
  const out = new Map<number, number>();
  for (const [k, v] of m) {
    const le = k.startsWith(`${name}_bucket{`) ? /le="([^"]+)"/.exec(k)?.[1] : undefined;
    if (le !== undefined) out.set(le === '+Inf' ? Number.POSITIVE_INFINITY : Number(le), v);
  }
  return out;
}

/** A histogram's observations between two scrapes: count, mean, and the bucket bound under which 99% fell. */
function histogramBetween(before: Map<string, number>, after: Map<string, number>, name: string) {
  const count = series(after, `${name}_count`) - (series(before, `${name}_count`) || 0);
  const sum = series(after, `${name}_sum`) - (series(before, `${name}_sum`) || 0);
  const b0 = buckets(before, name);
  let p99: number = Number.NaN;
  for (const [le, n] of [...buckets(after, name)].sort((a, b) => a[0] - b[0])) {
    if (n - (b0.get(le) ?? 0) >= 0.99 * count) {
      p99 = le;
      break;
    }
  }
  return { count, mean: count > 0 ? sum / count : Number.NaN, p99 };
}

/** The main thread's garbage collections between two scrapes, by kind (prom-client's nodejs_gc_duration_seconds). */
function gcBetween(before: Map<string, number>, after: Map<string, number>) {
  return ['minor', 'incremental', 'major', 'weakcb'].map((kind) => {
    const key = (what: string) => `nodejs_gc_duration_seconds_${what}{kind="${kind}"}`;
    return {
      kind,
      count: (after.get(key('count')) ?? 0) - (before.get(key('count')) ?? 0),
      ms: ((after.get(key('sum')) ?? 0) - (before.get(key('sum')) ?? 0)) * 1000,
    };
  });
}

function percentile(sorted: number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

function distribution(values: number[]): string {
  const s = [...values].sort((a, b) => a - b);
  const ms = (v: number) => `${v.toFixed(0)} ms`;
  return `p50 ${ms(percentile(s, 0.5))}  p90 ${ms(percentile(s, 0.9))}  p99 ${ms(percentile(s, 0.99))}  max ${ms(percentile(s, 1))}  (min ${ms(percentile(s, 0))})`;
}

/** Resident memory of a process now, and its peak so far (the kernel's high-water mark), in MB. */
function memory(pid: number): { rss: number; hwm: number } {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (field: string) => Number(new RegExp(`^${field}:\\s*(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN);
    return { rss: kb('VmRSS') / 1024, hwm: kb('VmHWM') / 1024 };
  } catch {
    return { rss: Number.NaN, hwm: Number.NaN };
  }
}

/** The API main thread's V8 heap (from the default metrics), MB: committed, used, and the committed size of spaces. */
function heapOf(m: Map<string, number>) {
  const mb = (name: string) => series(m, name) / 2 ** 20;
  const space = (s: string) => mb(`nodejs_heap_space_size_total_bytes{space="${s}"}`);
  return {
    total: mb('nodejs_heap_size_total_bytes'),
    used: mb('nodejs_heap_size_used_bytes'),
    young: space('new'),
    old: space('old'),
    large: space('large_object'),
  };
}

function formatHeap(h: ReturnType<typeof heapOf>): string {
  return `${h.total.toFixed(0)} MB committed (young generation ${h.young.toFixed(0)}, old ${h.old.toFixed(0)}, large objects ${h.large.toFixed(0)}), ${h.used.toFixed(0)} MB used`;
}

/**
 * Samples every 500 ms, until stopped: the API's resident memory (with its main thread's heap at the highest sample),
 * and the last polling round's gauges (records looked up, RPC round trips, lookup time).
 */
function startSampler(apiPid: number, adminUrl: string, roundsBefore: number) {
  const s = {
    rssMax: 0,
    /** The main thread's heap when the resident memory was highest (of the samples that read both). */
    heapAtMax: undefined as (ReturnType<typeof heapOf> & { rss: number }) | undefined,
    /** The most the main thread's heap used, of the samples. */
    heapUsedMax: 0,
    rounds: [] as Array<{ watched: number; trips: number; lookupMs: number }>,
  };
  let busy = false;
  const timer = setInterval(() => {
    const { rss } = memory(apiPid);
    if (rss > s.rssMax) s.rssMax = rss;
    if (busy) return;
    busy = true;
    metrics(adminUrl)
      .then((m) => {
        // The gauges are the last round's: one from before this level (its settling round) is not this level's.
        if (series(m, 'chain_poll_round_seconds_count') > roundsBefore) {
          s.rounds.push({
            watched: series(m, 'chain_poll_watched'),
            trips: series(m, 'chain_poll_round_trips'),
            lookupMs: series(m, 'chain_poll_lookup_seconds') * 1000,
          });
        }
        const heap = heapOf(m);
        if (rss >= (s.heapAtMax?.rss ?? 0)) s.heapAtMax = { rss, ...heap };
        if (heap.used > s.heapUsedMax) s.heapUsedMax = heap.used;
      })
      .catch(() => {})
      .finally(() => {
        busy = false;
      });
  }, 500);
  return {
    samples: s,
    stop: () => clearInterval(timer),
  };
}

/** The records of `ids` straight from the database (read-only, as the service's own reads would see them). */
function readRows(file: string, ids: ReadonlySet<string>): Row[] {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    const rows = db
      .prepare(
        `select id, wallet_id as walletId, status, auto_retry as autoRetry, attempts, monitoring,
           failure_code as failureCode
         from transactions where auto_retry is not null`,
      )
      .all() as Row[];
    return rows.filter((r) => ids.has(r.id));
  } finally {
    db.close();
  }
}

const retryOf = (r: Row) =>
  r.autoRetry ? (JSON.parse(r.autoRetry) as { state: string; reason: string | null }) : null;
const attemptsOf = (r: Row) => (r.attempts ? (JSON.parse(r.attempts) as Attempt[]) : []);

/** Counts by a key, as `key n, key n`. */
function tally<T>(items: T[], key: (t: T) => string): string {
  const m = new Map<string, number>();
  for (const it of items) m.set(key(it), (m.get(key(it)) ?? 0) + 1);
  return [...m].map(([k, n]) => `${k} ${n}`).join(', ');
}

async function main(): Promise<void> {
  execFileSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' });
  const load = () =>
    os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ');
  console.log(
    `machine: ${os.cpus().length} cores, ${os.cpus()[0]?.model ?? ''}, ${(os.totalmem() / 2 ** 30).toFixed(0)} GB; load average ${load()} at the start (a shared machine: other processes compete for the cores)`,
  );
  console.log(
    `settings: levels ${LEVELS.join(', ')}; CHAIN_POLL_INTERVAL_MS ${POLL_MS}; EVM_REPLACEMENT_DELAY_MS ${DELAY_MS}; anvil mining nothing until the benchmark mines`,
  );
  const anvil = await startAnvil({ automine: false, slotsInAnEpoch: 1 });
  const proxy = await startCountingRpcProxy(anvil.rpcUrl);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wcs-bench-chains-'));
  const chainsFile = path.join(dir, 'chains.json');
  fs.writeFileSync(chainsFile, JSON.stringify({ evm: [{ chainId: 31337, rpcUrl: proxy.url, environment: 'any' }] }));
  const svc = await startAppliance({
    env: {
      CHAINS_FILE: chainsFile,
      CHAIN_POLL_INTERVAL_MS: String(POLL_MS),
      EVM_REPLACEMENT_DELAY_MS: String(DELAY_MS),
      ...(PROFILE ? { NODE_OPTIONS: `--import ${path.join(ROOT, `test/bench/${PROFILE}-profile-preload.mjs`)}` } : {}),
    },
  });
  const dbFile = path.join(svc.dataDir, 'service.db');
  try {
    const { secretKey } = await createPartnerKey(svc.adminUrl, BENCH_ADMIN_TOKEN, {
      plan: 'enterprise',
      rateLimitPerMinute: 10_000_000,
    });
    const headers = { 'x-api-key': secretKey, 'content-type': 'application/json' };
    const procs = applianceProcesses(svc.proc.pid!, { anvil: anvil.pid, 'bench (and its RPC proxy)': process.pid });
    const apiPid = procs['api']!;
    // Idle once the start has settled (the chain pool's worker threads start only with a large signing input).
    await new Promise((r) => setTimeout(r, 5000));
    const idle = heapOf(await metrics(svc.adminUrl));
    console.log(
      `API resident memory idle, 5 s after it was ready: ${memory(apiPid).rss.toFixed(0)} MB (main thread's V8 heap ${formatHeap(idle)}); ${threadIds(apiPid).length} threads`,
    );
    const largest = Math.max(...LEVELS);

    for (const level of LEVELS) {
      console.log(`\n== ${level} auto-retry payments at once (load average ${load()})`);
      const wallets = await createWallets(svc.url, headers, level, `ar-${level}`);
      await fund(
        anvil.rpcUrl,
        wallets.map((w) => w.address),
      );
      const paidBefore = BigInt(await rpc<string>(anvil.rpcUrl, 'eth_getBalance', [RECIPIENT, 'latest']));
      const profiling = PROFILE !== null && level === largest;
      const toggleProfiles = () => {
        if (profiling) for (const name of ['api', 'enclave']) if (procs[name]) process.kill(procs[name]!, 'SIGUSR2');
      };

      const metricsBefore = await metrics(svc.adminUrl);
      const sampler = startSampler(apiPid, svc.adminUrl, series(metricsBefore, 'chain_poll_round_seconds_count') || 0);
      const rpcBefore = proxy.counts();
      const ids = new Set<string>();
      const admission: number[] = [];
      const expiresAt = new Date(Date.now() + 3600_000).toISOString();
      toggleProfiles();
      const t0 = performance.now();
      const { admittedMs, stoppedMs, rows } = await withCpu(
        procs,
        'payment (admission, 3 replacements, the stop)',
        () => level,
        async () => {
          let next = 0;
          await Promise.all(
            Array.from({ length: 64 }, async () => {
              while (next < wallets.length) {
                const w = wallets[next++]!;
                const sent = performance.now();
                const r = await fetch(`${svc.url}/v1/wallets/${w.id}/transfer`, {
                  method: 'POST',
                  headers: { ...headers, 'idempotency-key': `bench-ar-${w.id}` },
                  body: JSON.stringify({
                    to: RECIPIENT,
                    value: '1',
                    chainId: '31337',
                    autoRetry: { maxExecutionFeeWei: CEILING_WEI, expiresAt },
                  }),
                });
                const body = (await r.json()) as { transactionId?: string };
                admission.push(performance.now() - sent);
                if (r.status !== 202 || !body.transactionId) {
                  throw new Error(`auto-retry transfer answered ${r.status}: ${JSON.stringify(body)}`);
                }
                ids.add(body.transactionId);
              }
            }),
          );
          const admittedMs = performance.now() - t0;
          // Every payment makes its three replacements and stops at its fourth due time: about 4 × the delay.
          const limit = 4 * DELAY_MS + admittedMs + 300_000;
          for (;;) {
            const rows = readRows(dbFile, ids);
            const active = rows.filter((r) => retryOf(r)?.state === 'active');
            if (rows.length === ids.size && active.length === 0) {
              return { admittedMs, stoppedMs: performance.now() - t0, rows };
            }
            if (performance.now() - t0 > limit) {
              throw new Error(
                `${active.length} of ${ids.size} payments still active after ${((performance.now() - t0) / 1000).toFixed(0)} s (reasons: ${tally(active, (r) => retryOf(r)?.reason ?? 'none')})`,
              );
            }
            await new Promise((r) => setTimeout(r, 500));
          }
        },
      );
      toggleProfiles();
      sampler.stop();
      const rpcRetries = countsBetween(rpcBefore, proxy.counts());
      const metricsAfter = await metrics(svc.adminUrl);
      const mem = memory(apiPid);
      if (profiling) {
        console.log(
          `  ${PROFILE === 'cpu' ? `CPU profiles: ${os.tmpdir()}/wcs-profile-<pid>.cpuprofile` : `allocation profiles: ${os.tmpdir()}/wcs-heap-<pid>.heapprofile`} (api ${procs['api']}, enclave ${procs['enclave']})`,
        );
      }

      admission.sort((a, b) => a - b);
      console.log(
        `admitted ${level} (202) in ${(admittedMs / 1000).toFixed(1)} s, 64 at a time: p50 ${percentile(admission, 0.5).toFixed(0)} ms, p99 ${percentile(admission, 0.99).toFixed(0)} ms; every retry stopped ${(stoppedMs / 1000).toFixed(1)} s after the first request`,
      );
      const stops = tally(rows, (r) => `${retryOf(r)?.state} ${retryOf(r)?.reason} after ${attemptsOf(r).length - 1}`);
      console.log(`  how the retries ended: ${stops}`);

      // Lateness of replacement n: when it was prepared (its fees read from the node) against when it became due, the
      // previous attempt's send plus the delay (the deadline is an hour away); and when its bytes went out.
      const prepared: number[][] = [[], [], []];
      const sentLate: number[] = [];
      for (const r of rows) {
        const a = attemptsOf(r);
        for (let n = 1; n <= REPLACEMENTS && n < a.length; n++) {
          const prev = a[n - 1]!;
          const due = Date.parse(prev.lastBroadcastAt ?? prev.preparedAt) + DELAY_MS;
          prepared[n - 1]!.push(Date.parse(a[n]!.preparedAt) - due);
          if (a[n]!.lastBroadcastAt) sentLate.push(Date.parse(a[n]!.lastBroadcastAt!) - due);
        }
      }
      const all = prepared.flat();
      const within = all.filter((v) => v <= POLL_MS).length;
      console.log(
        `  replacement lateness, prepared − due (${all.length} replacements): ${distribution(all)}; within one polling interval (${POLL_MS} ms): ${within}/${all.length} (${((100 * within) / (all.length || 1)).toFixed(1)}%)`,
      );
      prepared.forEach((v, i) => {
        console.log(`    replacement ${i + 1}: ${distribution(v)}`);
      });
      console.log(`  sent − due (signed by the enclave and broadcast): ${distribution(sentLate)}`);
      const gc = gcBetween(metricsBefore, metricsAfter);
      console.log(
        `  the API main thread's garbage collection during the retries: ${gc.map((g) => `${g.kind} ${g.count} (${g.ms.toFixed(0)} ms)`).join(', ')}; ${((gc.reduce((a, g) => a + g.ms, 0) * 1000) / level).toFixed(0)} µs per payment`,
      );
      const wake = histogramBetween(metricsBefore, metricsAfter, 'actor_wake_lag_seconds');
      console.log(
        `  the scheduler's WAKEs meanwhile (actor_wake_lag_seconds): ${wake.count}, mean lag ${(wake.mean * 1000).toFixed(1)} ms, 99% within ${wake.p99 * 1000} ms`,
      );

      const rounds = sampler.samples.rounds.filter((r) => r.watched > 0);
      const busiest = rounds.reduce((a, b) => (b.watched > a.watched ? b : a), { watched: 0, trips: 0, lookupMs: 0 });
      const trips = [...new Set(rounds.map((r) => r.trips))].sort((a, b) => a - b);
      const polled =
        series(metricsAfter, 'chain_poll_round_seconds_count') -
        (series(metricsBefore, 'chain_poll_round_seconds_count') || 0);
      console.log(
        `  polling rounds (${polled} during the retries): RPC round trips per round ${trips.join(', ') || 'none sampled'}; the busiest sampled looked up ${busiest.watched} records (${level} payments, up to ${level * (REPLACEMENTS + 1)} hashes) in ${busiest.trips} round trips, ${busiest.lookupMs.toFixed(0)} ms; slowest lookup ${Math.max(0, ...rounds.map((r) => r.lookupMs)).toFixed(0)} ms`,
      );
      const seconds = stoppedMs / 1000;
      // Each payment sends its first attempt and three replacements itself; the rest are the poller's resends of bytes
      // the node does not show (after 30 polling intervals), which for an auto-retry payment are its first attempt's.
      const resent = (rpcRetries.byMethod['eth_sendRawTransaction'] ?? 0) - (REPLACEMENTS + 1) * level;
      console.log(
        `  JSON-RPC anvil served during the retries (${seconds.toFixed(1)} s): ${formatCounts(rpcRetries)}; ${(rpcRetries.requests / seconds).toFixed(1)} requests/s, ${(rpcRetries.calls / level).toFixed(1)} calls per payment; eth_sendRawTransaction beyond the ${(REPLACEMENTS + 1) * level} attempts: ${resent}`,
      );
      console.log(`    the node's answer times, by a request's first method: ${formatLatency(rpcRetries)}`);
      const h = sampler.samples.heapAtMax;
      console.log(
        `  API resident memory: peak sampled ${sampler.samples.rssMax.toFixed(0)} MB (now ${mem.rss.toFixed(0)} MB, the process's high-water mark ${mem.hwm.toFixed(0)} MB); target < ${RSS_TARGET_MB} MB: ${mem.hwm < RSS_TARGET_MB ? 'met' : 'MISSED'}; enclave ${memory(procs['enclave']!).rss.toFixed(0)} MB`,
      );
      console.log(
        `    the main thread's V8 heap at the highest sample: ${h ? formatHeap(h) : 'not sampled'}; the most used in any sample ${sampler.samples.heapUsedMax.toFixed(0)} MB`,
      );

      // Include every payment's latest attempt and finalize it (finalized trails the latest block by two).
      const rpcBeforeMining = proxy.counts();
      const m0 = performance.now();
      await rpc(anvil.rpcUrl, 'anvil_mine', ['0x10']);
      let final: Row[] = [];
      for (;;) {
        final = readRows(dbFile, ids);
        if (final.every((r) => r.status !== 'submitted' && r.status !== 'pending')) break;
        if (performance.now() - m0 > 120_000) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      const settledMs = performance.now() - m0;
      const byWallet = new Map(wallets.map((w) => [w.id, w.address]));
      const nonceOf = await nonces(
        anvil.rpcUrl,
        wallets.map((w) => w.address),
      );
      const paid = BigInt(await rpc<string>(anvil.rpcUrl, 'eth_getBalance', [RECIPIENT, 'latest'])) - paidBefore;
      const wrong: string[] = [];
      let byLast = 0;
      for (const r of final) {
        const a = attemptsOf(r);
        const winner = (r.monitoring ? (JSON.parse(r.monitoring) as { winningHash?: string }) : {}).winningHash;
        if (winner !== undefined && winner === a[a.length - 1]?.hash) byLast += 1;
        const nonce = nonceOf.get(byWallet.get(r.walletId)!);
        if (r.status !== 'confirmed' || nonce !== 1 || retryOf(r)?.state !== 'resolved') {
          wrong.push(
            `${r.id}: ${r.status}${r.failureCode ? ` ${r.failureCode}` : ''}, autoRetry ${retryOf(r)?.state}, wallet nonce ${nonce}`,
          );
        }
      }
      console.log(
        `then ${16} blocks mined: every record settled ${settledMs.toFixed(0)} ms later (${(settledMs / POLL_MS).toFixed(1)} polling intervals): ${tally(final, (r) => r.status)}; executed by the latest attempt: ${byLast}/${final.length}; recipient paid ${paid} wei for ${level} payments of 1 wei; JSON-RPC meanwhile ${formatCounts(countsBetween(rpcBeforeMining, proxy.counts()))}`,
      );
      if (wrong.length === 0) console.log(`  every record confirmed with one transaction from its wallet (nonce 1)`);
      else console.log(`  ${wrong.length} records NOT confirmed with one transaction:\n    ${wrong.join('\n    ')}`);
    }
  } finally {
    await stopAppliance(svc);
    await proxy.close();
    await anvil.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

await main();
