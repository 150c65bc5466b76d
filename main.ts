/**
 * The supervisor (`npm start`): starts the enclave process and the API process side by side; the API
 * waits for the enclave's socket before it restores actors and listens, so nothing is served before the
 * enclave answers (starting both at once saves the API's own load time on start-up). It restarts a child
 * that dies, with a growing back-off, and on SIGTERM/SIGINT stops the API first, then the enclave.
 *
 * The supervisor reads no configuration itself (so it stays small and starts fast): each child checks
 * its own and exits with EX_CONFIG (78) and a message naming the variable, and the supervisor then stops.
 */
import { type ChildProcess, fork } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.dirname(fileURLToPath(import.meta.url));
/** From source (`node --import tsx main.ts`) the children run as TypeScript; from dist/ as the built bundles. */
const fromSource = import.meta.url.endsWith('.ts');
const EXT = fromSource ? '.ts' : '.js';
const READY_TIMEOUT_MS = 30_000;
const EX_CONFIG = 78;
/** A child's exit code when another process holds the data directory, the socket or the port. */
const EX_IN_USE = 75;

interface Child {
  name: 'enclave' | 'api';
  entry: string;
  proc?: ChildProcess;
  restarts: number;
  startedAt: number;
}

const log = (msg: string) => console.log(`[supervisor] ${msg}`);
const running = (p?: ChildProcess) => !!p && p.exitCode === null && p.signalCode === null;

/** Forks a child and resolves when it reports `{type: 'ready'}`; rejects if it exits or times out first. */
function start(child: Child): Promise<void> {
  return new Promise((resolve, reject) => {
    const proc = fork(path.join(root, `${child.entry}${EXT}`), [], {
      execArgv: fromSource ? ['--import', 'tsx'] : ['--enable-source-maps'],
      env: process.env,
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    child.proc = proc;
    child.startedAt = Date.now();
    log(`${child.name} starting (pid ${proc.pid})`);
    const timer = setTimeout(
      () => reject(new Error(`${child.name} not ready in ${READY_TIMEOUT_MS} ms`)),
      READY_TIMEOUT_MS,
    );
    const onMessage = (m: unknown) => {
      if ((m as { type?: string })?.type !== 'ready') return;
      clearTimeout(timer);
      proc.off('message', onMessage);
      resolve();
    };
    proc.on('message', onMessage);
    proc.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(Object.assign(new Error(`${child.name} exited during start (${signal ?? `code ${code}`})`), { code }));
    });
  });
}

async function main(): Promise<void> {
  const t0 = Date.now();
  const enclave: Child = { name: 'enclave', entry: 'enclave/main', restarts: 0, startedAt: 0 };
  const api: Child = { name: 'api', entry: 'api/main', restarts: 0, startedAt: 0 };
  let stopping = false;

  function stopChild(child: Child): Promise<void> {
    return new Promise<void>((resolve) => {
      const p = child.proc;
      if (!p || !running(p)) return resolve();
      const kill = setTimeout(() => p.kill('SIGKILL'), 10_000);
      p.once('exit', () => {
        clearTimeout(kill);
        resolve();
      });
      p.kill('SIGTERM');
    });
  }

  async function shutdown(reason: string, exitCode: number): Promise<void> {
    if (stopping) return;
    stopping = true;
    log(`${reason}: stopping`);
    await stopChild(api);
    await stopChild(enclave);
    process.exit(exitCode);
  }

  function watch(child: Child): void {
    child.proc?.once('exit', (code, signal) => restartLater(child, code, signal));
  }

  function restartLater(child: Child, code: number | null, signal: NodeJS.Signals | null): void {
    if (stopping) return;
    if (code === EX_CONFIG) {
      log(`${child.name} stopped on a configuration error; fix it and start again`);
      void shutdown('configuration error', 1);
      return;
    }
    // A child that ran a while gets a fresh back-off; one that keeps dying waits longer each time.
    if (Date.now() - child.startedAt > 30_000) child.restarts = 0;
    const delay = Math.min(5_000, 100 * 2 ** child.restarts);
    child.restarts += 1;
    log(`${child.name} exited (${signal ?? `code ${code}`}); restarting in ${delay} ms`);
    setTimeout(async () => {
      if (stopping) return;
      try {
        await start(child);
        log(`${child.name} restarted`);
        watch(child);
      } catch (err) {
        log((err as Error).message);
        const p = child.proc;
        if (running(p)) {
          watch(child);
          p!.kill('SIGKILL');
        } else {
          restartLater(child, p?.exitCode ?? null, p?.signalCode ?? null);
        }
      }
    }, delay);
  }

  process.on('SIGTERM', () => void shutdown('SIGTERM', 0));
  process.on('SIGINT', () => void shutdown('SIGINT', 0));

  try {
    await Promise.all([start(enclave), start(api)]);
  } catch (err) {
    // A child that stopped on a configuration error or on a running instance has printed why, in one line.
    const code = (err as { code?: number }).code;
    if (code !== EX_CONFIG && code !== EX_IN_USE) console.error(`[supervisor] ${(err as Error).message}`);
    await shutdown('start failed', 1);
    return;
  }
  watch(enclave);
  watch(api);
  log(`ready in ${Date.now() - t0} ms`);
}

void main();
