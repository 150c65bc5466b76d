import { type ChildProcess, spawn } from 'node:child_process';
import { freePort } from '../../fixtures/free-port.ts';
import { nodeArgs } from './entry.ts';
import { ROOT } from './service.ts';

/** The whole appliance as `npm start` runs it, from source, for tests that kill its processes. */
export interface RunningSupervisor {
  proc: ChildProcess;
  url: string;
  adminUrl: string;
  /** Everything the supervisor and its children printed so far. */
  log(): string;
  /** The API child's pid, from the supervisor's "api starting (pid N)" line (the latest one). */
  apiPid(): number;
  /** Polls `pred` until it holds; the error names `what` and carries the log. */
  waitFor(pred: () => boolean | Promise<boolean>, what: string, timeoutMs?: number): Promise<void>;
  /** SIGTERM to the supervisor, its exit awaited. Safe to call twice. */
  stop(): Promise<void>;
}

/**
 * Starts the supervisor (`main.ts` under tsx: its children run as TypeScript; operator.spec covers dist/) on free
 * ports with `env` added, and resolves once it reports ready.
 */
export async function startSupervisor(env: Record<string, string>): Promise<RunningSupervisor> {
  const port = await freePort();
  const adminPort = await freePort();
  let log = '';
  const proc = spawn(process.execPath, nodeArgs('main'), {
    cwd: ROOT,
    env: { ...process.env, PORT: String(port), ADMIN_PORT: String(adminPort), LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  proc.stdout?.on('data', (d) => {
    log += String(d);
  });
  proc.stderr?.on('data', (d) => {
    log += String(d);
  });
  const sup: RunningSupervisor = {
    proc,
    url: `http://127.0.0.1:${port}`,
    adminUrl: `http://127.0.0.1:${adminPort}`,
    log: () => log,
    apiPid: () => Number([...log.matchAll(/api starting \(pid (\d+)\)/g)].pop()![1]),
    async waitFor(pred, what, timeoutMs = 30_000) {
      const until = Date.now() + timeoutMs;
      while (!(await pred())) {
        if (Date.now() > until) throw new Error(`timed out waiting for ${what}\n${log}`);
        await new Promise((r) => setTimeout(r, 25));
      }
    },
    async stop() {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      await new Promise<void>((resolve) => {
        // A supervisor that does not stop within its own grace (10 s) and ours is killed: a test never hangs on it.
        const force = setTimeout(() => proc.kill('SIGKILL'), 20_000);
        proc.once('exit', () => {
          clearTimeout(force);
          resolve();
        });
        process.kill(proc.pid!, 'SIGTERM');
      });
    },
  };
  try {
    await sup.waitFor(() => /\[supervisor\] ready/.test(log), 'the service');
  } catch (err) {
    // Not ready in time (a loaded machine): stopped here, since the caller never gets it to stop, and its open pipes
    // would keep the test process alive for good.
    await sup.stop();
    throw err;
  }
  return sup;
}

/** A child's pid, from the supervisor's latest "<name> starting (pid N)" line. */
export function childPid(sup: RunningSupervisor, name: 'api' | 'enclave'): number {
  const m = [...sup.log().matchAll(new RegExp(`\\[supervisor\\] ${name} starting \\(pid (\\d+)\\)`, 'g'))].pop();
  if (!m) throw new Error(`the supervisor has not started its ${name}`);
  return Number(m[1]);
}

/** Whether a process exists. */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * Stops processes with SIGSTOP (an enclave stopped so still accepts on its socket, but answers nothing) and
 * continues them, remembering which are stopped so that a test's `after` hook continues them whatever happened.
 */
export function createPauser() {
  const stopped = new Set<number>();
  return {
    pause(pid: number): void {
      process.kill(pid, 'SIGSTOP');
      stopped.add(pid);
    },
    resume(pid: number): void {
      process.kill(pid, 'SIGCONT');
      stopped.delete(pid);
    },
    resumeAll(): void {
      for (const pid of stopped) {
        try {
          process.kill(pid, 'SIGCONT');
        } catch {
          // gone already
        }
      }
      stopped.clear();
    },
  };
}
