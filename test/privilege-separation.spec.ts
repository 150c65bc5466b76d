/**
 * Privilege separation through the real appliance: the supervisor, its enclave and its API as separate OS
 * processes on a real data directory, from bundles built with `npm run build`'s own command (as `npm start`
 * runs them). They are built into a directory of this suite's own, so that operator.spec's build of dist/ never
 * rewrites a file one of them is loading; from source, the children would compile every module under tsx, and a
 * new uid starts with an empty tsx cache, which a loaded machine took past the supervisor's 30 s to ready.
 *
 * As root, with ENCLAVE_USER and API_USER (two numeric uids without passwd entries), it attacks the boundary the
 * way a compromised API would: from a process running as the API's uid, open the key store, the master key,
 * the enclave's directory and the environments of the enclave and the supervisor. The secrets are given to the
 * supervisor in its environment, and must reach neither child's `/proc/<pid>/environ`.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { verifyMessage } from 'viem';
import { freePort } from '../fixtures/free-port.ts';
import { createPartnerKey } from './helpers/http.ts';
import { ROOT, tempDataDir } from './helpers/service.ts';

const isRoot = process.getuid?.() === 0;
const rootOnly = isRoot
  ? {}
  : { skip: 'needs root (CI runs as root): only root can start the children as other users' };

const MASTER = randomBytes(32).toString('hex');
const ADMIN = `privsep-admin-${randomBytes(16).toString('hex')}`;
const CANARY = `privsep-canary-${randomBytes(8).toString('hex')}`;
const WARNING = /\[supervisor\] WARNING: the enclave and the API run as one OS user/g;

interface Supervisor {
  proc: ChildProcess;
  log(): string;
  /** Pid of the last start of a child, from the supervisor's log. */
  pid(child: 'enclave' | 'api'): number;
  exited: Promise<number | null>;
}

const running = new Set<Supervisor>();
let buildDir = '';

/** `npm run build`'s esbuild command with its own output directory, runnable outside the repository. */
before(() => {
  buildDir = fs.mkdtempSync(path.join(os.tmpdir(), 'wcs-privsep-build-'));
  fs.chmodSync(buildDir, 0o755); // the children's users read the code
  const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
    scripts: { build: string };
  };
  const [bin, ...args] = pkg.scripts.build.split(/\s+/);
  assert.equal(bin, 'esbuild');
  const outArgs = args.map((a) => (a.startsWith('--outdir=') ? `--outdir=${buildDir}` : a));
  assert.ok(outArgs.includes(`--outdir=${buildDir}`), pkg.scripts.build);
  execFileSync(path.join(ROOT, 'node_modules/.bin/esbuild'), outArgs, { cwd: ROOT, stdio: 'inherit' });
  // What the bundles find beside them in the repository: ESM, the packages, the migrations. Linked when the
  // children's users can reach the repository; else (a checkout in a 0700 directory, as `mktemp -d` makes)
  // hard-linked copies, so that the test does not loosen the modes of directories that are not its own.
  fs.writeFileSync(path.join(buildDir, 'package.json'), '{"type":"module"}\n');
  for (const part of ['node_modules', 'store']) {
    const source = fs.realpathSync(path.join(ROOT, part));
    const target = path.join(buildDir, part);
    if (reachableByOthers(source)) fs.symlinkSync(source, target);
    else {
      try {
        execFileSync('cp', ['-al', source, target]);
      } catch {
        fs.rmSync(target, { recursive: true, force: true });
        execFileSync('cp', ['-a', source, target]);
      }
    }
  }
});

/** True when every directory from the root down to `dir` lets other users through. */
function reachableByOthers(dir: string): boolean {
  for (let d = path.resolve(dir); ; d = path.dirname(d)) {
    if ((fs.statSync(d).mode & 0o001) === 0) return false;
    if (path.dirname(d) === d) return true;
  }
}

