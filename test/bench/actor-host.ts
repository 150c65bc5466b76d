/**
 * Benchmarks of the actor host. Prints figures; asserts nothing. Run: `npm run bench:actors`.
 *
 *   BENCH_ONLY      comma list of phases: waiting,wakes,deliver (default all)
 *   BENCH_ACTORS    waiting actors for `waiting` (default 100000)
 *   BENCH_SECONDS   duration of `wakes` and `deliver` (default 10)
 *
 * waiting: the API process (its real wiring, plus the test counter machine) started on a data directory holding
 *   that many stored actors that wait for a wake time an hour away: start to ready (/readyz 200, recovery done)
 *   and resident memory, beside the same process on an empty data directory.
 * wakes: 1,000 stored actors due at the same millisecond, every second; the lag of each WAKE (applied and
 *   committed minus its wake time), beside the disk's own fsync latency measured in the same run.
 * deliver: open-loop events at 2,000/s to 1,000 actors; deliver() latency (call to committed).
 */
import { type ChildProcess, execFileSync, fork } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { createActorHost } from '../../actors/host/host.ts';
import { freePort } from '../../fixtures/free-port.ts';
import { createStore, type Store } from '../../store/index.ts';
import { counterDefinition } from '../helpers/actor-machines.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const ONLY = (process.env['BENCH_ONLY'] ?? 'waiting,wakes,deliver').split(',');
const ACTORS = Number(process.env['BENCH_ACTORS'] ?? 100_000);
const SECONDS = Number(process.env['BENCH_SECONDS'] ?? 10);

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? Number.NaN;
};
const ms = (x: number) => `${x.toFixed(1)} ms`;

/** Stores `count` counter actors sleeping until `wakeAt(i)`, in one transaction (as the host writes them). */
function seedSleeping(store: Store, prefix: string, count: number, wakeAt: (i: number) => number): void {
  const insert = store.sqlite.prepare(
    `insert into actor_snapshots (actor_id, machine, machine_version, snapshot, state, done, wake_at, step, updated_at)
     values (?, 'counter', 1, ?, 'sleeping', 0, ?, 1, ?)`,
  );
  const now = new Date().toISOString();
  store.sqlite.transaction(() => {
    for (let i = 0; i < count; i++) {
      const at = wakeAt(i);
      const snapshot = JSON.stringify({
        value: 'sleeping',
        context: { applied: [], effects: 0, signed: 0, wakes: 0, wakeAt: at, error: null },
      });
      insert.run(`${prefix}${i}`, snapshot, at, now);
    }
  })();
}

/** fdatasync latency of a WAL-sized append on this disk: the floor under every committed step. */
function fsyncLatency(dir: string, n = 300): number[] {
  const file = path.join(dir, 'fsync-probe');
  const fd = fs.openSync(file, 'a');
  const buf = Buffer.alloc(4096, 1);
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    fs.writeSync(fd, buf);
    fs.fdatasyncSync(fd);
    out.push(performance.now() - t);
  }
  fs.closeSync(fd);
  fs.rmSync(file);
  return out;
}

function rssMb(pid: number): { rss: number; hwm: number } {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (k: string) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
  return { rss: kb('VmRSS') / 1024, hwm: kb('VmHWM') / 1024 };
}

function started(proc: ChildProcess, what: string): Promise<number> {
  return new Promise((resolve, reject) => {
    proc.on('message', (m: { type?: string; port?: number }) => {
      if (m?.type === 'ready') resolve(m.port ?? 0);
    });
    proc.once('exit', (code) => reject(new Error(`${what} exited with ${code}`)));
  });
}

