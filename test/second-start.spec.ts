import assert from 'node:assert/strict';
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { defaultSocketPath } from '../enclave/socket-path.ts';
import { freePort } from '../fixtures/free-port.ts';
import { ROOT, tempDataDir } from './helpers/service.ts';

const run = promisify(execFile);
const ADMIN_TOKEN = 'second-start-admin-token-0123456789';
/** The appliance as `npm start` builds it, in a directory of its own so that operator.spec's build cannot race it. */
const BUILD = path.join(ROOT, '.tmp', `second-start-${process.pid}`);

interface Exit {
  code: number | null;
  output: string;
}

/** Runs a start to its end and returns its exit code and everything it printed (stdout and stderr). */
async function startToExit(entry: string, env: Record<string, string>): Promise<Exit> {
  const child = spawn(process.execPath, ['--enable-source-maps', path.join(BUILD, entry)], {
    cwd: ROOT,
    env: { ...process.env, ADMIN_TOKEN, LOG_LEVEL: 'warn', ADMIN_PORT: String(await freePort()), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (d) => {
    output += String(d);
  });
  child.stderr?.on('data', (d) => {
    output += String(d);
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  const code = await new Promise<number | null>((resolve) => child.once('close', (c) => resolve(c)));
  clearTimeout(timer);
  return { code, output };
}

/** The promise of a refused second start: a non-zero exit, a line naming the problem, no stack trace. */
function assertOneLineRefusal(exit: Exit, problem: RegExp): void {
  assert.notEqual(exit.code, 0, exit.output);
  assert.notEqual(exit.code, null, `still running after 30 s:\n${exit.output}`);
  const lines = exit.output.split('\n').filter((l) => problem.test(l));
  assert.ok(lines.length >= 1, `no line matching ${problem} in:\n${exit.output}`);
  assert.doesNotMatch(exit.output, /^\s+at /m, 'a stack trace was printed');
  assert.doesNotMatch(exit.output, /\bError\b/, 'an error object was printed');
}

describe('a second start beside a running instance', () => {
  let dataDir: string;
  let port: number;
  let url: string;
  let first: ChildProcess;
  let log = '';

  before(async () => {
    await run('npm', ['run', 'build', '--silent', '--', `--outdir=${BUILD}`], { cwd: ROOT });
    dataDir = tempDataDir();
    port = await freePort();
    url = `http://127.0.0.1:${port}`;
    first = spawn(process.execPath, ['--enable-source-maps', path.join(BUILD, 'main.js')], {
      cwd: ROOT,
      env: {
        ...process.env,
        DATA_DIR: dataDir,
        PORT: String(port),
        ADMIN_PORT: String(await freePort()),
        ADMIN_TOKEN,
        LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    first.stdout?.on('data', (d) => {
      log += String(d);
    });
    first.stderr?.on('data', (d) => {
      log += String(d);
    });
    const until = Date.now() + 30_000;
    while (!/\[supervisor\] ready in/.test(log)) {
      if (Date.now() > until || first.exitCode !== null) throw new Error(`first instance did not start:\n${log}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  });

  after(async () => {
    if (first && first.exitCode === null && first.signalCode === null) {
      await new Promise<void>((resolve) => {
        first.once('exit', () => resolve());
        process.kill(first.pid!, 'SIGTERM');
      });
    }
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
    fs.rmSync(BUILD, { recursive: true, force: true });
  });

  /** The first instance still answers, with its enclave, and its socket is still there. */
  async function firstStillServes(): Promise<void> {
    const ready = await fetch(`${url}/readyz`);
    assert.equal(ready.status, 200);
    assert.ok(fs.existsSync(defaultSocketPath(dataDir)));
  }

  test('npm start on the same data directory (another port): one line, exit non-zero, the first one unharmed', async () => {
    const other = await freePort();
    const exit = await startToExit('main.js', { DATA_DIR: dataDir, PORT: String(other) });
    const escaped = dataDir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    assertOneLineRefusal(exit, new RegExp(`another instance is running on this data directory \\(${escaped}\\)`));
    await firstStillServes();
  });

  test('the API alone on the same data directory stops at its lock, before it touches the database', async () => {
    const other = await freePort();
    const exit = await startToExit('api/main.js', { DATA_DIR: dataDir, PORT: String(other) });
    assert.equal(exit.code, 75, exit.output);
    assert.match(exit.output.trim(), /^api: another instance is running on this data directory \(.+\): stop it first/);
    assert.equal(exit.output.trim().split('\n').length, 1, exit.output);
    await firstStillServes();
  });

  test('npm start on another data directory but the same port: one line naming the port', async () => {
    const otherDir = tempDataDir();
    try {
      const exit = await startToExit('main.js', { DATA_DIR: otherDir, PORT: String(port) });
      assertOneLineRefusal(exit, new RegExp(`^api: 127\\.0\\.0\\.1:${port} is in use by another process`));
    } finally {
      fs.rmSync(otherDir, { recursive: true, force: true });
    }
    await firstStillServes();
  });

  test("npm start with ENCLAVE_SOCKET on the running enclave's socket: one line naming the socket", async () => {
    const otherDir = tempDataDir();
    const socket = defaultSocketPath(dataDir);
    try {
      const exit = await startToExit('main.js', {
        DATA_DIR: otherDir,
        PORT: String(await freePort()),
        ENCLAVE_SOCKET: socket,
      });
      assertOneLineRefusal(exit, new RegExp(`^enclave: the socket ${socket.replace(/[.]/g, '\\.')} is in use`));
    } finally {
      fs.rmSync(otherDir, { recursive: true, force: true });
    }
    await firstStillServes();
  });

  test('a killed API leaves no stale lock: the supervisor restarts it on the same data directory', async () => {
    const apiPid = Number([...log.matchAll(/api starting \(pid (\d+)\)/g)].at(-1)![1]);
    process.kill(apiPid, 'SIGKILL');
    const until = Date.now() + 30_000;
    while (!/api restarted/.test(log)) {
      if (Date.now() > until) throw new Error(`the API was not restarted:\n${log}`);
      await new Promise((r) => setTimeout(r, 25));
    }
    assert.doesNotMatch(log, /another instance is running/);
    await firstStillServes();
  });
});
