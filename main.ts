/**
 * The supervisor (`npm start`): starts the enclave process and the API process side by side; the API
 * waits for the enclave's socket before it restores actors and listens, so nothing is served before the
 * enclave answers (starting both at once saves the API's own load time on start-up). It restarts a child
 * that dies, with a growing back-off, and on SIGTERM/SIGINT stops the API first, then the enclave.
 *
 * The supervisor reads no configuration of the children (so it stays small and starts fast): each child
 * checks its own and exits with EX_CONFIG (78) and a message naming the variable, and the supervisor then
 * stops. It passes each child only the variables on its allowlist (bin/supervisor/child-env.ts), and hands
 * secrets (ENCLAVE_MASTER_KEY to the enclave, ADMIN_TOKEN to the API) over a pipe on a file descriptor
 * (`<NAME>_FD`), never in an environment, since `/proc/<pid>/environ` keeps a process's initial environment.
 *
 * Privilege separation: started as root with `ENCLAVE_USER` and `API_USER`, it prepares the data directory's
 * ownership (bin/supervisor/data-dir.ts) and starts each child as its user. Node's fork drops root's
 * supplementary groups (libuv calls setgroups(0) before setgid/setuid) and does not add the user's: each child
 * has its uid and one group. A start where both children run as one user logs one warning line.
 */