async function phaseWaiting(): Promise<void> {
  execFileSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' });
  const child = path.join(ROOT, 'dist', 'bench', 'actor-api-child.js');
  await build({
    entryPoints: [path.join(ROOT, 'test/bench/actor-api-child.ts')],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    outfile: child,
    logLevel: 'warning',
  });
  for (const count of [0, ACTORS]) {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'wcs-bench-actors-'));
    const store = createStore(path.join(dataDir, 'service.db'));
    const t = Date.now() + 3600_000;
    seedSleeping(store, 'w', count, (i) => t + i);
    store.close();
    const env = {
      ...process.env,
      DATA_DIR: dataDir,
      ADMIN_TOKEN: 'bench-admin-token-0123456789abcdefgh',
      LOG_LEVEL: 'warn',
    };
    const enclave = fork(path.join(ROOT, 'dist/enclave/main.js'), [], {
      env,
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    });
    await started(enclave, 'enclave');
    const port = await freePort();
    const t0 = performance.now();
    const api = fork(child, [], { env: { ...env, PORT: String(port) }, stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
    await started(api, 'api');
    for (;;) {
      const r = await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined);
      if (r?.status === 200) break;
      await new Promise((res) => setTimeout(res, 5));
    }
    const readyMs = performance.now() - t0;
    const atReady = rssMb(api.pid!);
    await new Promise((r) => setTimeout(r, 2000));
    const settled = rssMb(api.pid!);
    console.log(
      `waiting actors ${String(count).padStart(7)}: start to ready ${ms(readyMs).padStart(10)}   RSS at ready ${atReady.rss.toFixed(0)} MB, 2 s later ${settled.rss.toFixed(0)} MB, peak ${settled.hwm.toFixed(0)} MB`,
    );
    for (const p of [api, enclave]) {
      await new Promise<void>((resolve) => {
        p.once('exit', () => resolve());
        p.kill('SIGTERM');
      });
    }
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

async function phaseWakes(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wcs-bench-wakes-'));
  const fsync = fsyncLatency(dir);
  console.log(`fsync of a 4 KiB append (this disk)    p50 ${ms(pct(fsync, 50))}   p99 ${ms(pct(fsync, 99))}`);
  const store = createStore(path.join(dir, 'service.db'));
  const t0 = Date.now() + 2000;
  const perSecond = 1000;
  /** The first seconds warm the code up (JIT): measured, and reported apart. */
  const warmup = 2;
  const seconds = warmup + SECONDS;
  seedSleeping(store, 'z', perSecond * seconds, (i) => t0 + Math.floor(i / perSecond) * 1000);
  const bySecond: number[][] = Array.from({ length: seconds }, () => []);
  const host = createActorHost({
    store: store.actors,
    definitions: [counterDefinition()],
    // The WAKE carries its wake time: lag = now - wake time, filed under the second it was due.
    onWakeLag: (lag) => {
      const second = Math.round((Date.now() - lag - t0) / 1000);
      bySecond[Math.min(seconds - 1, Math.max(0, second))]!.push(lag);
    },
    log: () => undefined,
  });
  await host.start();
  const total = perSecond * seconds;
  while (bySecond.reduce((n, l) => n + l.length, 0) < total) await new Promise((r) => setTimeout(r, 100));
  const cold = bySecond.slice(0, warmup).flat();
  const warm = bySecond.slice(warmup).flat();
  const worst = Math.max(...bySecond.slice(warmup).map((l) => pct(l, 99)));
  console.log(
    `wakes: ${perSecond}/s due at the same ms for ${SECONDS} s   lag p50 ${ms(pct(warm, 50))}   p99 ${ms(pct(warm, 99))}   worst second's p99 ${ms(worst)}   max ${ms(Math.max(...warm))}   (first ${warmup} s, code not yet optimized by the JIT: p99 ${ms(pct(cold, 99))})   live after ${host.liveCount()}`,
  );
  await host.stop();
  store.close();
  fs.rmSync(dir, { recursive: true, force: true });
}

async function phaseDeliver(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wcs-bench-deliver-'));
  const store = createStore(path.join(dir, 'service.db'));
  const counter = counterDefinition();
  const host = createActorHost({ store: store.actors, definitions: [counter], log: () => undefined });
  await host.start();
  const actors = 1000;
  for (let i = 0; i < actors; i++) await host.spawn(counter, `d${i}`, {});
  const rate = 2000;
  const tick = 5;
  const latencies: number[] = [];
  let sent = 0;
  let failed = 0;
  const pending: Promise<unknown>[] = [];
  const start = performance.now();
  await new Promise<void>((resolve) => {
    const timer = setInterval(() => {
      const elapsed = performance.now() - start;
      if (elapsed >= SECONDS * 1000) {
        clearInterval(timer);
        resolve();
        return;
      }
      // Open loop: catch up to the schedule, whatever the latency of what was sent.
      const due = Math.floor((elapsed / 1000) * rate) - sent;
      for (let i = 0; i < due; i++) {
        const id = `e${sent++}`;
        const t = performance.now();
        pending.push(
          host.deliver(`d${Math.floor(Math.random() * actors)}`, { type: 'ADD', id }, { id }).then(
            () => latencies.push(performance.now() - t),
            () => failed++,
          ),
        );
      }
    }, tick);
  });
  await Promise.all(pending);
  const seconds = (performance.now() - start) / 1000;
  console.log(
    `deliver(): ${sent} events to ${actors} actors at ${(sent / seconds).toFixed(0)}/s   p50 ${ms(pct(latencies, 50))}   p99 ${ms(pct(latencies, 99))}   max ${ms(Math.max(...latencies))}   failed ${failed}   live after ${host.liveCount()}`,
  );
  await host.stop();
  store.close();
  fs.rmSync(dir, { recursive: true, force: true });
}

console.log(`machine: ${os.cpus().length} cores, ${os.cpus()[0]?.model}, node ${process.version}`);
if (ONLY.includes('waiting')) await phaseWaiting();
if (ONLY.includes('wakes')) await phaseWakes();
if (ONLY.includes('deliver')) await phaseDeliver();
