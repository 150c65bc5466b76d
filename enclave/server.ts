/**
 * The enclave server: a Unix socket (mode 0600) speaking the framed protocol of protocol.ts, in front of the
 * key store and the crypto worker pool. `startEnclave` wires everything; enclave/main.ts runs it as its own
 * process (the deployment), tests may also run it in-process.
 */
import { chmodSync, existsSync, mkdirSync, rmSync, statSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { join, resolve } from 'node:path';
import { createCryptoPool } from './crypto-pool.ts';
import { ensureEciesKey } from './ecies-key.ts';
import { createKeyRing } from './envelope.ts';
import { createFrameDecoder, encodeFrame, parseRequest } from './framing.ts';
import { checkHeldKeys, createKeyRotation, type KeyRotation } from './key-rotation.ts';
import { createKeyStore } from './key-store.ts';
import { createKeyWriter, type KeyWriter } from './key-writer.ts';
import { loadStartKeys } from './next-master-key.ts';
import { type EnclaveReply, MAX_FRAME_BYTES } from './protocol.ts';
import { createRequestHandler, type RequestHandler } from './request-handler.ts';

/** Longest Unix socket path that fits `sockaddr_un` on Linux (108 bytes with the terminating NUL). */
const MAX_SOCKET_PATH_BYTES = 107;
/** How long shutdown waits for requests under way before closing connections anyway. */
const DRAIN_TIMEOUT_MS = 10_000;

export interface StartEnclaveOptions {
  /** `$DATA_DIR`: the enclave keeps its files in `<dataDir>/enclave/`. */
  dataDir: string;
  /** Defaults to `<dataDir>/enclave.sock`. */
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
}

export interface RunningEnclave {
  socketPath: string;
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

/** Serves the framed protocol on one connection. Returns a function telling how many requests are under way. */
function serveConnection(socket: Socket, handler: RequestHandler, onSettled: () => void): () => number {
  let inFlight = 0;
  let corked = false;

  const uncork = (): void => {
    corked = false;
    socket.uncork();
  };

  function send(reply: EnclaveReply): void {
    if (!socket.writable) return;
    let frame: Buffer;
    try {
      frame = encodeFrame(reply);
    } catch {
      frame = encodeFrame({ id: reply.id, ok: false, error: { code: 'INTERNAL', message: 'internal enclave error' } });
    }
    // Replies written during one turn of the event loop leave in one writev call (see client.ts).
    if (!corked) {
      corked = true;
      socket.cork();
      setImmediate(uncork);
    }
    socket.write(frame);
  }

  const decoder = createFrameDecoder({
    onFrame(body) {
      const parsed = parseRequest(body);
      if (!parsed.ok) {
        send({ id: parsed.id, ok: false, error: { code: 'BAD_FRAME', message: parsed.message } });
        return;
      }
      const reply = handler.handle(parsed.request);
      if (!(reply instanceof Promise)) {
        send(reply);
        return;
      }
      inFlight++;
      reply.then(send).finally(() => {
        inFlight--;
        onSettled();
      });
    },
    onBadLength(length) {
      const reply: EnclaveReply = {
        id: 0,
        ok: false,
        error: { code: 'FRAME_TOO_LARGE', message: `frame length ${length} is outside 1..${MAX_FRAME_BYTES}` },
      };
      // The stream cannot be resynchronised: answer, then close this connection only.
      if (socket.writable) socket.end(encodeFrame(reply), () => socket.destroy());
      else socket.destroy();
    },
  });

  socket.on('data', (chunk: Buffer) => {
    try {
      decoder.push(chunk);
    } catch {
      // Defensive: nothing in the decoder or the handler is expected to throw; never let a peer crash us.
      socket.destroy();
    }
  });
  socket.on('error', () => {
    // Peer resets and broken pipes end the connection ('close' follows); nothing to do.
  });
  return () => inFlight;
}

function listen(server: Server, socketPath: string): Promise<void> {
  return new Promise((resolvePromise, reject) => {
    server.once('error', reject);
    // The umask makes the socket 0600 from the moment it exists; chmod below makes sure of it.
    const previousUmask = process.umask(0o177);
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
 * Starts an enclave: creates `<dataDir>/enclave/` (0700), loads the master key, opens the key store, starts the
 * worker pool, ensures the ECIES key, then listens on the socket (0600, replacing a stale socket file).
 * Throws (after releasing what it started) if any step fails, or if another enclave is live on the socket.
 */
export async function startEnclave(options: StartEnclaveOptions): Promise<RunningEnclave> {
  const log = options.log ?? stderrLog;
  const dataDir = resolve(options.dataDir);
  const socketPath = resolve(options.socketPath ?? join(dataDir, 'enclave.sock'));
  if (Buffer.byteLength(socketPath) > MAX_SOCKET_PATH_BYTES) {
    throw new Error(`enclave socket path is longer than ${MAX_SOCKET_PATH_BYTES} bytes: ${socketPath}`);
  }

  const enclaveDir = join(dataDir, 'enclave');
  mkdirSync(enclaveDir, { recursive: true, mode: 0o700 });
  if ((statSync(enclaveDir).mode & 0o777) !== 0o700) chmodSync(enclaveDir, 0o700);
  const dbPath = join(enclaveDir, 'keys.db');

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
  try {
    // Every key wrapping a row must be held before anything is opened: a clear error naming the key ids.
    const sealWith = checkHeldKeys(store, keys, enclaveDir);
    const ring = createKeyRing(keys.next ? [keys.master.key, keys.next.key] : [keys.master.key], sealWith);
    pool = createCryptoPool({ masterKey: ring, ...(options.threads ? { threads: options.threads } : {}) });
    const eciesPublicKey = await ensureEciesKey({ store, crypto: pool });
    writer = createKeyWriter({ path: dbPath });
    rotation = createKeyRotation({ store, writer, crypto: pool, keys, enclaveDir, log });
    const handler = createRequestHandler({ store, writer, crypto: pool, eciesPublicKey, log, rotation });
    await rotation.open();

    if (existsSync(socketPath)) {
      if (await socketIsLive(socketPath)) throw new Error(`another enclave is already listening on ${socketPath}`);
      rmSync(socketPath, { force: true });
    }

    const connections = new Map<Socket, () => number>();
    let waitingForDrain: (() => void) | undefined;
    const inFlight = (): number => {
      let total = 0;
      for (const count of connections.values()) total += count();
      return total;
    };
    const server = createServer((socket) => {
      connections.set(
        socket,
        serveConnection(socket, handler, () => {
          if (waitingForDrain && inFlight() === 0) waitingForDrain();
        }),
      );
      socket.once('close', () => connections.delete(socket));
    });
    server.on('error', (error) => log(`enclave: socket server error: ${error.message}`));
    await listen(server, socketPath);
    chmodSync(socketPath, 0o600);

    const runningPool = pool;
    const runningWriter = writer;
    const runningRotation = rotation;
    let closing: Promise<void> | undefined;
    return {
      socketPath,
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
    await pool?.destroy().catch(() => undefined);
    await writer?.close().catch(() => undefined);
    store.close();
    throw error;
  }
}
