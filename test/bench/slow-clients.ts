/**
 * Slow clients against the running appliance (supervisor, enclave, API from `dist/`, as `npm start` runs
 * them): a swarm of idle and trickling connections holds the public listener while autocannon measures a
 * normal route. Prints the served rate and p99 without and with the swarm, and the API's resident memory
 * before, during and after. Asserts nothing. Run: `npm run bench:slow-clients`.
 *
 *   SLOW_CLIENTS          connections the swarm keeps open (default 20000): a third silent, a third sending
 *                         a request head one byte at a time, a third a request body one byte at a time;
 *                         each reopens one to two seconds after the service closes it
 *   BENCH_SECONDS         duration of each autocannon phase (default 10)
 *   HTTP_MAX_CONNECTIONS  and the other HTTP_* variables are passed to the service (docs/operations.md, Configuration)
 *
 * The service and the swarm run with their open-file limit raised when the shell allows it (with
 * CAP_SYS_RESOURCE the hard limit too; otherwise the soft limit goes up to the hard one); the limits are
 * printed. The swarm is split over as many processes as its limit needs, and connects from four loopback
 * addresses so that it does not run out of ephemeral ports.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { createPartnerKey } from '../helpers/http.ts';
import { BENCH_ADMIN_TOKEN, ROOT, startAppliance, stopAppliance } from './appliance.ts';

const SELF = fileURLToPath(import.meta.url);
const SLOW = Number(process.env['SLOW_CLIENTS'] ?? 20_000);
const SECONDS = Number(process.env['BENCH_SECONDS'] ?? 10);
/** The open-file limit asked for, for the service and the swarm. */
const WANTED_FDS = Math.max(65_536, SLOW * 2 + 4096);
const SOURCES = ['127.0.0.2', '127.0.0.3', '127.0.0.4', '127.0.0.5'];

/** What the swarm reports every half second. */
interface SwarmStats {
  open: number;
  opened: number;
  closedByServer: number;
  answered408: number;
  /** Closed by the service without a byte of answer: at the connection cap (or a reset). */
  closedSilently: number;
  connectErrors: number;
  /** Median lifetime of the connections the service answered with a 408, in ms. */
  p50LifetimeMs: number;
  /** CPU the swarm process has used so far (user + system), in seconds. */
  cpuSeconds: number;
  fdLimit: string;
}

/** `sh -c` that raises the open-file limit as far as allowed, then runs the command. */
function withRaisedFdLimit(argv: string[]): [string, string[]] {
  return [
    'sh',
    ['-c', `ulimit -n ${WANTED_FDS} 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null; exec "$@"`, 'sh', ...argv],
  ];
}

/** This process's open-file limits (Linux), as [soft, hard]; unknown elsewhere. */
function fdLimits(): [number, number] | undefined {
  try {
    const line = fs
      .readFileSync('/proc/self/limits', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('Max open files'));
    const [soft, hard] = line?.split(/\s+/).slice(3, 5) ?? [];
    return [Number(soft), Number(hard)];
  } catch {
    return undefined;
  }
}

function fdLimitOfSelf(): string {
  const l = fdLimits();
  return l ? `${l[0]} soft / ${l[1]} hard` : 'unknown';
}

// ---------------------------------------------------------------------------------------------------------
// The swarm: a child process holding SLOW connections.

