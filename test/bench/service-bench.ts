/**
 * Benchmarks against a running service (the real supervisor, enclave and API processes) with autocannon.
 * Prints figures; asserts nothing. Run: `npm run bench` (or `node --import tsx test/bench/service-bench.ts`).
 *
 *   BENCH_SECONDS      duration of each load phase (default 10)
 *   BENCH_SETTLE_MS    pause between readiness and the first load phase (default 0), so that the first seconds of
 *                      load do not compete with the end of the start (the API's chain workers start with the first
 *                      large input, in sign-mixed, not at start)
 *   BENCH_PROFILE=1    write V8 CPU profiles of the API and the enclave during each sign phase (the service's
 *                      temporary directory, wcs-profile-<pid>.cpuprofile)
 *   BENCH_PERF=1       during each sign phase, sample every CPU with perf (perf-breakdown.ts) and print the CPU per
 *                      request of each thread group by what it ran (needs perf and root)
 *   BENCH_SIGN_CONNECTIONS  autocannon connections of the sign phases (default 64)
 *   BENCH_ONLY         comma list of phases: startup,create,get,sign-evm,sign-solana,sign-mixed (default all)
 *
 * The sign phases first measure, before the service starts (so nothing else competes), the raw in-process signing
 * rates on every core and a bare Fastify POST route in its own process; each sign phase then prints the machine's
 * limit for its request, 1/(1/empty route + 1/raw sign), and the service's share of it, beside the CPU each
 * process spent per request.
 *
 * sign-mixed measures the latency of small Solana sign-message requests alone, then while other wallets keep the
 * service busy with slow work (64 KiB EVM messages, 256 KiB EIP-712 typed data, wallet creations with their
 * fsyncs): a request must not wait behind another wallet's work.
 */
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { EIP712_MAIL } from '../../fixtures/eip712-mail.ts';
import { createPartnerKey } from '../helpers/http.ts';
import { BENCH_ADMIN_TOKEN, ROOT, startAppliance, stopAppliance } from './appliance.ts';
import { perfAvailable, printBreakdown, recordMachine, removeV8Logs } from './perf-breakdown.ts';
import { applianceProcesses, threadIds, withCpu } from './process-cpu.ts';
import { rawSigningRate } from './raw-signing-rate.ts';

const SECONDS = Number(process.env['BENCH_SECONDS'] ?? 10);
const SETTLE_MS = Number(process.env['BENCH_SETTLE_MS'] ?? 0);
/** Requests per second of the small requests in sign-mixed. */
const LIGHT_RATE = 1000;
const PROFILE = process.env['BENCH_PROFILE'] === '1';
const PERF = process.env['BENCH_PERF'] === '1';
/** Connections of the sign phases (the documented figures are at 64). */
const SIGN_CONNECTIONS = Number(process.env['BENCH_SIGN_CONNECTIONS'] ?? 64);
const ONLY = (process.env['BENCH_ONLY'] ?? 'startup,create,get,sign-evm,sign-solana,sign-mixed').split(',');

/** Requests per second of a bare Fastify POST route in its own process, loaded like sign-message. */
async function emptyRouteRate(): Promise<number> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'test/bench/empty-route-server.ts')], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  try {
    const [chunk] = (await once(child.stdout!, 'data')) as [Buffer];
    const port = Number(chunk.toString().trim());
    const r = await withCpu(
      { 'empty route': child.pid!, 'bench (autocannon)': process.pid },
      'request',
      (result) => result.requests.total,
      () =>
        autocannon({
          url: `http://127.0.0.1:${port}`,
          connections: 64,
          duration: SECONDS,
          requests: [
            {
              method: 'POST',
              headers: { 'x-api-key': 'sk_bench', 'content-type': 'application/json' },
              body: JSON.stringify({ message: 'benchmark message: sign me' }),
              path: '/v1/wallets/0f9a7c3e-1d2b-4c5d-8e6f-7a8b9c0d1e2f/sign-message',
            },
          ],
        }),
    );
    report('empty Fastify POST route, 64 conns', r);
    return r.requests.average;
  } finally {
    child.kill('SIGKILL');
  }
}

