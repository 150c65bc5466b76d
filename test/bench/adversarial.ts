/**
 * Adversarial benchmark: the real appliance (supervisor, enclave, API, as `npm start` runs it) against the worst
 * bodies of the signing routes' cost audit (fixtures/adversarial-bodies.ts). Prints figures; asserts nothing.
 * Run: `npm run bench:adversarial` (or `node --import tsx test/bench/adversarial.ts`).
 *
 *   BENCH_SECONDS    duration of each /healthz phase (default 10)
 *   BENCH_CASE_MS    time spent repeating each body, one request at a time (default 1500)
 *   BENCH_ONLY       comma list of phases: cost,healthz (default both)
 *
 * cost: sends each body again and again, one at a time, and reads the API process's CPU time (user + system, its
 * worker threads included; from /proc) before and after: CPU per request, and per KiB of body (a body under 1 KiB
 * counts as 1 KiB: the fixed cost of any request dominates it). The table ends with the worst case per route. The
 * enclave's signing (a constant per signature) is not counted.
 *
 * healthz: `/healthz` latency at a fixed rate with nothing else running, then the same while 20 adversarial EIP-712
 * requests per second arrive (the two chained-types bodies, alternating; see adversarialBodies), with the adversarial
 * requests' own latency. The
 * adversarial load comes from a child process (fetch, open loop), so that writing its large bodies does not delay
 * the client that measures /healthz.
 */
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { type AdversarialCase, adversarialCases } from '../../fixtures/adversarial-bodies.ts';
import { deepUndeclaredBody, typeClosureTypedData } from '../../fixtures/adversarial-typed-data.ts';
import { createPartnerKey } from '../helpers/http.ts';
import { BENCH_ADMIN_TOKEN, ROOT, startAppliance, stopAppliance } from './appliance.ts';

const SECONDS = Number(process.env['BENCH_SECONDS'] ?? 10);
const CASE_MS = Number(process.env['BENCH_CASE_MS'] ?? 1500);
const ONLY = (process.env['BENCH_ONLY'] ?? 'cost,healthz').split(',');
/** Adversarial EIP-712 requests per second in the healthz phase (the documented figure). */
const ADVERSARIAL_RATE = 20;
/** /healthz requests per second, alone and beside them. */
const HEALTHZ_RATE = 200;
const CLOCK_TICKS = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim());

/** The pid of the supervisor's child running the API bundle. */
function apiPid(supervisor: number): number {
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const command = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      if (parent === supervisor && command.includes('api/main.js')) return Number(entry);
    } catch {
      // gone meanwhile
    }
  }
  throw new Error('API process not found');
}

/** CPU time of a process (all its threads), user + system, in ms. */
function cpuMs(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
}

/** CPU per KiB of body, a body under 1 KiB counting as 1 KiB. */
const perKib = (r: CaseCost) => r.cpuPerRequest / Math.max(1, r.kib);
const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;

interface CaseCost {
  c: AdversarialCase;
  kib: number;
  statuses: string;
  requests: number;
  cpuPerRequest: number;
  wallP50: number;
  wallMax: number;
}

async function measureCase(
  url: string,
  key: string,
  pid: number,
  walletId: string,
  c: AdversarialCase,
): Promise<CaseCost> {
  const post = async () => {
    const res = await fetch(`${url}/v1/wallets/${walletId}/${c.route}`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      body: c.body,
    });
    await res.arrayBuffer();
    return res.status;
  };
  await post(); // warm: JIT, the chain pool's workers
  const statuses = new Map<number, number>();
  const walls: number[] = [];
  const cpu0 = cpuMs(pid);
  const start = performance.now();
  while (performance.now() - start < CASE_MS || walls.length < 5) {
    const t = performance.now();
    const status = await post();
    walls.push(performance.now() - t);
    statuses.set(status, (statuses.get(status) ?? 0) + 1);
  }
  const cpu = cpuMs(pid) - cpu0;
  walls.sort((a, b) => a - b);
  return {
    c,
    kib: Buffer.byteLength(c.body) / 1024,
    statuses: [...statuses].map(([status, n]) => (statuses.size === 1 ? `${status}` : `${status}x${n}`)).join(' '),
    requests: walls.length,
    cpuPerRequest: cpu / walls.length,
    wallP50: percentile(walls, 0.5),
    wallMax: walls[walls.length - 1]!,
  };
}

