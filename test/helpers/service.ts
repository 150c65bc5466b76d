import { type ChildProcess, fork } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Config } from '../../api/config.ts';
import type { RunningApi, startApi } from '../../api/server.ts';
import { entryOf } from './entry.ts';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/**
 * The API's modules and the contract checks, loaded by the first `startTestService`: a file that takes only
 * `ROOT` or `tempDataDir` from here does not pay for loading the whole API (seconds of CPU under tsx).
 */
const loadApi = async () => {
  const [config, server, contract, events] = await Promise.all([
    import('../../api/config.ts'),
    import('../../api/server.ts'),
    import('./contract-check.ts'),
    import('./event-contract-check.ts'),
  ]);
  return {
    loadConfig: config.loadConfig,
    startApi: server.startApi,
    contractViolations: contract.contractViolations,
    eventViolations: events.eventViolations,
  };
};

/** A fresh, empty data directory under the OS temp dir. */
export function tempDataDir(prefix = 'wcs-'): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

/** Starts the real enclave as a child process and resolves once it reports ready. */
export function startEnclaveProcess(dataDir: string, env: Record<string, string> = {}): Promise<ChildProcess> {
  return new Promise((resolve, reject) => {
    const enclave = entryOf('enclave/main');
    const proc = fork(enclave.file, [], {
      execArgv: enclave.execArgv,
      env: { ...process.env, DATA_DIR: dataDir, ...env },
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    });
    let stderr = '';
    proc.stderr?.on('data', (d) => {
      stderr += String(d);
    });
    const timer = setTimeout(() => {
      // Killed, not left running: its IPC channel would keep this process alive.
      proc.kill('SIGKILL');
      reject(new Error(`enclave not ready in time: ${stderr}`));
    }, 20_000);
    proc.on('message', (m) => {
      if ((m as { type?: string }).type === 'ready') {
        clearTimeout(timer);
        resolve(proc);
      }
    });
    proc.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`enclave exited with ${code}: ${stderr}`));
    });
  });
}

/** Stops a child process by its pid and waits for it to be gone. */
export async function stopProcess(proc: ChildProcess | undefined, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
  await new Promise<void>((resolve) => {
    proc.once('exit', () => resolve());
    process.kill(proc.pid!, signal);
  });
}

/** A project and its API key, as `newPartner()` answers. */
export type Partner = { projectId: string; keyId: string; secret: string };

/** A wallet as the API answers it. */
export type WalletBody = {
  id: string;
  type: string;
  scheme: string;
  status: string;
  address: string;
  publicKey: string;
  createdAt: string;
  userIdentifier: string;
  userIdentifierType: string;
};

export interface TestService {
  dataDir: string;
  /** The public listener (`/v1`, `/healthz`, `/readyz`, `/openapi.json`). */
  url: string;
  /** The admin listener (`/admin/v1`, `/metrics`, its own `/openapi.json`). */
  adminUrl: string;
  /** The base URL of the listener that serves `path`: the admin one for `/admin/…` and `/metrics`. */
  urlFor(path: string): string;
  config: Config;
  api: RunningApi;
  enclave: ChildProcess;
  adminToken: string;
  /** An admin API request (`route` under `/admin/v1`) with the admin token, to the admin listener. */
  admin(method: string, route: string, body?: unknown): Promise<{ status: number; body: any; headers: Headers }>;
  /** A new project and API key. */
  newPartner(opts?: {
    plan?: string;
    rateLimitPerMinute?: number;
    environment?: 'development' | 'production';
  }): Promise<{ projectId: string; keyId: string; secret: string }>;
  /** A `/v1` request with an API key. */
  v1(
    secret: string | undefined,
    method: string,
    route: string,
    body?: unknown,
    headers?: Record<string, string>,
  ): Promise<{ status: number; body: any; headers: Headers }>;
  restartEnclave(): Promise<void>;
  /** Resolves once /readyz answers 200 (database and enclave up). */
  waitReady(timeoutMs?: number): Promise<void>;
  stop(opts?: { keepData?: boolean }): Promise<void>;
}