/** Seconds the API process has spent in garbage collection so far, from its admin /metrics (prom-client's). */
async function apiGcSeconds(adminUrl: string): Promise<number> {
  const text = await (
    await fetch(`${adminUrl}/metrics`, { headers: { authorization: `Bearer ${BENCH_ADMIN_TOKEN}` } })
  ).text();
  let sum = 0;
  for (const m of text.matchAll(/^nodejs_gc_duration_seconds_sum\{[^}]*\} (\S+)$/gm)) sum += Number(m[1]);
  return sum;
}

function report(name: string, r: autocannon.Result): void {
  const non2xx = r.non2xx + r.errors + r.timeouts;
  console.log(
    `${name.padEnd(34)} ${r.requests.average.toFixed(0).padStart(7)} req/s   p50 ${String(r.latency.p50).padStart(4)} ms   p99 ${String(
      r.latency.p99,
    ).padStart(4)} ms   max ${r.latency.max} ms   total ${r.requests.total}   non-2xx/errors ${non2xx}`,
  );
  console.log(
    `  latency ms: p75 ${r.latency.p75} p90 ${r.latency.p90} p97.5 ${r.latency.p97_5} p99.9 ${r.latency.p99_9}`,
  );
}

/** `count` ready wallets of `type`, created one after another. */
async function createWallets(url: string, headers: Record<string, string>, type: string, count: number) {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const res = await fetch(`${url}/v1/wallets`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ type, userIdentifier: `${type}-${i}-${Date.now()}`, userIdentifierType: 'CUSTOM_ID' }),
    });
    ids.push(((await res.json()) as { id: string }).id);
  }
  return ids;
}

