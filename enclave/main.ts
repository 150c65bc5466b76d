/**
 * Entry point of the enclave process: `node --import tsx enclave/main.ts`.
 *
 * Environment: `DATA_DIR` (default ./data), `ENCLAVE_SOCKET` (default `$DATA_DIR/socket/enclave.sock`), the
 * master key as `ENCLAVE_MASTER_KEY`, `ENCLAVE_MASTER_KEY_FD` (a descriptor to read it from: the supervisor's
 * way, which keeps it out of `/proc/<pid>/environ`) or the systemd credential `enclave-master-key`; else
 * `$DATA_DIR/enclave/master.key`, created at first start. Whatever was read is removed from `process.env`.
 * Readiness: `{type: 'ready'}` over IPC when there is a parent channel, and one stdout line
 * `enclave ready on <socket path>`. SIGTERM/SIGINT shut it down cleanly (exit 0); a failed start exits 1,
 * or 78 (EX_CONFIG) when the master key is misconfigured or a key file's mode is loose, which the supervisor
 * does not retry, or 75 with one line when another enclave already answers on the socket (a second start of a
 * running instance).
 */
import { existsSync } from 'node:fs';
import { connect } from 'node:net';
import { resolve } from 'node:path';
import { WrongMasterKeyError } from './ecies-key.ts';
import { MasterKeyError } from './master-key.ts';
import { LooseModeError } from './private-file.ts';
import { SecretSourceError } from './secret-source.ts';
import { type RunningEnclave, startEnclave } from './server.ts';
import { defaultSocketPath } from './socket-path.ts';

const dataDir = resolve(process.env.DATA_DIR || './data');
const socketPath = resolve(process.env.ENCLAVE_SOCKET || defaultSocketPath(dataDir));

/** Exit code when another enclave answers on the socket (EX_TEMPFAIL: retry once it is free). */
const EX_IN_USE = 75;

/** Whether something accepts connections on the socket path (a leftover file from a crash does not). */
function socketAnswers(path: string): Promise<boolean> {
  if (!existsSync(path)) return Promise.resolve(false);
  return new Promise((done) => {
    const probe = connect(path);
    probe.setTimeout(2_000, () => probe.destroy());
    probe.on('error', () => undefined); // refused or gone: 'close' follows and answers false
    probe.once('connect', () => {
      probe.destroy();
      done(true);
    });
    probe.once('close', () => done(false));
  });
}

// A second start on a running instance: one line saying so, before anything of the running one is opened.
if (await socketAnswers(socketPath)) {
  process.stderr.write(
    socketPath === defaultSocketPath(dataDir)
      ? `enclave: another instance is running on this data directory (${dataDir}): its enclave answers on ${socketPath}\n`
      : `enclave: the socket ${socketPath} is in use by another enclave: stop it or set ENCLAVE_SOCKET to another path\n`,
  );
  process.exit(EX_IN_USE);
}

let enclave: RunningEnclave;
try {
  enclave = await startEnclave({ dataDir, socketPath, env: process.env });
} catch (error) {
  const expected =
    error instanceof MasterKeyError ||
    error instanceof WrongMasterKeyError ||
    error instanceof SecretSourceError ||
    error instanceof LooseModeError;
  const detail = error instanceof Error ? (expected ? error.message : (error.stack ?? error.message)) : String(error);
  process.stderr.write(`enclave: failed to start: ${detail}\n`);
  process.exit(expected ? 78 : 1);
}

/** Shutdown waits for requests under way (up to 10 s) and the last commit; past this, exit anyway. */
const SHUTDOWN_DEADLINE_MS = 25_000;

let stopping = false;
async function shutdown(reason: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  process.stderr.write(`enclave: ${reason}, shutting down\n`);
  setTimeout(() => {
    process.stderr.write('enclave: shutdown did not finish in time, exiting\n');
    process.exit(1);
  }, SHUTDOWN_DEADLINE_MS);
  try {
    await enclave.close();
    process.exit(0);
  } catch (error) {
    process.stderr.write(`enclave: shutdown failed: ${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  }
}
process.on('SIGTERM', () => void shutdown('SIGTERM received'));
process.on('SIGINT', () => void shutdown('SIGINT received'));
// Started by the supervisor: if it dies (even by SIGKILL) the channel closes, and the enclave stops too, rather
// than keep the socket and its key store from the supervisor that replaces it.
if (process.send) process.once('disconnect', () => void shutdown('the supervisor is gone'));

process.send?.({ type: 'ready' });
process.stdout.write(`enclave ready on ${socketPath}\n`);
