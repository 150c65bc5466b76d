import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyHttpOptions, FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { ServiceError } from '../../chains/domain/errors.ts';
import type { HttpLimits } from '../config.ts';
import { guardConnections } from './connection-guard.ts';

/** Largest request head (request line and headers) a listener reads; beyond it a 431. */
export const MAX_HEADER_BYTES = 16 * 1024;

/**
 * Open files the API keeps beyond its connections: databases, the enclave socket, worker threads, the
 * admin listener, outbound calls.
 */
export const RESERVED_FILES = 1024;

/** This process's soft open-file limit on Linux (Node raises it to the hard limit at start); else undefined. */
export function openFileLimit(): number | undefined {
  try {
    const line = fs
      .readFileSync('/proc/self/limits', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('Max open files'));
    const soft = Number(line?.split(/\s+/)[3]);
    return Number.isFinite(soft) && soft > 0 ? soft : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The public listener's connection cap: HTTP_MAX_CONNECTIONS, lowered to fit the open-file limit (a
 * listener that runs out of descriptors would also starve the database and the enclave socket).
 */
export function connectionCap(configured: number, fileLimit = openFileLimit()): number {
  if (fileLimit === undefined) return configured;
  return Math.max(1, Math.min(configured, fileLimit - RESERVED_FILES));
}

/** What a connection-level refusal answers, in the service's envelope. */
export interface ClientErrorAnswer {
  status: number;
  code: string;
  message: string;
}

const seconds = (ms: number) => `${ms % 1000 === 0 ? ms / 1000 : (ms / 1000).toFixed(1)} s`;

/**
 * The answer to an error Node's HTTP parser or its timers raise before Fastify sees a request (the
 * server's 'clientError'); undefined when the peer is gone and nothing can be answered.
 */
export function describeClientError(
  err: Error & { code?: string; reason?: string },
  limits: Pick<HttpLimits, 'headersTimeoutMs' | 'requestTimeoutMs'>,
): ClientErrorAnswer | undefined {
  switch (err.code) {
    case 'ECONNRESET':
    case 'EPIPE':
      return undefined;
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return {
        status: 408,
        code: 'REQUEST_TIMEOUT',
        message: `the request did not arrive in time: headers are due within ${seconds(limits.headersTimeoutMs)} of the connection or the previous answer, the whole request within ${seconds(limits.requestTimeoutMs)}`,
      };
    case 'HPE_HEADER_OVERFLOW':
      return {
        status: 431,
        code: 'HEADERS_TOO_LARGE',
        message: `the request line and headers exceed ${MAX_HEADER_BYTES / 1024} KiB`,
      };
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return { status: 413, code: 'PAYLOAD_TOO_LARGE', message: 'chunk extensions of the body are too large' };
    default:
      // Only the parser's own description: it names the problem and never echoes the bytes sent.
      return {
        status: 400,
        code: 'INVALID_REQUEST',
        message: `malformed HTTP/1.1 request${err.reason ? `: ${err.reason}` : ''}`,
      };
  }
}

/** A complete HTTP/1.1 answer carrying the envelope, for a socket Fastify does not own (yet). */
export function rawEnvelope(answer: ClientErrorAnswer): string {
  const requestId = randomUUID();
  const json = JSON.stringify({ code: answer.code, message: answer.message, requestId });
  return [
    `HTTP/1.1 ${answer.status} ${http.STATUS_CODES[answer.status]}`,
    'content-type: application/json; charset=utf-8',
    `content-length: ${Buffer.byteLength(json)}`,
    `x-request-id: ${requestId}`,
    'connection: close',
    '',
    json,
  ].join('\r\n');
}

/**
 * Fastify server options of a listener: Node's timeouts set (its defaults leave a request without a time
 * limit and check headers only every 30 s), the header size limit, and every error Node would answer on
 * its own (400, 408, 413, 431) answered in the envelope. `onRefused` counts the refusals.
 */
export function httpServerOptions(
  limits: HttpLimits,
  onRefused: (status: number) => void = () => undefined,
): Pick<
  FastifyHttpOptions<http.Server>,
  'connectionTimeout' | 'keepAliveTimeout' | 'requestTimeout' | 'http' | 'clientErrorHandler'
> {
  return {
    connectionTimeout: limits.idleTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    http: {
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      // Node checks the two timeouts above on this period; its default (30 s) would let them overrun.
      connectionsCheckingInterval: Math.max(
        50,
        Math.min(1000, Math.floor(Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs) / 4)),
      ),
      maxHeaderSize: MAX_HEADER_BYTES,
      // Node answers a missing Host with a bare 400; the hook in httpLimitsPlugin answers it in the envelope.
      requireHostHeader: false,
    },
    clientErrorHandler(this: FastifyInstance, err: Error & { code?: string }, socket: Socket) {
      const answer = socket.destroyed ? undefined : describeClientError(err, limits);
      if (answer) {
        onRefused(answer.status);
        this.log.debug({ code: err.code, status: answer.status }, 'client error');
        // An answer already on its way (its head written) cannot be followed by another one.
        const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
        if (socket.writable && !inFlight?.headersSent) socket.write(rawEnvelope(answer));
      }
      socket.destroy();
    },
  };
}