function printCosts(costs: CaseCost[]): void {
  console.log(
    `\n${'route'.padEnd(19)}${'wallet'.padEnd(8)}${'body'.padEnd(64)}${'KiB'.padStart(8)} status${'CPU ms/req'.padStart(12)}${'CPU ms/KiB'.padStart(12)}${'wall p50'.padStart(10)}`,
  );
  for (const r of costs) {
    console.log(
      `${r.c.route.padEnd(19)}${r.c.walletType.padEnd(8)}${r.c.name.slice(0, 62).padEnd(64)}${r.kib.toFixed(1).padStart(8)} ${r.statuses.padEnd(6)}${r.cpuPerRequest.toFixed(2).padStart(12)}${perKib(r).toFixed(3).padStart(12)}${r.wallP50.toFixed(1).padStart(10)}`,
    );
  }
  console.log('\nworst case per route (API process CPU; the highest CPU per KiB, and the highest per request):');
  console.log(`| route | worst CPU per KiB | body | worst CPU per request | body |`);
  console.log('|---|---|---|---|---|');
  for (const route of [...new Set(costs.map((r) => r.c.route))]) {
    const rows = costs.filter((r) => r.c.route === route);
    const worstPerKib = rows.reduce((a, b) => (perKib(b) > perKib(a) ? b : a));
    const perRequest = rows.reduce((a, b) => (b.cpuPerRequest > a.cpuPerRequest ? b : a));
    const label = (r: CaseCost) => `${r.c.walletType}, ${r.c.name} (${r.kib.toFixed(1)} KiB, ${r.statuses})`;
    console.log(
      `| \`${route}\` | ${perKib(worstPerKib).toFixed(3)} ms | ${label(worstPerKib)} | ${perRequest.cpuPerRequest.toFixed(1)} ms | ${label(perRequest)} |`,
    );
  }
}

function latency(name: string, r: autocannon.Result): void {
  const answered = r.requests.total;
  const statuses = Object.entries(r.statusCodeStats ?? {})
    .map(([status, { count }]) => `${status}x${count}`)
    .join(' ');
  console.log(
    `${name.padEnd(52)} p50 ${String(r.latency.p50).padStart(4)} ms   p99 ${String(r.latency.p99).padStart(4)} ms   max ${String(r.latency.max).padStart(5)} ms   ${answered} answered (${statuses})   errors ${r.errors + r.timeouts}`,
  );
}

/**
 * Finding 1's bodies, alternating, at the size that costs the service most: 1000 chained types under 15,000
 * instances (the most objects a body may hold, so it is parsed before the types are counted), and the same with an
 * undeclared member nested 100,000 deep. (With the original 20,000 instances both are refused before parsing.)
 */
function adversarialBodies(): string[] {
  return [JSON.stringify({ typedData: typeClosureTypedData(1000, 15_000) }), deepUndeclaredBody(1000, 15_000, 100_000)];
}

/** What the adversarial load saw: latencies of its requests and their statuses. */
interface LoadResult {
  p50: number;
  p99: number;
  max: number;
  statuses: Record<string, number>;
}

/** Runs the adversarial load in a child process (this file, with ADVERSARIAL_LOAD set). */
function adversarialLoad(url: string, key: string, walletId: string): Promise<LoadResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url)], {
      env: { ...process.env, ADVERSARIAL_LOAD: JSON.stringify({ url, key, walletId }) },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (chunk) => {
      out += String(chunk);
    });
    child.once('exit', (code) => {
      if (code === 0) resolve(JSON.parse(out) as LoadResult);
      else reject(new Error(`adversarial load exited with ${code}`));
    });
  });
}

/**
 * The child's side of adversarialLoad: ADVERSARIAL_RATE requests per second for SECONDS, open loop (each sent on
 * time whatever the others do), the result as JSON on stdout. The service closes the connection after refusing a
 * body at the parser, so each request may open a new one (fetch does; autocannon's reconnection skews its timing).
 */
