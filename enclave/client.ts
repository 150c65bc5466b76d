/**
 * Client of the enclave socket: the only code that opens it. The API process imports this module; it holds no
 * secret and imports nothing that does (only the framing and the protocol types).
 *
 * One connection carries every request, multiplexed by id; replies may come in any order. The client fails fast:
 * while disconnected every call rejects at once, and when the connection drops every call under way rejects at
 * once, with the transient `ENCLAVE_UNAVAILABLE`. Meanwhile it reconnects in the background (the supervisor may
 * be restarting the enclave).
 */
import { connect as netConnect, type Socket } from 'node:net';
import { createFrameDecoder, encodeFrame } from './framing.ts';
import type { EnclaveErrorCode, EnclaveOp, EnclaveOps, EnclaveReply } from './protocol.ts';

/** An enclave call failed. `transient` errors are worth retrying later; the others are final. */
export class EnclaveClientError extends Error {
  override name = 'EnclaveClientError';
  /** Enclave error code (protocol.ts), or ENCLAVE_UNAVAILABLE / ENCLAVE_TIMEOUT from the client itself. */
  readonly code: string;
  readonly httpStatus: number;
  readonly transient: boolean;

  constructor(code: string, message: string, options: { httpStatus: number; transient: boolean; cause?: unknown }) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.httpStatus = options.httpStatus;
    this.transient = options.transient;
  }
}

/**
 * A default HTTP status per enclave code (the API maps codes to its own errors; `code` is what to switch on).
 * SHARE_MISSING is 409: the wallet exists but is not in a state that signs over REST until its share migrates.
 */
const HTTP_STATUS_BY_CODE: Readonly<Record<EnclaveErrorCode, number>> = {
  BAD_REQUEST: 400,
  UNKNOWN_OP: 400,
  BAD_FRAME: 400,
  FRAME_TOO_LARGE: 400,
  KEY_EXISTS: 409,
  NO_KEY: 404,
  SHARE_MISSING: 409,
  PAYLOAD_TOO_LARGE: 413,
  INVALID_PAYLOAD: 400,
  WRONG_WALLET: 400,
  ALREADY_MIGRATED: 409,
  NEXT_KEY_MISSING: 409,
  NEXT_KEY_MISMATCH: 409,
  INTERNAL: 500,
};

function unavailable(message: string): EnclaveClientError {
  return new EnclaveClientError('ENCLAVE_UNAVAILABLE', message, { httpStatus: 503, transient: true });
}

export interface EnclaveClientOptions {
  socketPath: string;
  /** A call not answered within this many milliseconds rejects with ENCLAVE_TIMEOUT. */
  requestTimeoutMs?: number;
  /** Pause between reconnection attempts. */
  reconnectDelayMs?: number;
}

interface PendingCall {
  resolve(result: unknown): void;
  reject(error: EnclaveClientError): void;
  timer: NodeJS.Timeout;
}

