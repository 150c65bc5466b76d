/**
 * Client of the enclave socket: the only code that opens it. The API process imports this module; it holds no
 * secret and imports nothing that does (only the framing, the protocol types, the public half of the identity
 * handshake and the socket checks).
 *
 * One connection carries every request, multiplexed by id; replies may come in any order. The client fails fast:
 * while disconnected every call rejects at once, and when the connection drops every call under way rejects at
 * once, with the transient `ENCLAVE_UNAVAILABLE`. Meanwhile it reconnects in the background (the supervisor may
 * be restarting the enclave).
 *
 * A connection counts only once it is authenticated: before connecting, the socket is checked (socket-check.ts);
 * once connected, the client sends `hello` with a fresh challenge and nothing else until the answer verifies
 * (identity.ts) and the identity policy (the API's pin) accepts the key. A refused socket or identity closes the
 * connection, calls keep failing with ENCLAVE_UNAVAILABLE, the reason is logged once per change, and the client
 * keeps retrying every `refusedRetryDelayMs`.
 */
import { randomBytes } from 'node:crypto';
import { connect as netConnect, type Socket } from 'node:net';
import { CodedError } from '../chains/domain/errors.ts';
import { createFrameDecoder, encodeFrame } from './framing.ts';
import { CHALLENGE_BYTES, type EnclaveIdentity, verifyHello } from './identity.ts';
import type { EnclaveErrorCode, EnclaveOp, EnclaveOps, EnclaveReply } from './protocol.ts';
import { checkEnclaveSocket, type SocketOwners, socketOwners } from './socket-check.ts';

export type { EnclaveIdentity } from './identity.ts';

/**
 * An enclave call failed. `code` is the enclave's (protocol.ts), or ENCLAVE_UNAVAILABLE / ENCLAVE_TIMEOUT from the
 * client itself; `transient` errors are worth retrying later, the others are final.
 */
export class EnclaveClientError extends CodedError {
  override name = 'EnclaveClientError';

