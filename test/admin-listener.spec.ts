import assert from 'node:assert/strict';
import { type ChildProcess, fork } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { envelopeProblems, type RawResponse, rawRequest } from './helpers/bad-input-http.ts';
import { entryOf } from './helpers/entry.ts';
import {
  startEnclaveProcess,
  startTestService,
  stopProcess,
  TEST_ADMIN_TOKEN,
  type TestService,
  tempDataDir,
} from './helpers/service.ts';

// The admin API (`/admin/v1`) and `/metrics` live on their own listener (ADMIN_HOST:ADMIN_PORT, loopback by
// default), behind a rate limit per client address; the public listener serves neither.

const MISSING = '00000000-0000-4000-8000-000000000000';
const bearer = { authorization: `Bearer ${TEST_ADMIN_TOKEN}` };

function assertEnvelope(res: RawResponse, status: number, code: string, label: string) {
  assert.deepEqual(envelopeProblems(res, { status, code }), [], `${label}: ${res.status} ${res.text.slice(0, 200)}`);
}

/** Resolves when nothing accepts connections on `port` any more. */
function refused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    s.on('connect', () => {
      s.destroy();
      resolve(false);
    });
    s.on('error', (err: NodeJS.ErrnoException) => resolve(err.code === 'ECONNREFUSED'));
  });
}

