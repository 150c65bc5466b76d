/**
 * The appliance as the benchmarks run it: what `npm start` runs after its build step (the supervisor bundle in
 * dist/), on a fresh data directory, with both listeners on free ports; resolved once `/readyz` answers 200.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../../fixtures/free-port.ts';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const BENCH_ADMIN_TOKEN = 'bench-admin-token-0123456789abcdef';

export interface Appliance {
  proc: ChildProcess;
  url: string;
  adminUrl: string;
  dataDir: string;
  /** From spawn to the first 200 of /readyz. */
  readyMs: number;
}

export async function startAppliance(
  options: {
    logLevel?: string;
    /** More environment for the service (CHAINS_FILE, time constants). */
    env?: Record<string, string>;
    /** How long the service may take to answer /readyz 200 (default 30 s). */
    readyTimeoutMs?: number;
    /** Wraps the command line (for example to raise a resource limit first). */
    command?: (argv: string[]) => [string, string[]];
  } = {},
): Promise<Appliance> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'wcs-bench-'));
  const port = await freePort();
  const adminPort = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const argv = [process.execPath, '--enable-source-maps', 'dist/main.js'];
  const [cmd, args] = options.command ? options.command(argv) : [argv[0]!, argv.slice(1)];
  const t0 = performance.now();
  const proc = spawn(cmd, args, {
    cwd: ROOT,
    env: {
      ...process.env,
      DATA_DIR: dataDir,
      PORT: String(port),
      ADMIN_PORT: String(adminPort),
      ADMIN_TOKEN: BENCH_ADMIN_TOKEN,
      LOG_LEVEL: options.logLevel ?? 'warn',
      ...options.env,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  for (;;) {
    try {
      if ((await fetch(`${url}/readyz`)).status === 200) break;
    } catch {
      // not listening yet
    }
    if (proc.exitCode !== null) throw new Error(`the service exited with ${proc.exitCode} before it was ready`);
    const limit = options.readyTimeoutMs ?? 30_000;
    if (performance.now() - t0 > limit) throw new Error(`service did not become ready in ${limit / 1000} s`);
    await new Promise((r) => setTimeout(r, 10));
  }
  return { proc, url, adminUrl: `http://127.0.0.1:${adminPort}`, dataDir, readyMs: performance.now() - t0 };
}

/** SIGTERM to the supervisor, its exit awaited, the data directory removed. */
export async function stopAppliance(s: Pick<Appliance, 'proc' | 'dataDir'>): Promise<void> {
  if (s.proc.exitCode === null && s.proc.signalCode === null) {
    await new Promise<void>((resolve) => {
      s.proc.once('exit', () => resolve());
      process.kill(s.proc.pid!, 'SIGTERM');
    });
  }
  fs.rmSync(s.dataDir, { recursive: true, force: true });
}