async function swarm(target: string, count: number, apiKey: string, offset: number): Promise<void> {
  const url = new URL(target);
  const port = Number(url.port);
  const body = 'x'.repeat(1000);
  const heads = {
    head: `POST /v1/wallets HTTP/1.1\r\nHost: ${url.host}\r\nX-Slow: `,
    body: `POST /v1/wallets HTTP/1.1\r\nHost: ${url.host}\r\nX-API-Key: ${apiKey}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
  };
  type Kind = 'silent' | 'head' | 'body';
  const kinds: Kind[] = ['silent', 'head', 'body'];
  const conns: Array<{ socket: net.Socket; kind: Kind; connected: boolean } | undefined> = new Array(count);
  const stats = { open: 0, opened: 0, closedByServer: 0, answered408: 0, closedSilently: 0, connectErrors: 0 };
  const lifetimes: number[] = [];
  let stopping = false;

  function openOne(i: number): void {
    const kind = kinds[i % kinds.length]!;
    const t0 = performance.now();
    let gotData = false;
    const socket = net.connect({ host: url.hostname, port, localAddress: SOURCES[(i + offset) % SOURCES.length] });
    const conn = { socket, kind, connected: false };
    conns[i] = conn;
    socket.on('connect', () => {
      conn.connected = true;
      stats.open += 1;
      stats.opened += 1;
      if (kind !== 'silent') socket.write(heads[kind]);
    });
    socket.on('data', (d: Buffer) => {
      if (!gotData && d.toString('latin1', 0, 16).includes(' 408 ')) {
        stats.answered408 += 1;
        lifetimes.push(performance.now() - t0);
        if (lifetimes.length > 5000) lifetimes.splice(0, 2500);
      }
      gotData = true;
    });
    socket.on('error', (err: NodeJS.ErrnoException) => {
      if (!conn.connected) stats.connectErrors += err.code === 'ECONNRESET' ? 0 : 1;
    });
    socket.on('close', () => {
      if (conn.connected) {
        stats.open -= 1;
        if (!stopping) {
          stats.closedByServer += 1;
          if (!gotData) stats.closedSilently += 1;
        }
      }
      conns[i] = undefined;
      // Back after a second or two, as slowloris-style tools recreate their sockets.
      if (!stopping) setTimeout(() => openOne(i), 1000 + Math.random() * 1000);
    });
  }

  // Open in steps, as a crowd would arrive, rather than one burst that overflows the listen backlog.
  for (let i = 0; i < count; i += 250) {
    for (let j = i; j < Math.min(count, i + 250); j++) openOne(j);
    await new Promise((r) => setTimeout(r, 20));
  }
  // Each trickling connection sends one byte every 2 s (a twentieth of them every 100 ms).
  let slice = 0;
  const trickle = setInterval(() => {
    for (let i = slice; i < count; i += 20) {
      const c = conns[i];
      if (c?.connected && c.kind !== 'silent' && c.socket.writable) c.socket.write(c.kind === 'head' ? 'a' : ' ');
    }
    slice = (slice + 1) % 20;
  }, 100);
  const report = setInterval(() => {
    const sorted = [...lifetimes].sort((a, b) => a - b);
    process.send?.({
      ...stats,
      p50LifetimeMs: sorted.length ? Math.round(sorted[Math.floor(sorted.length / 2)]!) : 0,
      cpuSeconds: (process.cpuUsage().user + process.cpuUsage().system) / 1e6,
      fdLimit: fdLimitOfSelf(),
    } satisfies SwarmStats);
  }, 500);
  process.on('message', (m) => {
    if (m !== 'stop') return;
    stopping = true;
    clearInterval(trickle);
    clearInterval(report);
    for (const c of conns) c?.socket.destroy();
    setTimeout(() => process.exit(0), 200);
  });
}

// ---------------------------------------------------------------------------------------------------------
// The bench.

interface ApiSample {
  rssMb: number;
  heapMb: number;
  openFds: number;
  maxFds: number;
  evicted: number;
  dropped: number;
  refused408: number;
  cpuSeconds: number;
  /** p99 of the event loop's delay since the previous scrape (prom-client resets it on each). */
  lagP99Ms: number;
}

async function sampleApi(adminUrl: string): Promise<ApiSample> {
  const text = await (await fetch(`${adminUrl}/metrics`)).text();
  const value = (re: RegExp) => Number(re.exec(text)?.[1] ?? Number.NaN);
  return {
    rssMb: value(/^process_resident_memory_bytes (\S+)/m) / 2 ** 20,
    heapMb: value(/^nodejs_heap_size_used_bytes (\S+)/m) / 2 ** 20,
    openFds: value(/^process_open_fds (\S+)/m),
    maxFds: value(/^process_max_fds (\S+)/m),
    evicted: value(/^http_connections_evicted_total\{listener="public"\} (\S+)/m) || 0,
    dropped: value(/^http_connections_dropped_total\{listener="public"\} (\S+)/m) || 0,
    refused408: value(/^http_refused_total\{listener="public",status="408"\} (\S+)/m) || 0,
    cpuSeconds: value(/^process_cpu_seconds_total (\S+)/m),
    lagP99Ms: value(/^nodejs_eventloop_lag_p99_seconds (\S+)/m) * 1000,
  };
}

/**
 * Samples the API every second while `work` runs; answers the largest resident memory seen and the API
 * process's CPU use over the run (100% is one core).
 */
async function peakRssDuring<T>(
  adminUrl: string,
  work: Promise<T>,
): Promise<{ result: T; peakMb: number; cpuPercent: number; lagP99Ms: number }> {
  const t0 = performance.now();
  const cpu0 = (await sampleApi(adminUrl)).cpuSeconds;
  let peakMb = 0;
  let lagP99Ms = 0;
  let done = false;
  const sampler = (async () => {
    while (!done) {
      const sample = await sampleApi(adminUrl);
      peakMb = Math.max(peakMb, sample.rssMb);
      lagP99Ms = Math.max(lagP99Ms, sample.lagP99Ms);
      await new Promise((r) => setTimeout(r, 1000));
    }
  })();
  const result = await work;
  done = true;
  await sampler;
  const cpuPercent = (100 * ((await sampleApi(adminUrl)).cpuSeconds - cpu0)) / ((performance.now() - t0) / 1000);
  return { result, peakMb, cpuPercent, lagP99Ms };
}

function line(name: string, r: autocannon.Result, extra = ''): void {
  const bad = r.non2xx + r.errors + r.timeouts;
  console.log(
    `${name.padEnd(40)} ${r.requests.average.toFixed(0).padStart(7)} req/s   p50 ${String(r.latency.p50).padStart(4)} ms   p99 ${String(
      r.latency.p99,
    ).padStart(5)} ms   non-2xx/errors ${bad}${extra}`,
  );
}

async function main(): Promise<void> {
  execFileSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' });
  console.log(`machine: ${os.cpus().length} cores, ${os.cpus()[0]?.model}, node ${process.version}`);
  const appliance = await startAppliance({ command: withRaisedFdLimit });
  const { url, adminUrl } = appliance;
  const swarmProcs: ChildProcess[] = [];
  try {
    const { secretKey } = await createPartnerKey(adminUrl, BENCH_ADMIN_TOKEN, {
      plan: 'enterprise',
      rateLimitPerMinute: 10_000_000,
    });
    const created = await fetch(`${url}/v1/wallets`, {
      method: 'POST',
      headers: { 'x-api-key': secretKey, 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'EVM', userIdentifier: 'slow-bench', userIdentifierType: 'CUSTOM_ID' }),
    });
    const walletId = ((await created.json()) as { id: string }).id;
    const measure = () =>
      autocannon({
        url: `${url}/v1/wallets/${walletId}`,
        connections: 32,
        duration: SECONDS,
        headers: { 'x-api-key': secretKey },
      });

    const idle = await sampleApi(adminUrl);
    console.log(`API open-file limit ${idle.maxFds}; bench ${fdLimitOfSelf()}`);
    const alone = await peakRssDuring(adminUrl, measure());
    line(
      'GET /v1/wallets/{id}, 32 conns, alone',
      alone.result,
      `   API RSS peak ${alone.peakMb.toFixed(0)} MB, CPU ${alone.cpuPercent.toFixed(0)}%, event-loop delay p99 ≤ ${alone.lagP99Ms.toFixed(0)} ms`,
    );
    const before = await sampleApi(adminUrl);

    // The swarm, in its own process (and open-file limit).
    // A child may raise its soft limit up to the hard one; keep a margin for its own files.
    const perProcess = Math.max(1000, Math.min(WANTED_FDS, fdLimits()?.[1] ?? WANTED_FDS) - 1024);
    const parts = Math.ceil(SLOW / perProcess);
    const partStats: SwarmStats[] = [];
    for (let p = 0; p < parts; p++) {
      const n = Math.min(perProcess, SLOW - p * perProcess);
      const [sCmd, sArgs] = withRaisedFdLimit([
        process.execPath,
        '--import',
        'tsx',
        SELF,
        '--swarm',
        url,
        String(n),
        secretKey,
        String(p),
      ]);
      const proc = spawn(sCmd, sArgs, { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
      proc.on('message', (m) => {
        partStats[p] = m as SwarmStats;
      });
      swarmProcs.push(proc);
    }
    const stats = (): SwarmStats => {
      const sum = (k: keyof Omit<SwarmStats, 'fdLimit' | 'p50LifetimeMs'>) =>
        partStats.reduce((a, s) => a + (s?.[k] ?? 0), 0);
      return {
        open: sum('open'),
        opened: sum('opened'),
        closedByServer: sum('closedByServer'),
        answered408: sum('answered408'),
        closedSilently: sum('closedSilently'),
        connectErrors: sum('connectErrors'),
        p50LifetimeMs: Math.max(0, ...partStats.map((s) => s?.p50LifetimeMs ?? 0)),
        cpuSeconds: partStats.reduce((a, s) => a + (s?.cpuSeconds ?? 0), 0),
        fdLimit: `${parts} process(es), each ${partStats[0]?.fdLimit ?? 'unknown'}`,
      };
    };
    // Let the crowd arrive and the first timeouts go round.
    const tArrive = Date.now();
    while (Date.now() - tArrive < 30_000 && stats().opened < SLOW) await new Promise((r) => setTimeout(r, 250));
    await new Promise((r) => setTimeout(r, 3000));
    const arrived = stats();
    console.log(
      `swarm: ${SLOW} slow clients asked for, ${arrived.open} open on the client side (handshakes still in the ` +
        `service's accept queue included), ${arrived.opened} connections made in ${((Date.now() - tArrive) / 1000).toFixed(0)} s (swarm ${arrived.fdLimit})`,
    );
    const tMeasure = performance.now();
    const underSwarm = await peakRssDuring(adminUrl, measure());
    const swarmCpuPercent = (100 * (stats().cpuSeconds - arrived.cpuSeconds)) / ((performance.now() - tMeasure) / 1000);
    const during = await sampleApi(adminUrl);
    const end = stats();
    line(
      `the same beside ${SLOW} slow clients`,
      underSwarm.result,
      `   API RSS peak ${underSwarm.peakMb.toFixed(0)} MB, CPU ${underSwarm.cpuPercent.toFixed(0)}%, event-loop delay p99 ≤ ${underSwarm.lagP99Ms.toFixed(0)} ms`,
    );
    console.log(
      `  swarm while measured: ${end.open} open, closed by the service ${end.closedByServer} (408 answers ${end.answered408}, ` +
        `median life ${end.p50LifetimeMs} ms; closed unanswered (at the cap) ${end.closedSilently}), connect errors ${end.connectErrors}; ` +
        `swarm CPU ${swarmCpuPercent.toFixed(0)}% (of the same ${os.cpus().length} cores)`,
    );
    console.log(
      `  API: ${during.openFds} open files, at the cap ${during.evicted - before.evicted} slow connections closed ` +
        `for newcomers and ${during.dropped - before.dropped} newcomers refused, ` +
        `${during.refused408 - before.refused408} answered 408`,
    );

    await Promise.all(
      swarmProcs.map((proc) => {
        const gone = new Promise((r) => proc.once('exit', r));
        proc.send('stop');
        return gone;
      }),
    );
    swarmProcs.length = 0;
    await new Promise((r) => setTimeout(r, 5000));
    const after = await sampleApi(adminUrl);
    const recovered = await measure();
    line('the same, 5 s after the swarm left', recovered);
    // V8 gives the heap back lazily: "after" shows what is still resident, not what is still referenced.
    console.log(
      `API resident memory: before ${before.rssMb.toFixed(0)} MB (heap ${before.heapMb.toFixed(0)}), during up to ` +
        `${underSwarm.peakMb.toFixed(0)} MB (heap ${during.heapMb.toFixed(0)} at the end), after ${after.rssMb.toFixed(0)} MB ` +
        `(heap ${after.heapMb.toFixed(0)}); open files after ${after.openFds}`,
    );
  } finally {
    for (const proc of swarmProcs) proc.kill('SIGKILL');
    await stopAppliance(appliance);
  }
}

if (process.argv[2] === '--swarm') {
  void swarm(process.argv[3]!, Number(process.argv[4]), process.argv[5]!, Number(process.argv[6] ?? 0));
} else {
  void main();
}