function startSupervisor(env: Record<string, string>, as?: { uid: number; gid: number }): Supervisor {
  // The admin listener on a free port unless the test names one (8081 would collide with parallel runs).
  const base: Record<string, string | undefined> = {
    ...process.env,
    LOG_LEVEL: 'warn',
    PRIVSEP_CANARY: CANARY,
    ADMIN_PORT: '0',
  };
  for (const name of ['ENCLAVE_MASTER_KEY', 'ADMIN_TOKEN', 'ENCLAVE_USER', 'API_USER', 'ENCLAVE_SOCKET']) {
    delete base[name];
  }
  const proc = spawn(process.execPath, ['--enable-source-maps', path.join(buildDir, 'main.js')], {
    cwd: buildDir,
    env: { ...base, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(as ?? {}),
  });
  let log = '';
  proc.stdout!.on('data', (d) => {
    log += String(d);
  });
  proc.stderr!.on('data', (d) => {
    log += String(d);
  });
  const sup: Supervisor = {
    proc,
    log: () => log,
    pid(child) {
      const all = [...log.matchAll(new RegExp(`${child} starting \\(pid (\\d+)\\)`, 'g'))];
      assert.ok(all.length > 0, `no ${child} pid in:\n${log}`);
      return Number(all.at(-1)![1]);
    },
    exited: new Promise((resolve) => proc.once('exit', (code) => resolve(code))),
  };
  running.add(sup);
  void sup.exited.then(() => running.delete(sup));
  return sup;
}

async function ready(sup: Supervisor): Promise<void> {
  const until = Date.now() + 90_000;
  while (!/\[supervisor\] ready in \d+ ms/.test(sup.log())) {
    if (sup.proc.exitCode !== null) throw new Error(`the supervisor exited (${sup.proc.exitCode}):\n${sup.log()}`);
    if (Date.now() > until) throw new Error(`the supervisor was not ready in time:\n${sup.log()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function stop(sup: Supervisor): Promise<void> {
  if (sup.proc.exitCode === null && sup.proc.signalCode === null) process.kill(sup.proc.pid!, 'SIGTERM');
  assert.equal(await sup.exited, 0, sup.log());
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Stops a supervisor left running by a failed test: SIGTERM, then SIGKILL to it and to its children by pid. */
async function forceStop(sup: Supervisor): Promise<void> {
  if (sup.proc.exitCode !== null || sup.proc.signalCode !== null) return;
  process.kill(sup.proc.pid!, 'SIGTERM');
  const timer = setTimeout(() => {
    for (const m of sup.log().matchAll(/starting \(pid (\d+)\)/g)) {
      if (alive(Number(m[1]))) process.kill(Number(m[1]), 'SIGKILL');
    }
    if (sup.proc.exitCode === null) process.kill(sup.proc.pid!, 'SIGKILL');
  }, 15_000);
  await sup.exited;
  clearTimeout(timer);
}

after(async () => {
  for (const sup of running) await forceStop(sup);
  if (buildDir) fs.rmSync(buildDir, { recursive: true, force: true });
});

const environ = (pid: number) => fs.readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0');

/** What a process of `uid:gid` gets when it opens (or lists) each path and connects to `socket`. */
function tryAs(uid: number, gid: number, paths: string[], socket?: string): Record<string, string> {
  const script = `
    const fs = require('node:fs');
    const net = require('node:net');
    const { paths, socket } = JSON.parse(process.argv[1]);
    const out = {};
    for (const p of paths) {
      try {
        if (fs.statSync(p).isDirectory()) fs.readdirSync(p);
        else fs.closeSync(fs.openSync(p, 'r'));
        out[p] = 'opened';
      } catch (e) { out[p] = e.code; }
    }
    const done = () => process.stdout.write(JSON.stringify(out));
    if (!socket) done();
    else {
      const c = net.connect(socket);
      c.on('connect', () => { out[socket] = 'connected'; c.destroy(); done(); });
      c.on('error', (e) => { out[socket] = e.code; done(); });
    }`;
  const r = spawnSync(process.execPath, ['-e', script, JSON.stringify({ paths, socket })], {
    uid,
    gid,
    cwd: '/',
    encoding: 'utf8',
    timeout: 20_000,
  });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout) as Record<string, string>;
}

/** Two uids with no passwd entry, for the enclave and the API. */
function freeUids(): [number, number] {
  const free: number[] = [];
  for (let uid = 47_011; free.length < 2; uid++) {
    try {
      execFileSync('getent', ['passwd', String(uid)], { stdio: 'ignore' });
    } catch {
      free.push(uid);
    }
  }
  return [free[0]!, free[1]!];
}

function assertNoSecretIn(env: string[], who: string): void {
  const text = env.join('\n');
  assert.equal(text.includes(MASTER), false, `the master key is in the ${who}'s environment`);
  assert.equal(text.includes(ADMIN), false, `the admin token is in the ${who}'s environment`);
  assert.equal(text.includes(CANARY), false, `an unlisted variable reached the ${who}`);
  assert.equal(
    env.some((v) => v.startsWith('ENCLAVE_MASTER_KEY=') || v.startsWith('ADMIN_TOKEN=')),
    false,
    `a secret variable in the ${who}'s environment`,
  );
}

async function signAndVerify(url: string, secretKey: string, wallet?: { id: string; address: string }) {
  const headers = { 'x-api-key': secretKey, 'content-type': 'application/json' };
  let w = wallet;
  if (!w) {
    const created = await fetch(`${url}/v1/wallets`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ type: 'EVM', userIdentifier: 'privsep', userIdentifierType: 'CUSTOM_ID' }),
    });
    assert.equal(created.status, 201, await created.clone().text());
    w = (await created.json()) as { id: string; address: string };
  }
  const message = `privilege separation ${randomBytes(4).toString('hex')}`;
  const r = await fetch(`${url}/v1/wallets/${w.id}/sign-message`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ message }),
  });
  assert.equal(r.status, 200, await r.clone().text());
  const { signature } = (await r.json()) as { signature: string };
  const address = w.address as `0x${string}`;
  assert.equal(await verifyMessage({ address, message, signature: `0x${signature}` }), true);
  return w;
}

