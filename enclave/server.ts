/**
 * The enclave server: a Unix socket (mode 0660, in a directory of its own, 0750) speaking the framed protocol
 * of protocol.ts, in front of the key store and the crypto worker pool. `startEnclave` wires everything;
 * enclave/main.ts runs it as its own process (the deployment), tests may also run it in-process.
 */
import { chmodSync, existsSync, mkdirSync, rmSync, statSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import {
  type ConnectionLimits,
  DEFAULT_CONNECTION_LIMITS,
  type ServedConnection,
  serveConnection,
} from './connection.ts';
import { createCryptoPool } from './crypto-pool.ts';
import { ensureEciesKey } from './ecies-key.ts';
import { type EffectRecordPruning, startEffectRecordPruning } from './effect-records.ts';
import { createKeyRing } from './envelope.ts';
import { ensureIdentityKey } from './identity-key.ts';
import { checkHeldKeys, createKeyRotation, type KeyRotation } from './key-rotation.ts';
import { createKeyStore } from './key-store.ts';
import { createKeyWriter, type KeyWriter } from './key-writer.ts';
import { loadStartKeys } from './next-master-key.ts';
import { assertPrivateFile, octalMode } from './private-file.ts';
import { createRequestHandler } from './request-handler.ts';
import { defaultSocketPath } from './socket-path.ts';

/** Longest Unix socket path that fits `sockaddr_un` on Linux (108 bytes with the terminating NUL). */
const MAX_SOCKET_PATH_BYTES = 107;
/** How long shutdown waits for requests under way before closing connections anyway. */
const DRAIN_TIMEOUT_MS = 10_000;

export interface StartEnclaveOptions {
  /** `$DATA_DIR`: the enclave keeps its files in `<dataDir>/enclave/`. */
  dataDir: string;
  /** Defaults to `<dataDir>/socket/enclave.sock`. */
  socketPath?: string;
  /** 32 bytes. When absent: `ENCLAVE_MASTER_KEY` from `env`, else `<dataDir>/enclave/master.key`. */
  masterKey?: Uint8Array;
  /** With `masterKey`: the next key of a master-key rotation (else ENCLAVE_MASTER_KEY_NEXT / master.key.next). */
  nextMasterKey?: Uint8Array;
  /** Environment to read `ENCLAVE_MASTER_KEY` from (default `process.env`). */
  env?: Record<string, string | undefined>;
  /** Worker threads (default: `os.availableParallelism()`). */
  threads?: number;
  /** Operator log (stderr by default). */
  log?: (line: string) => void;
  /** Connection limits (connection.ts); defaults: DEFAULT_CONNECTION_LIMITS. */
  limits?: Partial<ConnectionLimits>;
}

export interface RunningEnclave {
  socketPath: string;
  /** Fingerprint of the enclave's identity key (identity.ts), as the API pins it. */
  identityFingerprint: string;
  /** Stops accepting, lets requests under way finish, commits, stops the workers, closes the store, removes the socket. */
  close(): Promise<void>;
}

function stderrLog(line: string): void {
  process.stderr.write(`${line}\n`);
}

/** Resolves true when something answers on `path` (a live enclave), false when nothing does. */
function socketIsLive(path: string): Promise<boolean> {
  return new Promise((resolvePromise) => {
    const probe = connect(path);
    probe.once('connect', () => {
      probe.destroy();
      resolvePromise(true);
    });
    probe.once('error', () => resolvePromise(false));
  });
}

function listen(server: Server, socketPath: string): Promise<void> {
  return new Promise((resolvePromise, reject) => {
    server.once('error', reject);
    // The umask makes the socket 0660 from the moment it exists (the API's user reaches it through the
    // directory's group); chmod below makes sure of it.
    const previousUmask = process.umask(0o117);
    try {
      server.listen(socketPath, () => {
        server.off('error', reject);
        resolvePromise();
      });
    } finally {
      process.umask(previousUmask);
    }
  });
}

/**
 * The socket's directory: created 0750 when missing. Its group decides who may connect: the supervisor,
 * started as root, prepares it with the API user's group and the setgid bit, so the socket takes that group.
 * An existing directory is left as it is (it may be shared), with a warning when users other than its owner
 * can write to it, since they could put their own socket in the enclave's place while it restarts.
 */
function ensureSocketDir(dir: string, log: (line: string) => void): void {
  if (!existsSync(dir)) {
    mkdirSync(dir, { recursive: true, mode: 0o750 });
    chmodSync(dir, 0o750); // the umask may have narrowed it
    return;
  }
  const mode = statSync(dir).mode;
  if ((mode & 0o022) !== 0) {
    log(
      `enclave: WARNING the socket directory ${dir} (mode ${octalMode(mode)}) is writable by other users: one of ` +
        `them could put its own socket in the enclave's place. Give the socket a directory of its own ` +
        `(owner the enclave's user, group the API's, mode 0750).`,
    );
  }
}

/**
 * Starts an enclave: creates `<dataDir>/enclave/` (0700), refuses key files other users may read, loads the
 * master key, opens the key store, starts the worker pool, ensures the ECIES key, then listens on the socket
 * (0660 in its 0750 directory, replacing a stale socket file).
 * Throws (after releasing what it started) if any step fails, or if another enclave is live on the socket.
 */
export async function startEnclave(options: StartEnclaveOptions): Promise<RunningEnclave> {
  const log = options.log ?? stderrLog;
  const dataDir = resolve(options.dataDir);
  const socketPath = resolve(options.socketPath ?? defaultSocketPath(dataDir));
  if (Buffer.byteLength(socketPath) > MAX_SOCKET_PATH_BYTES) {
    throw new Error(`enclave socket path is longer than ${MAX_SOCKET_PATH_BYTES} bytes: ${socketPath}`);
  }

  const enclaveDir = join(dataDir, 'enclave');
  mkdirSync(enclaveDir, { recursive: true, mode: 0o700 });
  if ((statSync(enclaveDir).mode & 0o777) !== 0o700) chmodSync(enclaveDir, 0o700);
  const dbPath = join(enclaveDir, 'keys.db');
  for (const suffix of ['', '-wal', '-shm']) assertPrivateFile(dbPath + suffix, 'the sealed key store');
  ensureSocketDir(dirname(socketPath), log);

  const keys = loadStartKeys({
    env: options.env ?? process.env,
    enclaveDir,
    keyStoreExists: existsSync(dbPath),
    log,
    ...(options.masterKey ? { masterKey: options.masterKey } : {}),
    ...(options.nextMasterKey ? { nextMasterKey: options.nextMasterKey } : {}),
  });

  const store = createKeyStore({ path: dbPath });
  let pool: ReturnType<typeof createCryptoPool> | undefined;
  let writer: KeyWriter | undefined;
  let rotation: KeyRotation | undefined;
  let pruning: EffectRecordPruning | undefined;
  try {
    // Every key wrapping a row must be held before anything is opened: a clear error naming the key ids.
    const sealWith = checkHeldKeys(store, keys, enclaveDir);
    const ring = createKeyRing(keys.next ? [keys.master.key, keys.next.key] : [keys.master.key], sealWith);
    pool = createCryptoPool({ masterKey: ring, ...(options.threads ? { threads: options.threads } : {}) });
    const eciesPublicKey = await ensureEciesKey({ store, crypto: pool });
    const identity = await ensureIdentityKey({ store, crypto: pool });
    // Every start, so the operator can compare it with what the API pinned (`npm run admin -- enclave-identity`).
    log(
      `enclave: identity key fingerprint ${identity.fingerprint}` +
        (identity.created ? ' (generated now)' : ` (generated ${identity.generatedAt})`),
    );
    writer = createKeyWriter({ path: dbPath });
    rotation = createKeyRotation({ store, writer, crypto: pool, keys, enclaveDir, log });
    const handler = createRequestHandler({ store, writer, crypto: pool, eciesPublicKey, identity, log, rotation });
    await rotation.open();
    pruning = startEffectRecordPruning({ writer, log });
    const limits: ConnectionLimits = { ...DEFAULT_CONNECTION_LIMITS, ...options.limits };

    if (existsSync(socketPath)) {
      if (await socketIsLive(socketPath)) throw new Error(`another enclave is already listening on ${socketPath}`);
      rmSync(socketPath, { force: true });
    }

    const connections = new Map<Socket, ServedConnection>();
    let waitingForDrain: (() => void) | undefined;
    let refusing = false;
    const inFlight = (): number => {
      let total = 0;
      for (const connection of connections.values()) total += connection.inFlight();
      return total;
    };
    const server = createServer((socket) => {
      if (connections.size >= limits.maxConnections) {
        // Logged once per episode, not once per refused connection.
        if (!refusing) log(`enclave: ${connections.size} connections open; refusing new ones until one closes`);
        refusing = true;
        socket.destroy();
        return;
      }
      connections.set(
        socket,
        serveConnection(socket, handler, {
          limits,
          onSettled: () => {
            if (waitingForDrain && inFlight() === 0) waitingForDrain();
          },
        }),
      );
      socket.once('close', () => {
        connections.delete(socket);
        if (connections.size < limits.maxConnections) refusing = false;
      });
    });
    server.on('error', (error) => log(`enclave: socket server error: ${error.message}`));
    await listen(server, socketPath);
    chmodSync(socketPath, 0o660);

    const runningPool = pool;
    const runningWriter = writer;
    const runningRotation = rotation;
    const runningPruning = pruning;
    let closing: Promise<void> | undefined;
    return {
      socketPath,
      identityFingerprint: identity.fingerprint,
      close() {
        closing ??= (async () => {
          const serverClosed = new Promise<void>((done) => server.close(() => done()));
          // Drain: requests already sent on open connections are read (one event-loop turn) and answered, until
          // a turn passes with nothing under way or the deadline passes.
          const deadline = Date.now() + DRAIN_TIMEOUT_MS;
          for (;;) {
            await new Promise<void>((done) => setImmediate(done));
            if (inFlight() === 0 || Date.now() >= deadline) break;
            await new Promise<void>((done) => {
              const timer = setTimeout(done, deadline - Date.now());
              waitingForDrain = () => {
                clearTimeout(timer);
                done();
              };
            });
            waitingForDrain = undefined;
          }
          for (const socket of connections.keys()) socket.destroy();
          await serverClosed;
          // A rotation stops after its page under way; the next start resumes it.
          await runningRotation.close();
          await runningPruning.close();
          await runningPool.destroy();
          await runningWriter.close();
          store.close();
          rmSync(socketPath, { force: true });
        })();
        return closing;
      },
    };
  } catch (error) {
    await rotation?.close().catch(() => undefined);
    await pruning?.close().catch(() => undefined);
    await pool?.destroy().catch(() => undefined);
    await writer?.close().catch(() => undefined);
    store.close();
    throw error;
  }
}
