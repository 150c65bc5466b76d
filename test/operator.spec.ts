import assert from 'node:assert/strict';
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { masterKeyId } from '../enclave/envelope.ts';
import { freePort } from '../fixtures/free-port.ts';
import { nodeArgs } from './helpers/entry.ts';
import { createPartnerKey } from './helpers/http.ts';
import { ROOT, tempDataDir } from './helpers/service.ts';

const run = promisify(execFile);

function waitForLine(proc: ChildProcess, re: RegExp, timeoutMs = 30_000): Promise<RegExpMatchArray> {
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`no line matching ${re} in: ${out}`)), timeoutMs);
    const onData = (d: Buffer) => {
      out += String(d);
      const m = out.match(re);
      if (m) {
        clearTimeout(timer);
        proc.stdout?.off('data', onData);
        resolve(m);
      }
    };
    proc.stdout?.on('data', onData);
  });
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

// What `npm start` runs: its build step, then the supervisor bundle.
before(async () => {
  await run('npm', ['run', 'build', '--silent'], { cwd: ROOT });
});

describe('npm start: the supervisor on an empty data directory', () => {
  let dataDir: string;
  let port: number;
  let adminPort: number;
  let sup: ChildProcess;
  let log = '';
  let url: string;
  let adminUrl: string;
  /** What the supervisor and the CLI are given: the documented defaults but for the ports. */
  const env = () => ({
    ...process.env,
    DATA_DIR: dataDir,
    PORT: String(port),
    ADMIN_PORT: String(adminPort),
    ADMIN_TOKEN: '',
  });

  before(async () => {
    dataDir = tempDataDir();
    port = await freePort();
    adminPort = await freePort();
    url = `http://127.0.0.1:${port}`;
    adminUrl = `http://127.0.0.1:${adminPort}`;
    sup = spawn(process.execPath, ['dist/main.js'], {
      cwd: ROOT,
      env: env(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    sup.stdout?.on('data', (d) => {
      log += String(d);
    });
    sup.stderr?.on('data', (d) => {
      log += String(d);
    });
    await waitForLine(sup, /\[supervisor\] ready in \d+ ms/);
  });

  after(async () => {
    if (sup.exitCode === null && sup.signalCode === null) {
      await new Promise<void>((resolve) => {
        sup.once('exit', () => resolve());
        process.kill(sup.pid!, 'SIGKILL');
      });
    }
    for (const m of log.matchAll(/pid (\d+)/g)) {
      if (alive(Number(m[1]))) process.kill(Number(m[1]), 'SIGKILL');
    }
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  test('generates the admin token, master key and database files (0600) and the socket (0660), and says so', async () => {
    for (const f of ['admin-token', 'enclave/master.key', 'service.db', 'service.db-wal']) {
      const mode = fs.statSync(path.join(dataDir, f)).mode & 0o777;
      assert.equal(mode, 0o600, f);
    }
    assert.equal(fs.statSync(path.join(dataDir, 'socket/enclave.sock')).mode & 0o777, 0o660);
    assert.match(log, /BACK IT UP/);
    assert.doesNotMatch(log, new RegExp(fs.readFileSync(path.join(dataDir, 'admin-token'), 'utf8').trim()));
    const health = await fetch(`${url}/healthz`);
    assert.equal(health.status, 200);
    const ready = await fetch(`${url}/readyz`);
    assert.equal(ready.status, 200);
    assert.deepEqual(await ready.json(), { status: 'ready', checks: { database: true, enclave: true, actors: true } });
  });

  test('the CLI quickstart prints a project and a development key that creates a wallet', async () => {
    const { stdout } = await run(process.execPath, nodeArgs('bin/admin', 'quickstart', '--json'), {
      cwd: ROOT,
      env: env(),
    });
    const out = JSON.parse(stdout);
    assert.equal(out.project.plan, 'free');
    assert.equal(out.apiKey.environment, 'development');
    const r = await fetch(`${url}/v1/wallets`, {
      method: 'POST',
      headers: { 'x-api-key': out.apiKey.secretKey, 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'EVM', userIdentifier: 'first-user', userIdentifierType: 'CUSTOM_ID' }),
    });
    assert.equal(r.status, 201);
    const w = (await r.json()) as { status: string; address: string };
    assert.equal(w.status, 'ready');
    // Without --json it says what the key may do and how to get more; --plan gives a larger plan.
    const text = (await run(process.execPath, nodeArgs('bin/admin', 'quickstart'), { cwd: ROOT, env: env() })).stdout;
    assert.match(text, /may make 30 requests a minute \(plan free\)/);
    assert.match(text, /--plan growth/);
    const larger = JSON.parse(
      (
        await run(
          process.execPath,
          nodeArgs('bin/admin', 'quickstart', '--plan', 'enterprise', '--rate-limit', '50000', '--json'),
          { cwd: ROOT, env: env() },
        )
      ).stdout,
    );
    assert.deepEqual([larger.project.plan, larger.project.rateLimitPerMinute], ['enterprise', 50000]);
  });

  test('the CLI covers the admin verbs: project, key, rotation, allowlist, deletion', async () => {
    const cli = async (...args: string[]) => {
      const { stdout } = await run(process.execPath, nodeArgs('bin/admin', ...args, '--json'), {
        cwd: ROOT,
        env: env(),
      });
      return JSON.parse(stdout);
    };
    const wallets = (secret: string) => fetch(`${url}/v1/wallets`, { headers: { 'x-api-key': secret } });
    const project = await cli('create-project', '--name', 'cli', '--plan', 'scale', '--rate-limit', '500');
    assert.equal(project.plan, 'scale');
    assert.equal(project.rateLimitPerMinute, 500);
    const key = await cli('create-key', project.id, '--environment', 'production');
    assert.equal(key.environment, 'production');
    assert.equal((await wallets(key.secretKey)).status, 200);
    const rotated = await cli('rotate-key', key.id);
    assert.equal((await wallets(key.secretKey)).status, 403);
    assert.equal((await wallets(rotated.secretKey)).status, 200);
    const outside = await cli('set-ip-allowlist', project.id, '10.0.0.0/8');
    assert.deepEqual(outside.cidrs, ['10.0.0.0/8']);
    assert.equal((await wallets(rotated.secretKey)).status, 401);
    const lifted = await cli('set-ip-allowlist', project.id);
    assert.deepEqual(lifted.cidrs, []);
    assert.equal((await wallets(rotated.secretKey)).status, 200);
    const pregen = await cli('pregenerate-wallet', project.id, '--type', 'SOLANA', '--user-identifier', 'cli-user');
    assert.equal(pregen.wallet.type, 'SOLANA');
    assert.match(pregen.userShare, /^[A-Za-z0-9+/=-]+$/);
    const signMessage = () =>
      fetch(`${url}/v1/wallets/${pregen.wallet.id}/sign-message`, {
        method: 'POST',
        headers: { 'x-api-key': rotated.secretKey, 'content-type': 'application/json' },
        body: JSON.stringify({ message: 'm' }),
      });
    assert.equal(((await (await signMessage()).json()) as { code: string }).code, 'WALLET_SHARE_NOT_MIGRATED');
    const claimed = await cli('claim-wallet', pregen.wallet.id, '--user-id', 'user-42');
    assert.equal(claimed.userId, 'user-42');
    assert.equal(((await (await signMessage()).json()) as { code: string }).code, 'WALLET_CLAIMED');
    await cli('delete-project', project.id);
    assert.equal((await wallets(rotated.secretKey)).status, 403);
    // A refused verb exits non-zero and says why, with the service's code.
    await assert.rejects(cli('create-key', project.id), (err: { code: number; stderr: string }) => {
      assert.equal(err.code, 1);
      assert.match(err.stderr, /404 PROJECT_NOT_FOUND/);
      return true;
    });
    await assert.rejects(cli('no-such-verb'), (err: { stderr: string }) => /unknown verb/.test(err.stderr));
  });

  test('serves /openapi.json and /docs on the public listener, /metrics and the admin document on the admin one', async () => {
    const metrics = await (await fetch(`${adminUrl}/metrics`)).text();
    assert.match(metrics, /http_requests_total\{method="POST",route="\/v1\/wallets",status="201"\} 1/);
    assert.equal((await fetch(`${url}/metrics`)).status, 404);
    type Doc = { openapi: string; paths: Record<string, Record<string, unknown>> };
    const doc = (await (await fetch(`${url}/openapi.json`)).json()) as Doc;
    assert.equal(doc.openapi, '3.1.0');
    for (const p of ['/v1/wallets', '/v1/wallets/{walletId}']) assert.ok(doc.paths[p], p);
    assert.ok(doc.paths['/v1/wallets']!['post']);
    assert.deepEqual(
      Object.keys(doc.paths).filter((p) => !p.startsWith('/v1/')),
      [],
      'the public document lists only /v1',
    );
    const adminDoc = (await (await fetch(`${adminUrl}/openapi.json`)).json()) as Doc;
    assert.ok(adminDoc.paths['/admin/v1/projects']?.['post']);
    assert.deepEqual(
      Object.keys(adminDoc.paths).filter((p) => !p.startsWith('/admin/v1/')),
      [],
      'the admin document lists only /admin/v1',
    );
    const docs = await fetch(`${url}/docs`, { redirect: 'follow' });
    assert.equal(docs.status, 200);
    assert.match(await docs.text(), /swagger/i);
  });

  test('the CLI rotates the master key: prepare, confirm and wait; the enclave promotes master.key.next', async () => {
    const cli = async (...args: string[]) =>
      (
        await run(process.execPath, nodeArgs('bin/admin', ...args), {
          cwd: ROOT,
          env: {
            ...process.env,
            DATA_DIR: dataDir,
            PORT: String(port),
            ADMIN_PORT: String(adminPort),
            ADMIN_TOKEN: '',
          },
        })
      ).stdout;
    const keyId = (file: string) =>
      masterKeyId(
        Uint8Array.from(Buffer.from(fs.readFileSync(path.join(dataDir, 'enclave', file), 'utf8').trim(), 'hex')),
      );
    const admin = fs.readFileSync(path.join(dataDir, 'admin-token'), 'utf8').trim();
    const key = await createPartnerKey(adminUrl, admin, { plan: 'growth' });
    const wallet = (await (
      await fetch(`${url}/v1/wallets`, {
        method: 'POST',
        headers: { 'x-api-key': key.secretKey, 'content-type': 'application/json' },
        body: JSON.stringify({ type: 'EVM', userIdentifier: 'rotation', userIdentifierType: 'CUSTOM_ID' }),
      })
    ).json()) as { id: string };
    const sign = () =>
      fetch(`${url}/v1/wallets/${wallet.id}/sign-message`, {
        method: 'POST',
        headers: { 'x-api-key': key.secretKey, 'content-type': 'application/json' },
        body: JSON.stringify({ message: 'm' }),
      });

    const oldId = keyId('master.key');
    assert.match(await cli('master-key-status'), new RegExp(`state +idle[\\s\\S]*master key +${oldId}`));
    const prepared = JSON.parse(await cli('rotate-master-key', '--json'));
    assert.equal(prepared.state, 'prepared');
    assert.equal(prepared.nextKeyId, keyId('master.key.next'));
    assert.match(log, new RegExp(`NEW MASTER KEY \\(id ${prepared.nextKeyId}\\)`));
    const done = await cli('rotate-master-key', '--confirm', prepared.nextKeyId);
    assert.match(done, new RegExp(`state +idle[\\s\\S]*master key +${prepared.nextKeyId}`));
    assert.equal(keyId('master.key'), prepared.nextKeyId);
    assert.equal(fs.existsSync(path.join(dataDir, 'enclave', 'master.key.next')), false);
    assert.equal((await sign()).status, 200);
  });

  test('a killed enclave is restarted by the supervisor; meanwhile creates answer 503 and readiness fails', async () => {
    const pid = Number([...log.matchAll(/enclave starting \(pid (\d+)\)/g)].at(-1)![1]);
    const admin = fs.readFileSync(path.join(dataDir, 'admin-token'), 'utf8').trim();
    const key = await createPartnerKey(adminUrl, admin, { plan: 'growth' });
    process.kill(pid, 'SIGKILL');
    const create = (i: number) =>
      fetch(`${url}/v1/wallets`, {
        method: 'POST',
        headers: { 'x-api-key': key.secretKey, 'content-type': 'application/json' },
        body: JSON.stringify({ type: 'SOLANA', userIdentifier: `u${i}`, userIdentifierType: 'CUSTOM_ID' }),
      });
    // Right after the kill the enclave is down: fail fast with 503, and /readyz says not ready.
    await new Promise((r) => setTimeout(r, 20));
    const down = await create(0);
    const notReady = await fetch(`${url}/readyz`);
    assert.equal(down.status, 503);
    assert.equal(notReady.status, 503);
    // The supervisor brings it back and creation works again.
    await waitForLine(sup, /enclave restarted/);
    let ok = 0;
    for (let i = 1; i <= 50 && ok === 0; i++) {
      const r = await create(i);
      if (r.status === 201) ok += 1;
      else await new Promise((res) => setTimeout(res, 100));
    }
    assert.equal(ok, 1);
    assert.equal(alive(pid), false);
  });

  test('SIGTERM stops the API, then the enclave, and the supervisor exits 0', async () => {
    const pids = [...log.matchAll(/(?:enclave|api) starting \(pid (\d+)\)/g)].map((m) => Number(m[1]));
    const exit = new Promise<number | null>((resolve) => sup.once('exit', (code) => resolve(code)));
    process.kill(sup.pid!, 'SIGTERM');
    assert.equal(await exit, 0);
    for (const p of pids) assert.equal(alive(p), false, `child ${p} is gone`);
    assert.equal(fs.existsSync(path.join(dataDir, 'socket/enclave.sock')), false);
  });
});

describe('configuration is checked at boot', () => {
  for (const [name, value] of [
    ['PORT', 'eighty'],
    ['LOG_LEVEL', 'loud'],
    ['ENCLAVE_MASTER_KEY', 'abc'],
    ['TRUST_PROXY', 'maybe'],
    ['TRUST_PROXY', 'true'],
    ['ADMIN_TOKEN', 'short'],
    ['ADMIN_TOKEN', 'twenty-characters-xx'],
    ['ADMIN_PORT', '70000'],
  ] as const) {
    test(`an invalid ${name} (${value}) stops the start with a message naming it`, async () => {
      const dataDir = tempDataDir();
      try {
        await assert.rejects(
          run(process.execPath, ['dist/main.js'], {
            cwd: ROOT,
            env: { ...process.env, DATA_DIR: dataDir, [name]: value },
            timeout: 20_000,
          }),
          (err: { code: number; stderr: string }) => {
            assert.equal(err.code, 1);
            assert.match(err.stderr, new RegExp(name));
            return true;
          },
        );
      } finally {
        fs.rmSync(dataDir, { recursive: true, force: true });
      }
    });
  }
});