async function request(url: string, method: string, headers: Record<string, string>, body?: unknown) {
  const res = await fetch(url, {
    method,
    headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    // not JSON: the raw text is returned
  }
  return { status: res.status, body: parsed as any, headers: res.headers };
}

/** The admin token of `startTestService` (ADMIN_TOKEN wants 32 characters or more). */
export const TEST_ADMIN_TOKEN = 'test-admin-token-0123456789abcdef';

/** True for the paths the admin listener serves rather than the public one. */
export const isAdminPath = (p: string) => p === '/metrics' || p.startsWith('/metrics?') || p.startsWith('/admin/');

/**
 * The whole appliance for a test: a real enclave child process, the API wired as in production on a
 * real SQLite file, its public and admin listeners on loopback ports. `stop()` stops everything it started.
 * The admin listener's rate limit is lifted unless `env` sets ADMIN_RATE_LIMIT_PER_MINUTE.
 */
export async function startTestService(
  env: Record<string, string> = {},
  opts: { dataDir?: string; api?: Parameters<typeof startApi>[1] } = {},
): Promise<TestService> {
  const { loadConfig, startApi, contractViolations, eventViolations } = await loadApi();
  const dataDir = opts.dataDir ?? tempDataDir();
  const adminToken = env['ADMIN_TOKEN'] ?? TEST_ADMIN_TOKEN;
  const config = loadConfig({
    DATA_DIR: dataDir,
    ADMIN_TOKEN: adminToken,
    PORT: '0',
    ADMIN_PORT: '0',
    ADMIN_RATE_LIMIT_PER_MINUTE: '10000000',
    LOG_LEVEL: 'silent',
    ...env,
  });
  let enclave = await startEnclaveProcess(dataDir);
  let api: RunningApi | undefined;
  let ports: Awaited<ReturnType<RunningApi['listen']>>;
  try {
    api = await startApi(config, opts.api);
    ports = await api.listen();
  } catch (err) {
    // A start that fails stops what it started: the enclave's IPC channel would keep this process alive.
    await api?.close().catch(() => undefined);
    await stopProcess(enclave, 'SIGKILL');
    throw err;
  }
  const url = `http://127.0.0.1:${ports.port}`;
  const adminUrl = `http://127.0.0.1:${ports.adminPort}`;

  const svc: TestService = {
    dataDir,
    url,
    adminUrl,
    urlFor: (p) => (isAdminPath(p) ? adminUrl : url),
    config,
    api,
    get enclave() {
      return enclave;
    },
    adminToken,
    admin: (method, route, body) =>
      request(`${adminUrl}/admin/v1${route}`, method, { authorization: `Bearer ${adminToken}` }, body),
    async newPartner(opts = {}) {
      const p = await svc.admin('POST', '/projects', {
        name: 'partner',
        plan: opts.plan ?? 'enterprise',
        ...(opts.plan && opts.plan !== 'scale' && opts.plan !== 'enterprise'
          ? {}
          : { rateLimitPerMinute: opts.rateLimitPerMinute ?? 1_000_000 }),
      });
      if (p.status !== 201) throw new Error(`project create failed: ${JSON.stringify(p.body)}`);
      const k = await svc.admin('POST', `/projects/${p.body.id}/api-keys`, {
        environment: opts.environment ?? 'development',
      });
      if (k.status !== 201) throw new Error(`key create failed: ${JSON.stringify(k.body)}`);
      return { projectId: p.body.id, keyId: k.body.id, secret: k.body.secretKey };
    },
    v1: (secret, method, route, body, headers = {}) =>
      request(
        `${url}/v1${route}`,
        method,
        { ...(secret === undefined ? {} : { 'x-api-key': secret }), ...headers },
        body,
      ),
    async restartEnclave() {
      await stopProcess(enclave, 'SIGKILL');
      enclave = await startEnclaveProcess(dataDir);
    },
    async waitReady(timeoutMs = 10_000) {
      const until = Date.now() + timeoutMs;
      while (Date.now() < until) {
        const r = await fetch(`${url}/readyz`);
        if (r.status === 200) return;
        await new Promise((res) => setTimeout(res, 50));
      }
      throw new Error('service not ready in time');
    },
    async stop({ keepData = false }: { keepData?: boolean } = {}) {
      // Every answer of the suite against the OpenAPI documents (test/helpers/contract-check.ts).
      const violations = await contractViolations(svc).catch((err: Error) => [`contract check failed: ${err.message}`]);
      // Every event it wrote against the public document's webhooks (test/helpers/event-contract-check.ts).
      const events = await eventViolations(svc).catch((err: Error) => [`event check failed: ${err.message}`]);
      await api.close().catch(() => undefined);
      await stopProcess(enclave);
      if (!keepData) fs.rmSync(dataDir, { recursive: true, force: true });
      if (violations.length > 0) {
        throw new Error(`answers outside the API contract (OpenAPI documents):\n  ${violations.join('\n  ')}`);
      }
      if (events.length > 0) {
        throw new Error(`events outside the API contract (OpenAPI webhooks):\n  ${events.join('\n  ')}`);
      }
    },
  };
  return svc;
}