  constructor(code: string, message: string, options: { httpStatus: number; transient: boolean; cause?: unknown }) {
    super(code, options.httpStatus, message, options);
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
  HELLO_REQUIRED: 500,
  NEXT_KEY_MISSING: 409,
  NEXT_KEY_MISMATCH: 409,
  ALREADY_SIGNED: 409,
  INTERNAL: 500,
};

/** Distinct refusal reasons logged between two accepted connections. */
const MAX_LOGGED_REFUSALS = 8;

function unavailable(message: string): EnclaveClientError {
  return new EnclaveClientError('ENCLAVE_UNAVAILABLE', message, { httpStatus: 503, transient: true });
}

/**
 * Decides whether a verified enclave identity is the expected one: `undefined` accepts it, a string refuses it and
 * is the log line (it should name the presented and the expected fingerprints).
 */
export interface EnclaveIdentityPolicy {
  check(identity: EnclaveIdentity): string | undefined;
}

/**
 * Trust on first use for the lifetime of this policy object: the first verified key is pinned in memory, any other
 * key is refused. For tools and tests; the API pins on disk (api/enclave-pin.ts).
 */
export function memoryPin(): EnclaveIdentityPolicy {
  let pinned: string | undefined;
  return {
    check(identity) {
      pinned ??= identity.fingerprint;
      return identity.fingerprint === pinned
        ? undefined
        : `the enclave presented identity ${identity.fingerprint}; this client pinned ${pinned}`;
    },
  };
}

export interface EnclaveClientOptions {
  socketPath: string;
  /** A call not answered within this many milliseconds rejects with ENCLAVE_TIMEOUT. */
  requestTimeoutMs?: number;
  /** Pause between reconnection attempts. */
  reconnectDelayMs?: number;
  /** Which enclave identities to accept (default: `memoryPin()`). */
  identity?: EnclaveIdentityPolicy;
  /** Owners accepted for the socket and its directories (default: `socketOwners()`: root and this user). */
  owners?: SocketOwners;
  /** The enclave must answer `hello` within this long. */
  handshakeTimeoutMs?: number;
  /** Pause between attempts after a refused socket or identity. */
  refusedRetryDelayMs?: number;
  /**
   * A connection quiet for this long sends a ping, so that the enclave's idle timeout (connection.ts) never closes
   * the client's one connection under a request. Must stay well below that timeout.
   */
  keepaliveMs?: number;
  /** Where refusals (once per change) and recoveries are logged (default: stderr). */
  log?: (line: string) => void;
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
  identity: identityPolicy = memoryPin(),
  owners = socketOwners(),
  handshakeTimeoutMs = 5_000,
  refusedRetryDelayMs = 1_000,
  keepaliveMs = 60_000,
  log = (line: string) => process.stderr.write(`${line}\n`),
}: EnclaveClientOptions) {
  /** The open, authenticated connection, if any. */
  let socket: Socket | undefined;
  /** The identity the open connection proved. */
  let connectedIdentity: EnclaveIdentity | undefined;
  /** A connection attempt under way (connecting or in its handshake), if any. */
  let connecting: Socket | undefined;
  let reconnectTimer: NodeJS.Timeout | undefined;
  let keepaliveTimer: NodeJS.Timeout | undefined;
  /** Set by the first `connect()`: from then on the client reconnects by itself until `close()`. */
  let started = false;
  let closed = false;
  let nextId = 1;
  let corked = false;
  /** Something was written since the last keepalive tick. */
  let active = false;
  /** Why the last attempt was refused, until a connection is accepted again. */
  let refusal: string | undefined;
  /** Reasons logged since the last accepted connection: each is logged once, however attempts alternate. */
  const loggedRefusals = new Set<string>();
  /** The last attempt was refused: the next one waits `refusedRetryDelayMs`. */
  let backOff = false;
  const pending = new Map<number, PendingCall>();
  const connectWaiters = new Set<(error?: EnclaveClientError) => void>();

  function scheduleReconnect(): void {
    if (closed || !started || reconnectTimer || socket || connecting) return;
    reconnectTimer = setTimeout(attempt, backOff ? refusedRetryDelayMs : reconnectDelayMs);
    reconnectTimer.unref();
  }

  /**
   * A refused socket or identity: each reason is logged once until a connection is accepted again, and past
   * MAX_LOGGED_REFUSALS distinct ones (an impostor with a new key per attempt) the rest are not logged.
   */
  function refuse(reason: string): void {
    backOff = true;
    refusal = reason;
    if (loggedRefusals.has(reason) || loggedRefusals.size > MAX_LOGGED_REFUSALS) return;
    loggedRefusals.add(reason);
    log(
      loggedRefusals.size > MAX_LOGGED_REFUSALS
        ? `enclave: refused ${socketPath} for ${MAX_LOGGED_REFUSALS} different reasons; further ones are not logged until an enclave is accepted`
        : `enclave: refused ${socketPath}: ${reason}; requests answer 503 until this is resolved`,
    );
  }

  function attempt(): void {
    reconnectTimer = undefined;
    if (closed || socket || connecting) return;
    const check = checkEnclaveSocket(socketPath, owners);
    if (!check.ok) {
      if (check.missing) backOff = false;
      else refuse(`socket check failed: ${check.problem}`);
      scheduleReconnect();
      return;
    }
    const candidate = netConnect(socketPath);
    connecting = candidate;
    candidate.on('error', () => {
      // ENOENT / ECONNREFUSED while the enclave is down, ECONNRESET when it dies: 'close' follows.
    });
    candidate.once('connect', () => {
      if (closed) {
        candidate.destroy();
        return;
      }
      handshake(candidate);
    });
    candidate.once('close', () => {
      if (connecting === candidate) connecting = undefined;
      if (socket === candidate) detach('the enclave connection closed');
      scheduleReconnect();
    });
  }

  /**
   * Sends `hello` with a fresh challenge and nothing else until the answer verifies and the policy accepts the key;
   * then the connection becomes the client's. Anything else closes it.
   */
  function handshake(candidate: Socket): void {
    const challenge = randomBytes(CHALLENGE_BYTES);
    const helloId = nextId++;
    let authenticated = false;
    /** The first frame decides; anything after a refusal (still in the same chunk) is ignored. */
    let decided = false;
    const timer = setTimeout(() => {
      refuse(`the enclave did not answer the identity handshake within ${handshakeTimeoutMs} ms`);
      candidate.destroy();
    }, handshakeTimeoutMs);
    candidate.once('close', () => clearTimeout(timer));

    const onHello = (body: Buffer): void => {
      if (decided) return;
      decided = true;
      clearTimeout(timer);
      let reply: EnclaveReply | undefined;
      try {
        reply = JSON.parse(body.toString('utf8')) as EnclaveReply;
      } catch {
        reply = undefined;
      }
      let verdict: string | undefined;
      let identity: EnclaveIdentity | undefined;
      if (reply?.id !== helloId) {
        verdict = 'the enclave did not answer the identity handshake first';
      } else if (!reply.ok) {
        verdict = `the enclave answered the identity handshake with ${String(reply.error?.code)}`;
      } else {
        const verified = verifyHello(challenge, reply.result);
        if (verified.ok) {
          identity = verified.identity;
          verdict = identityPolicy.check(identity);
        } else {
          verdict = `identity handshake failed: ${verified.problem}`;
        }
      }
      if (verdict !== undefined || !identity) {
        refuse(verdict ?? 'identity handshake failed');
        candidate.destroy();
        return;
      }
      authenticated = true;
      attach(candidate, identity);
    };

    const decoder = createFrameDecoder({
      onFrame: (body) => (authenticated ? onReply(body) : onHello(body)),
      onBadLength: () => {
        if (!decided) refuse('the enclave answered the identity handshake with an unreadable frame');
        decided = true;
        candidate.destroy();
      },
    });
    candidate.on('data', (chunk: Buffer) => {
      if (!candidate.destroyed) decoder.push(chunk);
    });
    candidate.write(encodeFrame({ id: helloId, op: 'hello', params: { challenge: challenge.toString('base64') } }));
  }

  function attach(connected: Socket, identity: EnclaveIdentity): void {
    connecting = undefined;
    socket = connected;
    connectedIdentity = identity;
    backOff = false;
    if (refusal !== undefined) {
      log(`enclave: identity ${identity.fingerprint} verified on ${socketPath}; serving again`);
      refusal = undefined;
    }
    loggedRefusals.clear();
    active = false;
    keepaliveTimer = setInterval(keepalive, keepaliveMs);
    keepaliveTimer.unref();
    for (const notify of connectWaiters) notify();
  }

  function keepalive(): void {
    if (!active && pending.size === 0) call('ping', {}).catch(() => undefined);
    active = false;
  }

  /** The connection is gone: every call under way fails now rather than at its timeout. */
  function detach(reason: string): void {
    socket = undefined;
    connectedIdentity = undefined;
    if (keepaliveTimer) clearInterval(keepaliveTimer);
    keepaliveTimer = undefined;
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
      active = true;
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
          reject(
            unavailable(
              refusal === undefined
                ? `the enclave socket ${socketPath} did not accept a connection within ${timeoutMs} ms`
                : `the enclave on ${socketPath} was refused: ${refusal}`,
            ),
          );
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
     * With `effectKey` (the effect's durable idempotency key) the enclave signs at most one wallet and message per
     * key: the same again answers `replayed: true`, another fails with ALREADY_SIGNED (protocol.ts).
     * Fails with code NO_KEY, SHARE_MISSING, BAD_REQUEST or ALREADY_SIGNED.
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
    /** True while an authenticated connection is open. */
    isConnected(): boolean {
      return socket !== undefined;
    },
    /** The identity the open connection proved, if connected. */
    identity(): EnclaveIdentity | undefined {
      return connectedIdentity;
    },
    /** Stops reconnecting, fails the calls under way with ENCLAVE_UNAVAILABLE, and closes the connection. */
    close(): Promise<void> {
      closed = true;
      if (reconnectTimer) clearTimeout(reconnectTimer);
      reconnectTimer = undefined;
      for (const notify of connectWaiters) notify(unavailable('the enclave client is closed'));
      connecting?.destroy();
      connecting = undefined;
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

/**
 * Connects once, verifies the enclave's identity handshake, and answers the identity it proved (or rejects with
 * ENCLAVE_UNAVAILABLE naming the problem). For the operator CLI: it accepts any key that signs correctly, so the
 * caller compares the fingerprint itself.
 */
export async function probeEnclaveIdentity(options: {
  socketPath: string;
  owners?: SocketOwners;
  timeoutMs?: number;
}): Promise<EnclaveIdentity> {
  const client = createEnclaveClient({
    socketPath: options.socketPath,
    ...(options.owners ? { owners: options.owners } : {}),
    identity: { check: () => undefined },
    refusedRetryDelayMs: 100,
    log: () => undefined,
  });
  try {
    await client.connect({ timeoutMs: options.timeoutMs ?? 3_000 });
    const identity = client.identity();
    if (!identity) throw unavailable('the enclave connection closed during the handshake');
    return identity;
  } finally {
    await client.close();
  }
}
