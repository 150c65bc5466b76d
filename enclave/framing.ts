/**
 * Length-prefixed framing for the enclave socket (see protocol.ts): a 4-byte big-endian length N,
 * 1 ≤ N ≤ MAX_FRAME_BYTES, then N bytes of UTF-8 JSON. Shared by the enclave server and enclave/client;
 * it holds no secrets.
 */
import { type EnclaveOp, type EnclaveRequest, MAX_FRAME_BYTES } from './protocol.ts';

const HEADER_BYTES = 4;

/** Encodes one message as a frame. Throws a RangeError if the JSON is larger than MAX_FRAME_BYTES. */
export function encodeFrame(message: unknown): Buffer {
  const json = JSON.stringify(message);
  // Byte length first: `json.length` counts UTF-16 units, not bytes.
  const length = Buffer.byteLength(json, 'utf8');
  if (length === 0 || length > MAX_FRAME_BYTES) {
    throw new RangeError(`frame of ${length} bytes is outside 1..${MAX_FRAME_BYTES}`);
  }
  const frame = Buffer.allocUnsafe(HEADER_BYTES + length);
  frame.writeUInt32BE(length, 0);
  frame.write(json, HEADER_BYTES, 'utf8');
  return frame;
}

export interface FrameDecoderHandlers {
  /** A complete frame body. The buffer may share memory with the input chunk: use it before returning. */
  onFrame(body: Buffer): void;
  /** The length prefix was 0 or above MAX_FRAME_BYTES. The decoder is then dead: the stream cannot resync. */
  onBadLength(length: number): void;
}

/**
 * Incremental decoder: feed it socket chunks in order with `push`; it calls `onFrame` once per complete frame,
 * however the bytes were split across chunks. Oversized lengths are refused as soon as the header arrives,
 * without buffering the body. `pause()` (also from inside `onFrame`) stops delivery: later chunks are only kept
 * until `resume()` delivers the frames they complete, so a server can bound the requests it has taken on.
 */
export function createFrameDecoder(handlers: FrameDecoderHandlers) {
  let parts: Buffer[] = [];
  let buffered = 0;
  let bodyLength = -1;
  let dead = false;
  let paused = false;
  let delivering = false;

  /** Removes and returns the first `n` buffered bytes (copying only when they span several chunks). */
  function take(n: number): Buffer {
    const first = parts[0]!;
    buffered -= n;
    if (first.length === n) {
      parts.shift();
      return first;
    }
    if (first.length > n) {
      parts[0] = first.subarray(n);
      return first.subarray(0, n);
    }
    const out = Buffer.allocUnsafe(n);
    let filled = 0;
    while (filled < n) {
      const part = parts[0]!;
      const want = n - filled;
      if (part.length <= want) {
        part.copy(out, filled);
        filled += part.length;
        parts.shift();
      } else {
        part.copy(out, filled, 0, want);
        parts[0] = part.subarray(want);
        filled = n;
      }
    }
    return out;
  }

  /** Delivers every complete frame buffered, until none is left, the decoder is paused or it dies. */
  function deliver(): void {
    // A resume() from inside onFrame must not start a second loop over the same buffers.
    if (delivering) return;
    delivering = true;
    try {
      while (!dead && !paused) {
        if (bodyLength < 0) {
          if (buffered < HEADER_BYTES) return;
          const length = take(HEADER_BYTES).readUInt32BE(0);
          if (length === 0 || length > MAX_FRAME_BYTES) {
            dead = true;
            parts = [];
            buffered = 0;
            handlers.onBadLength(length);
            return;
          }
          bodyLength = length;
        }
        if (buffered < bodyLength) return;
        const body = take(bodyLength);
        bodyLength = -1;
        handlers.onFrame(body);
      }
    } finally {
      delivering = false;
    }
  }

  return {
    push(chunk: Buffer): void {
      if (dead || chunk.length === 0) return;
      parts.push(chunk);
      buffered += chunk.length;
      deliver();
    },
    /** Stops delivering frames (bytes pushed meanwhile are kept) until `resume()`. */
    pause(): void {
      paused = true;
    },
    /** Delivers the frames buffered while paused, then goes on as before. */
    resume(): void {
      if (!paused) return;
      paused = false;
      deliver();
    },
    get paused(): boolean {
      return paused;
    },
    /** Bytes received but not yet delivered as a frame. */
    get bufferedBytes(): number {
      return buffered;
    },
  };
}

export type FrameDecoder = ReturnType<typeof createFrameDecoder>;

export type ParsedRequest = { ok: true; request: EnclaveRequest } | { ok: false; id: number; message: string };

/** True for the ids a client may use: positive safe integers (0 is reserved for unreadable frames). */
function isRequestId(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value > 0;
}

/**
 * Parses a frame body into a request envelope. It checks the envelope only (id, op, params object);
 * whether the op exists and its params are acceptable is the server's business.
 * Failures carry the id when it could be read, else 0.
 */
export function parseRequest(body: Buffer): ParsedRequest {
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch {
    return { ok: false, id: 0, message: 'frame is not valid JSON' };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { ok: false, id: 0, message: 'frame is not a request object' };
  }
  const record = value as Record<string, unknown>;
  if (!isRequestId(record.id)) {
    return { ok: false, id: 0, message: 'request id must be a positive integer' };
  }
  if (typeof record.op !== 'string' || record.op.length === 0) {
    return { ok: false, id: record.id, message: 'request op must be a non-empty string' };
  }
  const params = record.params ?? {};
  if (typeof params !== 'object' || params === null || Array.isArray(params)) {
    return { ok: false, id: record.id, message: 'request params must be an object' };
  }
  return {
    ok: true,
    request: { id: record.id, op: record.op as EnclaveOp, params: params as EnclaveRequest['params'] },
  };
}
