/**
 * A supervisor killed outright (SIGKILL, an OOM kill) leaves no child behind: the enclave and the API see their
 * channel to it close and stop, so the supervisor that replaces it (a service manager's restart) can take the
 * data directory, the socket and the ports again.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { freePort } from '../fixtures/free-port.ts';
import { ROOT, tempDataDir } from './helpers/service.ts';

const run = promisify(execFile);
const ADMIN_TOKEN = 'supervisor-killed-admin-token-0123456789';
/** The appliance as `npm start` builds it, in a directory of its own (operator.spec builds dist/ meanwhile). */
const BUILD = path.join(ROOT, '.tmp', `supervisor-killed-${process.pid}`);

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

function startSupervisor(dataDir: string, port: number, adminPort: number): { proc: ChildProcess; log: () => string } {
  const proc = spawn(process.execPath, ['--enable-source-maps', path.join(BUILD, 'main.js')], {
    cwd: ROOT,
    env: {
      ...process.env,
      DATA_DIR: dataDir,
      PORT: String(port),
      ADMIN_PORT: String(adminPort),
      ADMIN_TOKEN,
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  proc.stdout?.on('data', (d) => {
    log += String(d);
  });
  proc.stderr?.on('data', (d) => {
    log += String(d);
  });
  return { proc, log: () => log };
}

async function until(what: string, check: () => boolean | Promise<boolean>, log: () => string): Promise<void> {
  for (const end = Date.now() + 30_000; Date.now() < end; ) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${what} did not happen in 30 s:\n${log()}`);
}

const dataDir = tempDataDir();
const started: ChildProcess[] = [];

before(async () => {
  await run('npm', ['run', 'build', '--silent', '--', `--outdir=${BUILD}`], { cwd: ROOT });
});
after(() => {
  for (const p of started) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
  fs.rmSync(dataDir, { recursive: true, force: true });
  fs.rmSync(BUILD, { recursive: true, force: true });
});

test('SIGKILL to the supervisor: both children stop, and a new supervisor starts on the same data directory', async () => {
  const port = await freePort();
  const adminPort = await freePort();
  const first = startSupervisor(dataDir, port, adminPort);
  started.push(first.proc);
  await until('the first start', () => /\[supervisor\] ready in/.test(first.log()), first.log);
  const pids = [...first.log().matchAll(/(enclave|api) starting \(pid (\d+)\)/g)].map((m) => Number(m[2]));
  assert.equal(pids.length, 2, first.log());
  assert.ok(pids.every(alive));

  first.proc.kill('SIGKILL');
  await until('both children stopping', () => !pids.some(alive), first.log);

  const second = startSupervisor(dataDir, port, adminPort);
  started.push(second.proc);
  await until('the second start', () => /\[supervisor\] ready in/.test(second.log()), second.log);
  assert.equal((await fetch(`http://127.0.0.1:${port}/readyz`)).status, 200);
  second.proc.kill('SIGTERM');
  await new Promise((r) => second.proc.once('exit', r));
});