import { type ChildProcess, fork } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import type { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { API_V8_FLAGS } from './bin/supervisor/api-v8-flags.ts';
import { childEnv, SECRETS } from './bin/supervisor/child-env.ts';
import { DataDirError, prepareDataDir } from './bin/supervisor/data-dir.ts';
import { type OsUser, OsUserError, resolveOsUser } from './bin/supervisor/os-user.ts';
import { defaultSocketPath, readSecret, SecretSourceError } from './enclave/public.ts';

const root = path.dirname(fileURLToPath(import.meta.url));
/** From source (`node --import tsx main.ts`) the children run as TypeScript; from dist/ as the built bundles. */
const fromSource = import.meta.url.endsWith('.ts');
const EXT = fromSource ? '.ts' : '.js';
const READY_TIMEOUT_MS = 30_000;
const EX_CONFIG = 78;
/** A child's exit code when another process holds the data directory, the socket or the port. */
const EX_IN_USE = 75;
/** Descriptors 0-2 are stdio and 3 the IPC channel: secrets go on 4, 5, … */
const FIRST_SECRET_FD = 4;

interface Child {
  name: 'enclave' | 'api';
  entry: string;
  /** The child's whole environment (allowlisted). */
  env: Record<string, string>;
  /** Written to the child on a pipe each time it starts; the child finds it through `<name>_FD`. */
  secrets: Array<{ name: string; value: string }>;
  /** Set when the supervisor runs as root and the child must run as another user. */
  runAs?: { uid: number; gid: number };
  proc?: ChildProcess;
  restarts: number;
  startedAt: number;
}

const log = (msg: string) => console.log(`[supervisor] ${msg}`);
const running = (p?: ChildProcess) => !!p && p.exitCode === null && p.signalCode === null;

/** Forks a child and resolves when it reports `{type: 'ready'}`; rejects if it exits or times out first. */
function start(child: Child): Promise<void> {
  return new Promise((resolve, reject) => {
    const env = { ...child.env };
    child.secrets.forEach((secret, i) => {
      env[`${secret.name}_FD`] = String(FIRST_SECRET_FD + i);
    });
    const proc = fork(path.join(root, `${child.entry}${EXT}`), [], {
      execArgv: [
        ...(fromSource ? ['--import', 'tsx'] : ['--enable-source-maps']),
        ...(child.name === 'api' ? API_V8_FLAGS : []),
      ],
      env,
      stdio: ['ignore', 'inherit', 'inherit', 'ipc', ...child.secrets.map(() => 'pipe' as const)],
      ...(child.runAs ?? {}),
    });
    child.secrets.forEach((secret, i) => {
      const pipe = proc.stdio[FIRST_SECRET_FD + i] as Writable | null;
      // A child that dies before reading breaks the pipe: its exit is handled below, not this error.
      pipe?.on('error', () => undefined);
      pipe?.end(secret.value);
    });
    proc.once('error', (error) => reject(new Error(`${child.name} could not be started: ${error.message}`)));
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

/** The two children, as the settings and the supervisor's own user say; prepares the data directory if needed. */
function plan(): { enclave: Child; api: Child } {
  const env = process.env;
  const uid = process.getuid?.() ?? 0;
  let name = '';
  try {
    name = os.userInfo().username;
  } catch {
    // a uid without a passwd entry: the number says it
  }
  const self: OsUser = { uid, gid: process.getgid?.() ?? 0, label: name ? `${name} (uid ${uid})` : `uid ${uid}` };
  const asRoot = self.uid === 0;
  const users = { enclave: self, api: self };
  for (const [key, variable] of [
    ['enclave', 'ENCLAVE_USER'],
    ['api', 'API_USER'],
  ] as const) {
    const value = env[variable];
    if (!value) continue;
    const user = resolveOsUser(variable, value);
    if (!asRoot && (user.uid !== self.uid || user.gid !== self.gid)) {
      throw new OsUserError(`${variable} needs the supervisor started as root (it runs as uid ${self.uid})`);
    }
    users[key] = user;
  }
  if (asRoot && (users.enclave !== self || users.api !== self)) {
    const dataDir = path.resolve(env['DATA_DIR'] || './data');
    const socketPath = path.resolve(env['ENCLAVE_SOCKET'] || defaultSocketPath(dataDir));
    prepareDataDir({ dataDir, socketPath, codeDir: root, enclave: users.enclave, api: users.api });
  }

  // Secrets: read here (environment, descriptor or credential, and removed from this process's environment),
  // handed to the child that needs them on a pipe.
  const secretsOf = (names: readonly string[]) =>
    names.flatMap((name) => {
      const secret = readSecret(name, { env });
      return secret ? [{ name, value: secret.value }] : [];
    });
  const make = (name: Child['name'], entry: string, user: OsUser, secrets: readonly string[]): Child => {
    const home = user === self ? env['HOME'] : user.home;
    const extra: Record<string, string> = home ? { HOME: home } : {};
    // The API checks that the socket belongs to the enclave's user: it gets that uid, resolved here.
    if (name === 'api' && users.enclave !== self) extra['ENCLAVE_USER'] = String(users.enclave.uid);
    return {
      name,
      entry,
      env: childEnv(name, env, extra),
      secrets: secretsOf(secrets),
      ...(user.uid !== self.uid || user.gid !== self.gid ? { runAs: { uid: user.uid, gid: user.gid } } : {}),
      restarts: 0,
      startedAt: 0,
    };
  };
  const children = {
    enclave: make('enclave', 'enclave/main', users.enclave, SECRETS.enclave),
    api: make('api', 'api/main', users.api, SECRETS.api),
  };
  if (users.enclave.uid === users.api.uid) {
    log(
      `WARNING: the enclave and the API run as one OS user (${users.api.label}), so a compromised API could read ` +
        'every key; in production start as root with ENCLAVE_USER and API_USER, or use bin/systemd/ ' +
        '(README: "Production: two OS users")',
    );
  } else if (users.api.uid === 0) {
    log('WARNING: the API runs as root, so a compromised API could read every key; set API_USER');
  }
  return children;
}

async function main(): Promise<void> {
  const t0 = Date.now();
  let enclave: Child;
  let api: Child;
  try {
    ({ enclave, api } = plan());
  } catch (err) {
    // Our own errors name the setting; others (a read-only or missing file system) carry the path and code.
    const known = [OsUserError, DataDirError, SecretSourceError].some((type) => err instanceof type);
    console.error(`[supervisor] ${known ? '' : 'could not prepare the start: '}${(err as Error).message}`);
    process.exit(1);
  }
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