describe('two OS users: the supervisor started as root with ENCLAVE_USER and API_USER', rootOnly, () => {
  let enclaveUid = 0;
  let apiUid = 0;
  let dataDir = '';
  let url = '';
  let port = 0;
  let adminPort = 0;
  let sup: Supervisor;
  let partner: { secretKey: string };
  let wallet: { id: string; address: string };

  before(async () => {
    [enclaveUid, apiUid] = freeUids();
    dataDir = tempDataDir('wcs-privsep-');
    port = await freePort();
    adminPort = await freePort();
    url = `http://127.0.0.1:${port}`;
    sup = startSupervisor({
      DATA_DIR: dataDir,
      PORT: String(port),
      ADMIN_PORT: String(adminPort),
      ENCLAVE_USER: String(enclaveUid),
      API_USER: `${apiUid}:${apiUid}`,
      ENCLAVE_MASTER_KEY: MASTER,
      ADMIN_TOKEN: ADMIN,
    });
    await ready(sup);
  });

  after(async () => {
    if (sup) await forceStop(sup);
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  });

  test('each child runs as its own user with one group and no supplementary group; no warning', () => {
    for (const [child, uid] of [
      ['enclave', enclaveUid],
      ['api', apiUid],
    ] as const) {
      const status = fs.readFileSync(`/proc/${sup.pid(child)}/status`, 'utf8');
      assert.match(status, new RegExp(`^Uid:\\t${uid}\\t${uid}\\t${uid}\\t${uid}$`, 'm'), child);
      assert.match(status, new RegExp(`^Gid:\\t${uid}\\t${uid}\\t${uid}\\t${uid}$`, 'm'), child);
      assert.match(status, /^Groups:\s*$/m, `${child}: root's supplementary groups are dropped`);
    }
    assert.equal(sup.log().match(WARNING), null);
  });

  test('the data directory: owners and modes', () => {
    const at = (rel: string) => fs.lstatSync(path.join(dataDir, rel));
    const expect = (rel: string, uid: number, gid: number, mode: number) => {
      const st = at(rel);
      assert.deepEqual(
        { uid: st.uid, gid: st.gid, mode: `0${(st.mode & 0o7777).toString(8)}` },
        { uid, gid, mode: `0${mode.toString(8)}` },
        rel || 'DATA_DIR',
      );
    };
    expect('', enclaveUid, apiUid, 0o1770);
    expect('enclave', enclaveUid, enclaveUid, 0o700);
    expect('enclave/keys.db', enclaveUid, enclaveUid, 0o600);
    expect('socket', enclaveUid, apiUid, 0o2750);
    expect('socket/enclave.sock', enclaveUid, apiUid, 0o660);
    assert.ok(at('socket/enclave.sock').isSocket());
    expect('service.db', apiUid, apiUid, 0o600);
  });

  test("the API's user cannot open the key store, list the enclave's files or read another process's environment", () => {
    const enclavePid = sup.pid('enclave');
    const targets = [
      path.join(dataDir, 'enclave/keys.db'),
      path.join(dataDir, 'enclave/keys.db-wal'),
      path.join(dataDir, 'enclave'),
      `/proc/${enclavePid}/environ`,
      `/proc/${enclavePid}/mem`,
      `/proc/${sup.proc.pid}/environ`,
    ];
    const socket = path.join(dataDir, 'socket/enclave.sock');
    const asApi = tryAs(apiUid, apiUid, targets, socket);
    for (const target of targets) assert.equal(asApi[target], 'EACCES', target);
    assert.equal(asApi[socket], 'connected', 'the socket is the one door left open');
    // The same probe as the enclave's user opens its files: the refusals above come from the separation.
    const asEnclave = tryAs(enclaveUid, enclaveUid, targets.slice(0, 3));
    for (const target of targets.slice(0, 3)) assert.equal(asEnclave[target], 'opened', target);
  });

  test("no secret in either child's environment: the master key and the admin token came on a pipe", () => {
    const apiEnv = environ(sup.pid('api'));
    const enclaveEnv = environ(sup.pid('enclave'));
    assertNoSecretIn(apiEnv, 'API');
    assertNoSecretIn(enclaveEnv, 'enclave');
    assert.ok(apiEnv.includes('ADMIN_TOKEN_FD=4'), apiEnv.join(' '));
    assert.ok(enclaveEnv.includes('ENCLAVE_MASTER_KEY_FD=4'), enclaveEnv.join(' '));
    assert.equal(
      apiEnv.some((v) => v.startsWith('ENCLAVE_MASTER_KEY')),
      false,
    );
    // They were there to leak: the supervisor's own initial environment holds both.
    const supEnv = environ(sup.proc.pid!).join('\n');
    assert.ok(supEnv.includes(MASTER) && supEnv.includes(ADMIN) && supEnv.includes(CANARY));
  });

  test('signing works end to end through the shared socket, checked with viem', async () => {
    partner = await createPartnerKey(`http://127.0.0.1:${adminPort}`, ADMIN, {
      plan: 'enterprise',
      rateLimitPerMinute: 100_000,
    });
    wallet = await signAndVerify(url, partner.secretKey);
  });

  test("with a master.key file instead: owned by the enclave's user, closed to the API's; the same keys sign", async () => {
    await stop(sup);
    const keyFile = path.join(dataDir, 'enclave/master.key');
    fs.writeFileSync(keyFile, `${MASTER}\n`, { mode: 0o600 }); // written by root, as an operator restoring it
    sup = startSupervisor({
      DATA_DIR: dataDir,
      PORT: String(port),
      ENCLAVE_USER: `${enclaveUid}:${enclaveUid}`,
      API_USER: String(apiUid),
    });
    await ready(sup);
    assert.equal(fs.statSync(keyFile).uid, enclaveUid, 'the supervisor gave the key file to the enclave user');
    assert.deepEqual(tryAs(apiUid, apiUid, [keyFile]), { [keyFile]: 'EACCES' });
    assert.equal(fs.statSync(path.join(dataDir, 'admin-token')).uid, apiUid);
    await signAndVerify(url, partner.secretKey, wallet);
  });

  test('a master.key that other users may read refuses the start, naming the file and the fix, without retrying', async () => {
    await stop(sup);
    const keyFile = path.join(dataDir, 'enclave/master.key');
    fs.chmodSync(keyFile, 0o644);
    sup = startSupervisor({
      DATA_DIR: dataDir,
      PORT: String(port),
      ENCLAVE_USER: String(enclaveUid),
      API_USER: String(apiUid),
    });
    assert.equal(await sup.exited, 1, sup.log());
    assert.ok(sup.log().includes(`${keyFile} (the enclave master key) has mode 0644`), sup.log());
    assert.ok(sup.log().includes(`chmod 600 ${keyFile}`), sup.log());
    // The enclave said why; the supervisor adds no second line about it, and stops.
    assert.match(sup.log(), /\[supervisor\] start failed: stopping/);
    assert.equal(sup.log().match(/enclave starting/g)?.length, 1, 'EX_CONFIG is not retried');
    assert.equal(fs.statSync(keyFile).mode & 0o777, 0o644, 'reported, not silently fixed');
  });
});