/** Creates a client; nothing happens until `connect()`. */
export function createEnclaveClient({
  socketPath,
  requestTimeoutMs = 10_000,
  reconnectDelayMs = 100,
}: EnclaveClientOptions) {
  /** The open connection, if any. */
  let socket: Socket | undefined;
  /** A connection attempt under way, if any. */
  let connecting: Socket | undefined;
  let reconnectTimer: NodeJS.Timeout | undefined;
  /** Set by the first `connect()`: from then on the client reconnects by itself until `close()`. */
  let started = false;
  let closed = false;
  let nextId = 1;
  let corked = false;
  const pending = new Map<number, PendingCall>();
  const connectWaiters = new Set<(error?: EnclaveClientError) => void>();

  function scheduleReconnect(): void {
    if (closed || !started || reconnectTimer || socket || connecting) return;
    reconnectTimer = setTimeout(attempt, reconnectDelayMs);
    reconnectTimer.unref();
  }

  function attempt(): void {
    reconnectTimer = undefined;
    if (closed || socket || connecting) return;
    const candidate = netConnect(socketPath);
    connecting = candidate;
    candidate.on('error', () => {
      // ENOENT / ECONNREFUSED while the enclave is down, ECONNRESET when it dies: 'close' follows.
    });
    candidate.once('connect', () => {
      connecting = undefined;
      if (closed) {
        candidate.destroy();
        return;
      }
      attach(candidate);
    });
    candidate.once('close', () => {
      if (connecting === candidate) connecting = undefined;
      if (socket === candidate) detach('the enclave connection closed');
      scheduleReconnect();
    });
  }

  function attach(connected: Socket): void {
    socket = connected;
    const decoder = createFrameDecoder({
      onFrame: onReply,
      onBadLength: () => connected.destroy(),
    });
    connected.on('data', (chunk: Buffer) => decoder.push(chunk));
    for (const notify of connectWaiters) notify();
  }

  /** The connection is gone: every call under way fails now rather than at its timeout. */
  function detach(reason: string): void {
    socket = undefined;
    if (pending.size === 0) return;
    const calls = [...pending.values()];
    pending.clear();
    for (const call of calls) {
      clearTimeout(call.timer);
      call.reject(unavailable(reason));
    }
  }

  function onReply(body: Buffer): void {
    let reply: EnclaveReply;
    try {
      reply = JSON.parse(body.toString('utf8')) as EnclaveReply;
    } catch {
      return; // Not routable; the call it belonged to (if any) will time out.
    }
    const call = pending.get(reply?.id);
    if (!call) return; // Timed out already, or an id-0 reply to a frame the enclave could not read.
    pending.delete(reply.id);
    clearTimeout(call.timer);
    if (reply.ok) {
      call.resolve(reply.result);
    } else {
      const code = String(reply.error?.code ?? 'INTERNAL');
      call.reject(
        new EnclaveClientError(code, String(reply.error?.message ?? 'enclave error'), {
          httpStatus: HTTP_STATUS_BY_CODE[code as EnclaveErrorCode] ?? 500,
          transient: false,
        }),
      );
    }
  }

  function onTimeout(id: number): void {
    const call = pending.get(id);
    if (!call) return;
    pending.delete(id);
    call.reject(
      new EnclaveClientError('ENCLAVE_TIMEOUT', `the enclave did not answer within ${requestTimeoutMs} ms`, {
        httpStatus: 503,
        transient: true,
      }),
    );
  }

  function uncork(): void {
    corked = false;
    socket?.uncork();
  }

  function call<K extends EnclaveOp>(op: K, params: EnclaveOps[K]['params']): Promise<EnclaveOps[K]['result']> {
    const connected = socket;
    if (!connected) {
      return Promise.reject(unavailable(closed ? 'the enclave client is closed' : 'the enclave is not connected'));
    }
    const id = nextId++;
    let frame: Buffer;
    try {
      frame = encodeFrame({ id, op, params });
    } catch (error) {
      return Promise.reject(
        new EnclaveClientError('FRAME_TOO_LARGE', 'the request is too large for the enclave protocol', {
          httpStatus: 400,
          transient: false,
          cause: error,
        }),
      );
    }
    return new Promise<EnclaveOps[K]['result']>((resolve, reject) => {
      pending.set(id, {
        resolve: resolve as (result: unknown) => void,
        reject,
        timer: setTimeout(onTimeout, requestTimeoutMs, id),
      });
      // Requests issued during one turn of the event loop (every HTTP request parsed in one poll phase) leave
      // in one writev: measured, a write syscall here costs as much as the rest of a small request.
      if (!corked) {
        corked = true;
        connected.cork();
        setImmediate(uncork);
      }
      connected.write(frame);
    });
  }

  return {
    /**
     * Resolves once connected (at once if already connected), retrying every `reconnectDelayMs` until the
     * socket accepts; rejects with ENCLAVE_UNAVAILABLE after `timeoutMs`. From the first call on, the client
     * keeps reconnecting in the background whenever the connection drops, until `close()`.
     */
    connect({ timeoutMs = 10_000 }: { timeoutMs?: number } = {}): Promise<void> {
      if (closed) return Promise.reject(unavailable('the enclave client is closed'));
      if (socket) return Promise.resolve();
      started = true;
      return new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => {
          connectWaiters.delete(settle);
          reject(unavailable(`the enclave socket ${socketPath} did not accept a connection within ${timeoutMs} ms`));
        }, timeoutMs);
        const settle = (error?: EnclaveClientError): void => {
          clearTimeout(timer);
          connectWaiters.delete(settle);
          if (error) reject(error);
          else resolve();
        };
        connectWaiters.add(settle);
        if (!connecting && !reconnectTimer) attempt();
      });
    },
    /**
     * Generates (or returns the existing) key of a wallet. With `custody: 'pregen'` a new key's user share comes
     * back once, in `userShare`; the enclave keeps only the service share.
     */
    generateKey(params: EnclaveOps['generateKey']['params']): Promise<EnclaveOps['generateKey']['result']> {
      return call('generateKey', params);
    },
    /**
     * Signs `message` (base64) with a wallet's key: a 32-byte digest for DKLS, the message itself for ED25519.
     * Fails with code NO_KEY, SHARE_MISSING or BAD_REQUEST.
     */
    sign(params: EnclaveOps['sign']['params']): Promise<EnclaveOps['sign']['result']> {
      return call('sign', params);
    },
    /**
     * Brings a pre-generated wallet's user share into the enclave from the partner's ECIES payload. Fails with
     * code PAYLOAD_TOO_LARGE, NO_KEY, BAD_REQUEST, INVALID_PAYLOAD, WRONG_WALLET or ALREADY_MIGRATED.
     */
    migrateShare(params: EnclaveOps['migrateShare']['params']): Promise<EnclaveOps['migrateShare']['result']> {
      return call('migrateShare', params);
    },
    /** The enclave's ECIES public key (PEM), its fingerprint and generation time. */
    getEciesPublicKey(): Promise<EnclaveOps['getEciesPublicKey']['result']> {
      return call('getEciesPublicKey', {});
    },
    /** Where the enclave's master keys stand (rotation state, key ids, rows per key id). */
    masterKeyStatus(): Promise<EnclaveOps['masterKeyStatus']['result']> {
      return call('masterKeyStatus', {});
    },
    /**
     * Prepares a master-key rotation (no `confirmKeyId`) or starts/resumes it (`confirmKeyId`: the next key's id).
     * Fails with code NEXT_KEY_MISSING or NEXT_KEY_MISMATCH.
     */
    rotateMasterKey(params: EnclaveOps['rotateMasterKey']['params']): Promise<EnclaveOps['rotateMasterKey']['result']> {
      return call('rotateMasterKey', params);
    },
    /** Answers `{status: 'ok'}` when the enclave is up with its store open. */
    ping(): Promise<EnclaveOps['ping']['result']> {
      return call('ping', {});
    },
    /** True while a connection is open. */
    isConnected(): boolean {
      return socket !== undefined;
    },
    /** Stops reconnecting, fails the calls under way with ENCLAVE_UNAVAILABLE, and closes the connection. */
    close(): Promise<void> {
      closed = true;
      if (reconnectTimer) clearTimeout(reconnectTimer);
      reconnectTimer = undefined;
      for (const notify of connectWaiters) notify(unavailable('the enclave client is closed'));
      connecting?.destroy();
      const open = socket;
      detach('the enclave client is closed');
      if (!open || open.destroyed) return Promise.resolve();
      return new Promise<void>((resolve) => {
        open.once('close', () => resolve());
        open.destroy();
      });
    },
  };
}

/** The enclave client as the API and the actors use it. */
export type EnclaveClient = ReturnType<typeof createEnclaveClient>;