/**
 * Per-listener edges the server options cannot express: the connection cap (see guardConnections), and
 * the requests Node or Fastify would answer themselves without the envelope (an `Expect` Node does not
 * support: 417; CONNECT: nothing at all; an HTTP/1.1 request without Host: a bare 400; a request that
 * arrives on an open connection while the service shuts down: 503, with `return503OnClosing` off), and, once it
 * shuts down, connections closed as soon as they carry no request (`Connection: close` on the answers), so that the
 * close completes.
 */
export const httpLimitsPlugin = fp(
  async (
    app: FastifyInstance,
    opts: {
      maxConnections: number;
      onRefused?: (status: number) => void;
      onEvicted?: () => void;
      onDropped?: () => void;
    },
  ) => {
    const refused = opts.onRefused ?? (() => undefined);
    const guard = guardConnections(app.server, opts.maxConnections, {
      ...(opts.onEvicted ? { onEvicted: opts.onEvicted } : {}),
      ...(opts.onDropped ? { onDropped: opts.onDropped } : {}),
    });

    app.server.on('checkExpectation', (_req: http.IncomingMessage, res: http.ServerResponse) => {
      refused(417);
      const answer = { status: 417, code: 'EXPECTATION_FAILED', message: 'only Expect: 100-continue is supported' };
      const requestId = randomUUID();
      const json = JSON.stringify({ code: answer.code, message: answer.message, requestId });
      res.shouldKeepAlive = false;
      res
        .writeHead(417, {
          'content-type': 'application/json; charset=utf-8',
          'content-length': Buffer.byteLength(json),
          'x-request-id': requestId,
        })
        .end(json);
    });
    app.server.on('connect', (_req: http.IncomingMessage, socket: Socket) => {
      refused(405);
      if (socket.writable) {
        socket.write(
          rawEnvelope({
            status: 405,
            code: 'METHOD_NOT_ALLOWED',
            message: 'CONNECT is not supported: this is not a proxy',
          }),
        );
      }
      socket.destroy();
    });

    // Node's close() ends only the connections idle at that moment and stops timing the others out: one that never
    // sent a request, or one busy then (kept alive after its answer), would hold the close for minutes, past the
    // supervisor's grace, and the process would be killed before the actor host drains. The guard closes them, and
    // answers from then on say so.
    let closing = false;
    app.addHook('preClose', (done) => {
      closing = true;
      guard.startClosing();
      done();
    });
    app.addHook('onSend', (_req, reply, payload, done) => {
      if (closing) reply.header('connection', 'close');
      done(null, payload);
    });
    app.addHook('onRequest', (req, _reply, done) => {
      if (closing) {
        done(new ServiceError('SERVICE_UNAVAILABLE', 503, 'the service is shutting down; retry', { transient: true }));
        return;
      }
      if (req.raw.httpVersion === '1.1' && req.headers.host === undefined) {
        done(new ServiceError('INVALID_REQUEST', 400, 'an HTTP/1.1 request must carry a Host header'));
        return;
      }
      done();
    });
  },
);
