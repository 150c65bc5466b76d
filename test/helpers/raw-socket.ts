import type http from 'node:http';
import net from 'node:net';
import type { RawResponse } from './bad-input-http.ts';

/** What a server did with a connection `socketExchange` drove. */
export interface SocketOutcome {
  /** The answer, when the server sent one (only the first, if it sent several). */
  response?: RawResponse;
  /** Everything the server sent, as text. */
  text: string;
  /** `server`: the server closed or reset the connection; `client`: the exchange gave up first. */
  closedBy: 'server' | 'client';
  /** From connect to close. */
  elapsedMs: number;
  /** How many of `parts` were written before the close. */
  written: number;
}

/** Parses the first HTTP/1.1 answer in `text` (head, then a Content-Length body). */
export function parseHttpResponse(text: string): RawResponse | undefined {
  const end = text.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const [statusLine = '', ...lines] = text.slice(0, end).split('\r\n');
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine);
  if (!m) return undefined;
  const headers: http.IncomingHttpHeaders = {};
  for (const line of lines) {
    const i = line.indexOf(':');
    if (i > 0) headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
  }
  const length = Number(headers['content-length'] ?? 0);
  const bodyText = Buffer.from(text.slice(end + 4))
    .subarray(0, length)
    .toString('utf8');
  let body: unknown;
  try {
    body = bodyText ? JSON.parse(bodyText) : undefined;
  } catch {
    body = undefined;
  }
  return { status: Number(m[1]), headers, text: bodyText, body };
}

/**
 * Opens a TCP connection to `base` (`http://host:port`) and writes `parts` one after another, `gapMs`
 * apart (a slow client), until the server closes the connection or `timeoutMs` passes. Collects what the
 * server sent. Nothing is written after the server closed.
 */
export function socketExchange(
  base: string,
  parts: ReadonlyArray<string | Buffer>,
  opts: { gapMs?: number; timeoutMs?: number; localAddress?: string } = {},
): Promise<SocketOutcome> {
  const url = new URL(base);
  const gapMs = opts.gapMs ?? 0;
  const timeoutMs = opts.timeoutMs ?? 10_000;
  return new Promise((resolve) => {
    const t0 = performance.now();
    const chunks: Buffer[] = [];
    let written = 0;
    let closedBy: SocketOutcome['closedBy'] = 'server';
    let timer: NodeJS.Timeout | undefined;
    const socket = net.connect({
      host: url.hostname.replace(/^\[|\]$/g, ''),
      port: Number(url.port),
      ...(opts.localAddress ? { localAddress: opts.localAddress } : {}),
    });
    const giveUp = setTimeout(() => {
      closedBy = 'client';
      socket.destroy();
    }, timeoutMs);
    const next = () => {
      if (socket.destroyed || written >= parts.length) return;
      socket.write(parts[written++]!);
      timer = setTimeout(next, gapMs);
    };
    socket.on('connect', next);
    socket.on('data', (d: Buffer) => chunks.push(d));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(giveUp);
      clearTimeout(timer);
      const text = Buffer.concat(chunks).toString('utf8');
      const response = parseHttpResponse(text);
      resolve({ ...(response ? { response } : {}), text, closedBy, elapsedMs: performance.now() - t0, written });
    });
  });
}