async function main(): Promise<void> {
  if (PERF && !perfAvailable()) throw new Error('BENCH_PERF=1 needs perf with permission to sample every CPU (root)');
  execFileSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' });
  console.log(`machine: ${os.cpus().length} cores, ${os.cpus()[0]?.model}, node ${process.version}`);
  if (ONLY.includes('startup')) {
    const times: number[] = [];
    for (let i = 0; i < 3; i++) {
      const s = await startAppliance();
      times.push(s.readyMs);
      await stopAppliance(s);
    }
    console.log(`start-up to ready (empty data dir)   ${times.map((t) => `${t.toFixed(0)} ms`).join(', ')}`);
  }
  const raw: Record<string, number> = {};
  let emptyRoute: number | undefined;
  if (ONLY.includes('sign-evm') || ONLY.includes('sign-solana')) {
    const primitives = [
      ...(ONLY.includes('sign-evm') ? (['libsecp256k1-sign+recover'] as const) : []),
      ...(ONLY.includes('sign-solana') ? (['libsodium-ed25519-sign+verify'] as const) : []),
    ];
    for (const primitive of primitives) {
      raw[primitive] = await rawSigningRate(primitive, SECONDS);
      console.log(
        `raw in-process ${primitive.padEnd(30)} ${raw[primitive]!.toFixed(0).padStart(7)} sig/s on ${os.cpus().length} cores`,
      );
    }
    emptyRoute = await emptyRouteRate();
  }
  if (!['create', 'get', 'sign-evm', 'sign-solana', 'sign-mixed'].some((phase) => ONLY.includes(phase))) return;

  const svc = await startAppliance(
    PROFILE || PERF
      ? {
          env: {
            NODE_OPTIONS: [
              PROFILE ? `--import ${path.join(ROOT, 'test/bench/cpu-profile-preload.mjs')}` : '',
              // JIT code maps in /tmp, for perf to name JavaScript frames.
              PERF ? '--perf-basic-prof' : '',
            ].join(' '),
          },
        }
      : {},
  );
  await new Promise((r) => setTimeout(r, SETTLE_MS));
  /** Processes that ran with --perf-basic-prof. */
  const perfPids = new Set<number>();
  try {
    const { secretKey: key } = await createPartnerKey(svc.adminUrl, BENCH_ADMIN_TOKEN, {
      plan: 'enterprise',
      rateLimitPerMinute: 10_000_000,
    });
    const headers = { 'x-api-key': key, 'content-type': 'application/json' };
    let n = 0;
    if (ONLY.includes('create')) {
      const r = await autocannon({
        url: `${svc.url}/v1/wallets`,
        connections: 32,
        duration: SECONDS,
        requests: [
          {
            method: 'POST',
            headers,
            setupRequest: (req) => ({
              ...req,
              body: JSON.stringify({ type: 'EVM', userIdentifier: `bench-${n++}`, userIdentifierType: 'CUSTOM_ID' }),
            }),
          },
        ],
      });
      report('POST /v1/wallets (EVM), 32 conns', r);
    }
    if (ONLY.includes('get')) {
      const ids = await createWallets(svc.url, headers, 'EVM', 64);
      let j = 0;
      const r = await autocannon({
        url: svc.url,
        connections: 64,
        duration: SECONDS,
        requests: [
          {
            method: 'GET',
            headers: { 'x-api-key': key },
            setupRequest: (req) => ({ ...req, path: `/v1/wallets/${ids[j++ % ids.length]}` }),
          },
        ],
      });
      report('GET /v1/wallets/{id}, 64 conns', r);
    }
    for (const [phase, type] of [
      ['sign-evm', 'EVM'],
      ['sign-solana', 'SOLANA'],
    ] as const) {
      if (!ONLY.includes(phase)) continue;
      const ids = await createWallets(svc.url, headers, type, 64);
      let k = 0;
      const procs = applianceProcesses(svc.proc.pid!, { 'bench (autocannon)': process.pid });
      const toggleProfiles = () => {
        if (PROFILE) for (const name of ['api', 'enclave']) if (procs[name]) process.kill(procs[name]!, 'SIGUSR2');
      };
      toggleProfiles();
      const gcBefore = await apiGcSeconds(svc.adminUrl);
      // perf samples the middle of the phase: from 1 s in to 1 s before its end.
      const perfSeconds = Math.max(1, SECONDS - 2);
      const perfFile = path.join(os.tmpdir(), `wcs-perf-${phase}.data`);
      const perfDone = PERF
        ? new Promise((r) => setTimeout(r, 1000)).then(() => recordMachine(perfFile, perfSeconds))
        : undefined;
      const r = await withCpu(
        procs,
        'request',
        (result) => result.requests.total,
        () =>
          autocannon({
            url: svc.url,
            connections: SIGN_CONNECTIONS,
            duration: SECONDS,
            requests: [
              {
                method: 'POST',
                headers,
                body: JSON.stringify({ message: 'benchmark message: sign me' }),
                setupRequest: (req) => ({ ...req, path: `/v1/wallets/${ids[k++ % ids.length]}/sign-message` }),
              },
            ],
          }),
      );
      toggleProfiles();
      const gc = (await apiGcSeconds(svc.adminUrl)) - gcBefore;
      report(`POST sign-message (${type}), ${SIGN_CONNECTIONS} conns`, r);
      console.log(`  API garbage collection: ${((gc / r.requests.total) * 1e6).toFixed(1)} µs per request`);
      if (perfDone) {
        await perfDone;
        const threads = new Map<number, string>();
        for (const tid of threadIds(procs['api']!)) threads.set(tid, 'api other threads');
        for (const tid of threadIds(procs['enclave']!)) threads.set(tid, 'enclave crypto workers and other threads');
        for (const tid of threadIds(process.pid)) threads.set(tid, 'bench other threads');
        perfPids.add(procs['api']!).add(procs['enclave']!).add(svc.proc.pid!);
        threads.set(procs['api']!, 'api main thread');
        threads.set(procs['enclave']!, 'enclave main thread');
        threads.set(process.pid, 'bench (autocannon)');
        // Requests served while perf recorded: the phase's average rate over the recorded seconds.
        printBreakdown(perfFile, threads, r.requests.average * perfSeconds, perfSeconds, os.availableParallelism());
        console.log(`  perf samples: ${perfFile} (perf report -i ${perfFile})`);
      }
      if (PROFILE)
        console.log(
          `  CPU profiles: ${os.tmpdir()}/wcs-profile-<pid>.cpuprofile (api ${procs['api']}, enclave ${procs['enclave']})`,
        );
      const primitive = type === 'EVM' ? 'libsecp256k1-sign+recover' : 'libsodium-ed25519-sign+verify';
      const signRate = raw[primitive]!;
      // What the machine can do for this request: the empty route's HTTP work and the raw signature, on the
      // same two cores, one after the other.
      const limit = 1 / (1 / emptyRoute! + 1 / signRate);
      console.log(
        `  machine limit 1/(1/empty route + 1/raw ${primitive}) = ${limit.toFixed(0)}/s; service at ${(r.requests.average / limit).toFixed(2)} of it`,
      );
    }
    if (ONLY.includes('sign-mixed')) {
      // Open loop (fixed request rates), so that the small requests' latency alone and beside the slow work compare.
      const light = await createWallets(svc.url, headers, 'SOLANA', 16);
      const heavy = await createWallets(svc.url, headers, 'EVM', 16);
      let l = 0;
      let h = 0;
      const load = (
        rate: number,
        connections: number,
        route: (i: number) => string,
        body: () => string,
      ): Promise<autocannon.Result> => {
        let i = 0;
        return autocannon({
          url: svc.url,
          connections,
          overallRate: rate,
          duration: SECONDS,
          requests: [{ method: 'POST', headers, setupRequest: (req) => ({ ...req, path: route(i++), body: body() }) }],
        });
      };
      const small = JSON.stringify({ message: 'small message' });
      const lightLoad = () =>
        load(
          LIGHT_RATE,
          16,
          () => `/v1/wallets/${light[l++ % light.length]}/sign-message`,
          () => small,
        );
      report(`small Solana sign-message alone, ${LIGHT_RATE}/s`, await lightLoad());
      const bigMessage = JSON.stringify({ message: 'x'.repeat(64 * 1024) });
      const bigTypedData = JSON.stringify({
        typedData: { ...EIP712_MAIL, message: { ...EIP712_MAIL.message, contents: 'x'.repeat(256 * 1024) } },
      });
      const [underLoad, big, typed, creates] = await Promise.all([
        lightLoad(),
        load(
          200,
          16,
          () => `/v1/wallets/${heavy[h++ % heavy.length]}/sign-message`,
          () => bigMessage,
        ),
        load(
          10,
          8,
          () => `/v1/wallets/${heavy[h++ % heavy.length]}/sign-typed-data`,
          () => bigTypedData,
        ),
        load(
          200,
          16,
          () => '/v1/wallets',
          () => JSON.stringify({ type: 'SUI', userIdentifier: `mixed-${n++}`, userIdentifierType: 'CUSTOM_ID' }),
        ),
      ]);
      report('  the same, beside the three loads below', underLoad);
      report('  64 KiB EVM sign-message, 200/s', big);
      report('  256 KiB EIP-712 sign-typed-data, 10/s', typed);
      report('  POST /v1/wallets (SUI), 200/s', creates);
    }
  } finally {
    await stopAppliance(svc);
    // --perf-basic-prof also has V8 write a log per isolate into the working directory (NODE_OPTIONS may not move it).
    if (PERF) for (const pid of perfPids) removeV8Logs(ROOT, pid);
  }
}

void main();
