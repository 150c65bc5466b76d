/**
 * The supervisor (`npm start`): starts the enclave process and the API process side by side; the API
 * waits for the enclave's socket before it restores actors and listens, so nothing is served before the
 * enclave answers (starting both at once saves the API's own load time on start-up). It restarts either child when it dies (with a growing back-off) and, on
 * SIGTERM/SIGINT, stops the API first, then the enclave.
 */
import { type ChildProcess, fork } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError, loadConfig } from './api/config.ts';

const root = path.dirname(fileURLToPath(import.meta.url));
const READY_TIMEOUT_MS = 30_000;

interface Child {
  name: 'enclave' | 'api';
  entry: string;
  proc?: ChildProcess;
  restarts: number;
  startedAt: number;
}

function log(msg: string): void {
  console.log(`[supervisor] ${msg}`);
}

function start(child: Child): Promise<void> {
  return new Promise((resolve, reject) => {
    const proc = fork(path.join(root, child.entry), [], {
      execArgv: ['--import', 'tsx'],
      env: process.env,
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    child.proc = proc;
    child.startedAt = Date.now();
    log(`${child.name} starting (pid ${proc.pid})`);
    const timer = setTimeout(
      () => reject(new Error(`${child.name} did not become ready in ${READY_TIMEOUT_MS} ms`)),
      READY_TIMEOUT_MS,
    );
    const onMessage = (m: unknown) => {
      if ((m as { type?: string })?.type === 'ready') {
        clearTimeout(timer);
        proc.off('message', onMessage);
        resolve();
      }
    };
    proc.on('message', onMessage);
    proc.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${child.name} exited during start (${signal ?? `code ${code}`})`));
    });
  });
}

async function main(): Promise<void> {
  try {
    loadConfig();
  } catch (err) {
    console.error(err instanceof ConfigError ? err.message : String(err));
    process.exit(1);
  }
  const t0 = Date.now();
  const enclave: Child = { name: 'enclave', entry: 'enclave/main.ts', restarts: 0, startedAt: 0 };
  const api: Child = { name: 'api', entry: 'api/main.ts', restarts: 0, startedAt: 0 };
  let stopping = false;

  const watch = (child: Child) => {
    child.proc?.once('exit', (code, signal) => {
      if (stopping) return;
      // A child that ran a while gets a fresh back-off; one that keeps dying waits longer each time.
      if (Date.now() - child.startedAt > 30_000) child.restarts = 0;
      const delay = Math.min(5_000, 100 * 2 ** child.restarts);
      child.restarts += 1;
      log(`${child.name} exited (${signal ?? `code ${code}`}); restarting in ${delay} ms`);
      setTimeout(() => {
        if (stopping) return;
        start(child).then(
          () => {
            log(`${child.name} restarted`);
            watch(child);
          },
          (err: Error) => {
            log(err.message);
            watch(child);
            child.proc?.kill('SIGKILL');
          },
        );
      }, delay);
    });
  };

  try {
    await Promise.all([start(enclave), start(api)]);
    watch(enclave);
    watch(api);
  } catch (err) {
    console.error(`[supervisor] ${(err as Error).message}`);
    enclave.proc?.kill('SIGTERM');
    api.proc?.kill('SIGTERM');
    process.exit(1);
  }
  log(`ready in ${Date.now() - t0} ms`);

  const stopChild = (child: Child) =>
    new Promise<void>((resolve) => {
      const p = child.proc;
      if (!p || p.exitCode !== null || p.signalCode !== null) return resolve();
      const kill = setTimeout(() => p.kill('SIGKILL'), 10_000);
      p.once('exit', () => {
        clearTimeout(kill);
        resolve();
      });
      p.kill('SIGTERM');
    });
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log(`${signal}: stopping`);
    await stopChild(api);
    await stopChild(enclave);
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

void main();