describe('one OS user: the supervisor started without ENCLAVE_USER and API_USER', () => {
  let dataDir = '';
  let sup: Supervisor;

  before(async () => {
    dataDir = tempDataDir('wcs-privsep-');
    sup = startSupervisor({
      DATA_DIR: dataDir,
      PORT: String(await freePort()),
      ENCLAVE_MASTER_KEY: MASTER,
      ADMIN_TOKEN: ADMIN,
    });
    await ready(sup);
  });

  after(async () => {
    if (sup) await forceStop(sup);
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  test('logs one clear warning line, and still serves', async () => {
    assert.equal(sup.log().match(WARNING)?.length, 1, sup.log());
    assert.match(sup.log(), /ENCLAVE_USER and API_USER/);
    const port = /api listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(sup.log())![1];
    assert.equal((await fetch(`http://127.0.0.1:${port}/readyz`)).status, 200);
  });

  test("no secret in either child's environment, even as one user", () => {
    assertNoSecretIn(environ(sup.pid('api')), 'API');
    assertNoSecretIn(environ(sup.pid('enclave')), 'enclave');
  });

  test('an enclave restarted after a crash gets its master key again, on a new pipe', async () => {
    const first = sup.pid('enclave');
    process.kill(first, 'SIGKILL');
    const until = Date.now() + 60_000;
    while (!/enclave restarted/.test(sup.log())) {
      assert.ok(Date.now() < until, sup.log());
      await new Promise((r) => setTimeout(r, 50));
    }
    const second = sup.pid('enclave');
    assert.notEqual(second, first);
    const env = environ(second);
    assertNoSecretIn(env, 'restarted enclave');
    assert.ok(env.includes('ENCLAVE_MASTER_KEY_FD=4'));
    const port = /api listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(sup.log())![1];
    let status = 0;
    while (status !== 200 && Date.now() < until) {
      status = (await fetch(`http://127.0.0.1:${port}/readyz`)).status;
      if (status !== 200) await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(status, 200, 'the restarted enclave opened its key store with the key it was handed');
  });

  test('ENCLAVE_USER from a supervisor that is not root is refused with one line, before anything starts', async () => {
    // As root, the supervisor itself is started as an unprivileged uid for this.
    const [uid] = freeUids();
    const refused = startSupervisor(
      { DATA_DIR: path.join(dataDir, 'unused'), ENCLAVE_USER: 'root' },
      isRoot ? { uid, gid: uid } : undefined,
    );
    assert.equal(await refused.exited, 1, refused.log());
    assert.match(
      refused.log(),
      /^\[supervisor\] ENCLAVE_USER needs the supervisor started as root \(it runs as uid \d+\)\n$/,
    );
  });
});
