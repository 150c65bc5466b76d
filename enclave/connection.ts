/**
 * One connection of the enclave socket server: the framed protocol of protocol.ts, the identity handshake first,
 * and the limits that keep one peer from holding the enclave's memory or time.
 *
 * - The first frame must be `hello` (identity.ts) within `helloTimeoutMs`; any other first frame answers
 *   HELLO_REQUIRED and the connection closes. A second `hello` answers BAD_REQUEST.
 * - A connection with nothing in flight and no bytes either way for `idleTimeoutMs` is closed (the client sends a
 *   ping when it has been quiet, so its one connection stays open).
 * - A frame must arrive whole within `frameTimeoutMs` of the last complete one: a header announcing 1 MiB and then
 *   a trickle is closed, not kept. The decoder holds at most one partial frame (≤ 4 + MAX_FRAME_BYTES).
 * - At most `maxInFlight` requests and `maxInFlightBytes` of request frames are under way per connection; past
 *   either, the connection is not read until some settle.
 * - Back-pressure: when more than `maxWriteBufferBytes` of replies wait in the socket (the peer is not reading),
 *   the connection is not read until they drain.
 * Every limit acts on this connection only; none throws out of here.
 */
import type { Socket } from 'node:net';
import { createFrameDecoder, encodeFrame, parseRequest } from './framing.ts';
import { type EnclaveReply, MAX_FRAME_BYTES } from './protocol.ts';
import type { RequestHandler } from './request-handler.ts';

export interface ConnectionLimits {
  /** Time from accepting a connection to its `hello` frame. */
  helloTimeoutMs: number;
  /** A connection with nothing in flight and no traffic for this long is closed. */
  idleTimeoutMs: number;
  /** A partial frame must be completed within this long (from the last complete frame, or from its first byte). */
  frameTimeoutMs: number;
  /** Requests under way per connection before it stops being read. */
  maxInFlight: number;
  /** Bytes of request frames under way per connection before it stops being read (at least MAX_FRAME_BYTES). */
  maxInFlightBytes: number;
  /** Bytes of replies waiting in the socket before the connection stops being read. */
  maxWriteBufferBytes: number;
  /** Open connections per server; more are closed at once (server.ts). */
  maxConnections: number;
}

/**
 * Defaults. Only the API (one connection), the operator CLI and tools connect, so the connection cap is small; the
 * in-flight caps sit well above what the crypto pool works on at once (the rest would wait in its queue anyway).
 */
export const DEFAULT_CONNECTION_LIMITS: Readonly<ConnectionLimits> = Object.freeze({
  helloTimeoutMs: 10_000,
  idleTimeoutMs: 300_000,
  frameTimeoutMs: 30_000,
  maxInFlight: 256,
  maxInFlightBytes: 4 * MAX_FRAME_BYTES,
  maxWriteBufferBytes: MAX_FRAME_BYTES,
  maxConnections: 32,
});

export interface ServedConnection {
  /** Requests under way on this connection. */
  inFlight(): number;
}

/** Serves the framed protocol on one accepted connection. `onSettled` runs whenever a request under way settles. */
export function serveConnection(
  socket: Socket,
  handler: Pick<RequestHandler, 'handle'>,
  options: { limits: ConnectionLimits; onSettled(): void },
): ServedConnection {
  const { limits } = options;
  let inFlight = 0;
  let inFlightBytes = 0;
  let greeted = false;
  let writeBlocked = false;
  let corked = false;
  let closed = false;
  let frames = 0;
  let frameTimer: NodeJS.Timeout | undefined;

  const helloTimer = setTimeout(() => socket.destroy(), limits.helloTimeoutMs);

  const uncork = (): void => {
    corked = false;
    socket.uncork();
  };

  function clearFrameTimer(): void {
    if (frameTimer) clearTimeout(frameTimer);
    frameTimer = undefined;
  }

  /** Starts the frame deadline when a partial frame waits to be completed by the peer. */
  function armFrameTimer(): void {
    if (frameTimer || closed || decoder.paused || decoder.bufferedBytes === 0) return;
    frameTimer = setTimeout(() => socket.destroy(), limits.frameTimeoutMs);
  }

  function canRead(): boolean {
    return !writeBlocked && inFlight < limits.maxInFlight && inFlightBytes < limits.maxInFlightBytes;
  }

  function pauseReading(): void {
    decoder.pause();
    socket.pause();
    // Bytes now waiting are ours to read, not the peer's to complete.
    clearFrameTimer();
  }

  function resumeReading(): void {
    if (closed || !decoder.paused || !canRead()) return;
    decoder.resume();
    if (decoder.paused) return;
    socket.resume();
    armFrameTimer();
  }

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
    if (!writeBlocked && socket.writableLength > limits.maxWriteBufferBytes) {
      // The peer is not reading its replies: stop reading its requests until they drain.
      writeBlocked = true;
      pauseReading();
      socket.once('drain', () => {
        writeBlocked = false;
        resumeReading();
      });
    }
  }

  /** Answers a protocol violation, then closes this connection once the answer is written. */
  function refuse(reply: EnclaveReply): void {
    pauseReading();
    if (socket.writable) socket.end(encodeFrame(reply), () => socket.destroy());
    else socket.destroy();
  }

  const decoder = createFrameDecoder({
    onFrame(body) {
      frames++;
      const parsed = parseRequest(body);
      if (!greeted) {
        if (!parsed.ok || parsed.request.op !== 'hello') {
          refuse({
            id: parsed.ok ? parsed.request.id : parsed.id,
            ok: false,
            error: { code: 'HELLO_REQUIRED', message: 'the first frame on a connection must be hello' },
          });
          return;
        }
        greeted = true;
        clearTimeout(helloTimer);
      } else if (parsed.ok && parsed.request.op === 'hello') {
        send({
          id: parsed.request.id,
          ok: false,
          error: { code: 'BAD_REQUEST', message: 'hello was already answered on this connection' },
        });
        return;
      }
      if (!parsed.ok) {
        send({ id: parsed.id, ok: false, error: { code: 'BAD_FRAME', message: parsed.message } });
        return;
      }
      const reply = handler.handle(parsed.request);
      if (!(reply instanceof Promise)) {
        send(reply);
        return;
      }
      const size = body.length;
      inFlight++;
      inFlightBytes += size;
      reply.then(send).finally(() => {
        inFlight--;
        inFlightBytes -= size;
        options.onSettled();
        resumeReading();
      });
      if (!canRead()) pauseReading();
    },
    onBadLength(length) {
      // The stream cannot be resynchronised: answer, then close this connection only.
      refuse({
        id: 0,
        ok: false,
        error: { code: 'FRAME_TOO_LARGE', message: `frame length ${length} is outside 1..${MAX_FRAME_BYTES}` },
      });
    },
  });

  socket.setTimeout(limits.idleTimeoutMs);
  socket.on('timeout', () => {
    // Activity re-arms the timer; a request still under way will write its reply, which counts as activity.
    if (inFlight === 0) socket.destroy();
  });
  socket.on('data', (chunk: Buffer) => {
    const before = frames;
    try {
      decoder.push(chunk);
    } catch {
      // Defensive: nothing in the decoder or the handler is expected to throw; never let a peer crash us.
      socket.destroy();
      return;
    }
    if (frames !== before) clearFrameTimer();
    armFrameTimer();
  });
  socket.on('error', () => {
    // Peer resets and broken pipes end the connection ('close' follows); nothing to do.
  });
  socket.once('close', () => {
    closed = true;
    clearTimeout(helloTimer);
    clearFrameTimer();
  });
  return { inFlight: () => inFlight };
}
