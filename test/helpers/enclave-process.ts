/**
 * Runs the real enclave as a child process (`node --import tsx enclave/main.ts`) for tests and benchmarks.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { defaultSocketPath } from '../../enclave/socket-path.ts';
import { nodeArgs } from './entry.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface EnclaveProcess {
  child: ChildProcess;
  pid: number;
  socketPath: string;
  /** Everything the process wrote to stdout so far. */
  stdout(): string;
  /** Everything the process wrote to stderr so far. */
  stderr(): string;
  /** Resolves with the exit code (or signal name) once the process has exited. */
  exited: Promise<number | string>;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves once it has exited. Safe to call twice. */
  stop(graceMs?: number): Promise<number | string>;
  /** SIGKILL at once (no shutdown at all). */
  kill9(): Promise<number | string>;
}

/** Spawns the enclave with `DATA_DIR=dataDir` (plus `env`) and resolves once it reports ready. */
export function spawnEnclave(options: {
  dataDir: string;
  env?: Record<string, string>;
  readyTimeoutMs?: number;
}): Promise<EnclaveProcess> {
  const socketPath = options.env?.ENCLAVE_SOCKET ?? defaultSocketPath(options.dataDir);
  const env: Record<string, string | undefined> = { ...process.env, DATA_DIR: options.dataDir, ...options.env };
  if (!options.env || !('ENCLAVE_MASTER_KEY' in options.env)) delete env.ENCLAVE_MASTER_KEY;
  const child = spawn(process.execPath, nodeArgs('enclave/main'), {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (text: string) => {
    stdout += text;
  });
  child.stderr!.setEncoding('utf8').on('data', (text: string) => {
    stderr += text;
  });
  const exited = new Promise<number | string>((resolve) => {
    child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown'));
  });
  const pid = child.pid!;

  const signal = (name: NodeJS.Signals): void => {
    if (child.exitCode === null && child.signalCode === null) process.kill(pid, name);
  };
  const handle: EnclaveProcess = {
    child,
    pid,
    socketPath,
    stdout: () => stdout,
    stderr: () => stderr,
    exited,
    async stop(graceMs = 5000) {
      signal('SIGTERM');
      const timer = setTimeout(() => signal('SIGKILL'), graceMs);
      const result = await exited;
      clearTimeout(timer);
      return result;
    },
    async kill9() {
      signal('SIGKILL');
      return exited;
    },
  };

  return new Promise<EnclaveProcess>((resolve, reject) => {
    const timer = setTimeout(() => {
      signal('SIGKILL');
      reject(new Error(`enclave not ready within ${options.readyTimeoutMs ?? 15_000} ms; stderr:\n${stderr}`));
    }, options.readyTimeoutMs ?? 15_000);
    child.on('message', (message: unknown) => {
      if ((message as { type?: unknown })?.type === 'ready') {
        clearTimeout(timer);
        resolve(handle);
      }
    });
    exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`enclave exited (${code}) before it was ready; stderr:\n${stderr}`));
    });
  });
}