describe('api/main.ts: the public and the admin listener', () => {
  let dataDir: string;
  let enclave: ChildProcess;
  let api: ChildProcess;
  let ready: { type: string; port: number; adminPort: number };
  let stdout = '';
  let url: string;
  let adminUrl: string;

  before(async () => {
    dataDir = tempDataDir();
    enclave = await startEnclaveProcess(dataDir);
    const entry = entryOf('api/main');
    api = fork(entry.file, [], {
      execArgv: entry.execArgv,
      env: {
        ...process.env,
        DATA_DIR: dataDir,
        ADMIN_TOKEN: TEST_ADMIN_TOKEN,
        PORT: '0',
        ADMIN_PORT: '0',
        LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
    });
    api.stdout?.on('data', (d) => {
      stdout += String(d);
    });
    ready = await new Promise((resolve, reject) => {
      api.once('message', (m) => resolve(m as typeof ready));
      api.once('exit', (code) => reject(new Error(`api exited with ${code}: ${stdout}`)));
    });
    url = `http://127.0.0.1:${ready.port}`;
    adminUrl = `http://127.0.0.1:${ready.adminPort}`;
  });
  after(async () => {
    await stopProcess(api, 'SIGKILL');
    await stopProcess(enclave);
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  test('reports both ports to the supervisor and prints both addresses', () => {
    assert.equal(ready.type, 'ready');
    assert.ok(ready.port > 0 && ready.adminPort > 0 && ready.port !== ready.adminPort, JSON.stringify(ready));
    assert.match(stdout, new RegExp(`api listening on ${url}`));
    assert.match(stdout, new RegExp(`admin API listening on ${adminUrl}`));
  });

  test('every admin route of the admin document: 404 on the public listener (even with the token), 403 on the admin one without it', async () => {
    const doc = (await (await fetch(`${adminUrl}/openapi.json`)).json()) as {
      paths: Record<string, Record<string, unknown>>;
    };
    const routes = Object.entries(doc.paths).flatMap(([p, methods]) =>
      Object.keys(methods).map((m) => [m.toUpperCase(), p.replace(/\{[^}]+\}/g, MISSING)] as const),
    );
    assert.ok(routes.length >= 7, `${routes.length} admin routes documented`);
    for (const [method, route] of routes) {
      assert.match(route, /^\/admin\/v1\//);
      const body = method === 'POST' || method === 'PUT' ? '{}' : undefined;
      const headers: Record<string, string> = body ? { 'content-type': 'application/json' } : {};
      const req = (h: Record<string, string>) => ({
        method,
        path: route,
        headers: { ...headers, ...h },
        ...(body ? { body } : {}),
      });
      assertEnvelope(await rawRequest(url, req(bearer)), 404, 'ROUTE_NOT_FOUND', `public ${method} ${route}`);
      assertEnvelope(
        await rawRequest(adminUrl, req({ authorization: 'Bearer wrong-token-wrong-token-wrong-token' })),
        403,
        'INVALID_ADMIN_TOKEN',
        `admin ${method} ${route}`,
      );
    }
    // The token opens the admin listener.
    const created = await rawRequest(adminUrl, {
      method: 'POST',
      path: '/admin/v1/projects',
      headers: { ...bearer, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'admin-listener', plan: 'free' }),
    });
    assert.equal(created.status, 201, created.text);
  });

  test('/metrics only on the admin listener; health on both; /v1 only on the public one; each document lists only its own routes', async () => {
    assertEnvelope(
      await rawRequest(url, { method: 'GET', path: '/metrics' }),
      404,
      'ROUTE_NOT_FOUND',
      'public /metrics',
    );
    const metrics = await rawRequest(adminUrl, { method: 'GET', path: '/metrics' });
    assert.equal(metrics.status, 200);
    assert.match(String(metrics.headers['content-type']), /^text\/plain/);
    assert.match(metrics.text, /http_requests_total\{method="POST",route="\/admin\/v1\/projects",status="201"\}/);
    assert.match(metrics.text, /admin_auth_failures_total [1-9]/);
    for (const base of [url, adminUrl]) {
      assert.equal((await rawRequest(base, { method: 'GET', path: '/healthz' })).status, 200, base);
      assert.equal((await rawRequest(base, { method: 'GET', path: '/readyz' })).status, 200, base);
    }
    assertEnvelope(
      await rawRequest(adminUrl, { method: 'GET', path: '/v1/wallets', headers: { 'x-api-key': 'sk_dev_x' } }),
      404,
      'ROUTE_NOT_FOUND',
      'admin /v1/wallets',
    );
    type Doc = { paths: Record<string, unknown>; components?: { securitySchemes?: Record<string, unknown> } };
    const pub = (await (await fetch(`${url}/openapi.json`)).json()) as Doc;
    assert.deepEqual(
      Object.keys(pub.paths).filter((p) => !p.startsWith('/v1/')),
      [],
    );
    assert.deepEqual(Object.keys(pub.components?.securitySchemes ?? {}), ['apiKey']);
    const adm = (await (await fetch(`${adminUrl}/openapi.json`)).json()) as Doc;
    assert.deepEqual(
      Object.keys(adm.paths).filter((p) => !p.startsWith('/admin/v1/')),
      [],
    );
  });

  test('SIGTERM closes both listeners and the process exits 0', async () => {
    const exit = new Promise<number | null>((resolve) => api.once('exit', (code) => resolve(code)));
    process.kill(api.pid!, 'SIGTERM');
    assert.equal(await exit, 0);
    assert.equal(await refused(ready.port), true, 'public port closed');
    assert.equal(await refused(ready.adminPort), true, 'admin port closed');
  });
});

describe('admin rate limit, per client address, failed authentications counted', () => {
  const LIMIT = 6;
  let svc: TestService;
  before(async () => {
    svc = await startTestService({ ADMIN_RATE_LIMIT_PER_MINUTE: String(LIMIT) });
  });
  after(async () => {
    await svc?.stop();
  });

  test(`${LIMIT} refused tokens from one address use its budget: then even the right token is 429 from there, not from elsewhere`, async () => {
    const from = (localAddress: string, headers: Record<string, string>, route = '/admin/v1/projects') =>
      rawRequest(svc.adminUrl, {
        method: 'POST',
        path: route,
        headers: { ...headers, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'rate', plan: 'free' }),
        localAddress,
      });
    for (let i = 0; i < LIMIT; i++) {
      const h: Record<string, string> = i % 2 ? { authorization: `Bearer guess-${i}-${'x'.repeat(32)}` } : {};
      const r = await from('127.0.0.2', h);
      assert.ok([401, 403].includes(r.status), `guess ${i}: ${r.status} ${r.text}`);
    }
    const limited = await from('127.0.0.2', bearer);
    assertEnvelope(limited, 429, 'RATE_LIMITED', 'the right token after the budget is spent');
    assert.ok(Number(limited.headers['retry-after']) > 0, 'retry-after');
    assertEnvelope(await from('127.0.0.2', bearer, '/admin/v1/nope'), 429, 'RATE_LIMITED', 'an unknown route');
    // Another address has its own budget; the public listener has none of this.
    assert.equal((await from('127.0.0.3', bearer)).status, 201);
    assert.equal(
      (await rawRequest(svc.url, { method: 'GET', path: '/healthz', localAddress: '127.0.0.2' })).status,
      200,
    );
    const metrics = await rawRequest(svc.adminUrl, { method: 'GET', path: '/metrics', localAddress: '127.0.0.4' });
    assert.match(metrics.text, new RegExp(`admin_auth_failures_total ${LIMIT}\\b`));
  });
});