async function runAdversarialLoad(spec: { url: string; key: string; walletId: string }): Promise<void> {
  const bodies = adversarialBodies();
  const send = async (body: string) => {
    const res = await fetch(`${spec.url}/v1/wallets/${spec.walletId}/sign-typed-data`, {
      method: 'POST',
      headers: { 'x-api-key': spec.key, 'content-type': 'application/json' },
      body,
    });
    await res.arrayBuffer();
    return res.status;
  };
  // Warm this process's HTTP client first (its first requests open connections and compile), untimed.
  for (const body of [...bodies, ...bodies]) await send(body);
  const latencies: number[] = [];
  const statuses: Record<string, number> = {};
  const sent: Promise<void>[] = [];
  const count = ADVERSARIAL_RATE * SECONDS;
  const start = performance.now();
  for (let i = 0; i < count; i++) {
    const due = start + (i * 1000) / ADVERSARIAL_RATE;
    await new Promise((r) => setTimeout(r, Math.max(0, due - performance.now())));
    sent.push(
      (async () => {
        const t = performance.now();
        let status = 'error';
        try {
          status = String(await send(bodies[i % bodies.length]!));
        } finally {
          latencies.push(performance.now() - t);
          statuses[status] = (statuses[status] ?? 0) + 1;
        }
      })(),
    );
  }
  await Promise.allSettled(sent);
  latencies.sort((a, b) => a - b);
  const result: LoadResult = {
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99),
    max: latencies[latencies.length - 1] ?? 0,
    statuses,
  };
  process.stdout.write(JSON.stringify(result));
}

async function main(): Promise<void> {
  execFileSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' });
  console.log(
    `machine: ${os.cpus().length} cores, ${os.cpus()[0]?.model}, node ${process.version}, load average ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  const svc = await startAppliance({ logLevel: 'error' });
  try {
    const pid = apiPid(svc.proc.pid!);
    const { secretKey: key } = await createPartnerKey(svc.adminUrl, BENCH_ADMIN_TOKEN, {
      plan: 'enterprise',
      rateLimitPerMinute: 10_000_000,
    });
    const wallets: Record<string, { id: string; address: string }> = {};
    for (const type of ['EVM', 'COSMOS', 'SOLANA', 'STELLAR', 'SUI']) {
      const res = await fetch(`${svc.url}/v1/wallets`, {
        method: 'POST',
        headers: { 'x-api-key': key, 'content-type': 'application/json' },
        body: JSON.stringify({ type, userIdentifier: `adv-${type}`, userIdentifierType: 'CUSTOM_ID' }),
      });
      wallets[type] = (await res.json()) as { id: string; address: string };
    }

    if (ONLY.includes('cost')) {
      const cases = adversarialCases({ SOLANA: { address: wallets['SOLANA']!.address } });
      const costs: CaseCost[] = [];
      for (const c of cases) costs.push(await measureCase(svc.url, key, pid, wallets[c.walletType]!.id, c));
      printCosts(costs);
    }

    if (ONLY.includes('healthz')) {
      const healthz = () =>
        autocannon({ url: `${svc.url}/healthz`, connections: 4, overallRate: HEALTHZ_RATE, duration: SECONDS });
      console.log(`\n/healthz at ${HEALTHZ_RATE}/s for ${SECONDS} s:`);
      latency('  alone (empty load)', await healthz());
      const attack = adversarialLoad(svc.url, key, wallets['EVM']!.id);
      const [beside, adversarial] = await Promise.all([healthz(), attack]);
      latency(`  beside ${ADVERSARIAL_RATE} adversarial EIP-712 requests/s`, beside);
      const [closure, deep] = adversarialBodies().map((body) => (Buffer.byteLength(body) / 1024).toFixed(0));
      console.log(
        `${`  the adversarial requests (${closure} and ${deep} KiB bodies)`.padEnd(52)} p50 ${adversarial.p50.toFixed(0).padStart(4)} ms   p99 ${adversarial.p99.toFixed(0).padStart(4)} ms   max ${adversarial.max.toFixed(0).padStart(5)} ms   (${Object.entries(
          adversarial.statuses,
        )
          .map(([status, n]) => `${status}x${n}`)
          .join(' ')})`,
      );
    }
  } finally {
    await stopAppliance(svc);
  }
}

const load = process.env['ADVERSARIAL_LOAD'];
void (load ? runAdversarialLoad(JSON.parse(load)) : main());
