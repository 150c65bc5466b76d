import http from 'node:http';

/** One request sent byte for byte: the path is not normalized (`..`, `%00` stay as written). */
export interface RawRequest {
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** Send the body with `Transfer-Encoding: chunked` instead of a `Content-Length`. */
  chunked?: boolean;
  /** Connect from this local address (a loopback alias such as 127.0.0.2: another client address). */
  localAddress?: string;
}

export interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  /** The parsed JSON body, or undefined when the body is not JSON. */
  body: unknown;
}

/**
 * Sends one HTTP/1.1 request on a fresh connection (no keep-alive pool, so a server that closes the
 * socket after an error cannot break the next request). `base` is `http://host:port`, IPv6 hosts in
 * brackets.
 */
export function rawRequest(base: string, req: RawRequest, timeoutMs = 10_000): Promise<RawResponse> {
  const url = new URL(base);
  const headers: Record<string, string> = { ...(req.headers ?? {}) };
  if (req.body !== undefined && !req.chunked && headers['content-length'] === undefined) {
    headers['content-length'] = String(Buffer.byteLength(req.body));
  }
  if (req.chunked) headers['transfer-encoding'] = 'chunked';
  return new Promise((resolve, reject) => {
    const r = http.request(
      {
        host: url.hostname.replace(/^\[|\]$/g, ''),
        port: Number(url.port),
        method: req.method,
        path: req.path,
        headers,
        agent: false,
        timeout: timeoutMs,
        ...(req.localAddress ? { localAddress: req.localAddress } : {}),
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (d: Buffer) => chunks.push(d));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let body: unknown;
          try {
            body = text ? JSON.parse(text) : undefined;
          } catch {
            body = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, body });
        });
        res.on('error', reject);
      },
    );
    r.on('timeout', () => r.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    r.on('error', reject);
    if (req.body !== undefined) r.write(req.body);
    r.end();
  });
}

/** What a caller is promised on every refusal: the checks that `envelopeProblems` runs. */
export interface EnvelopeExpectation {
  /** Exact status(es); any 4xx when omitted. */
  status?: number | readonly number[];
  /** Exact `code`, when the answer is certain. */
  code?: string;
  /** The `X-Request-Id` that was sent and must come back (header and body). */
  requestId?: string;
  /** Strings that must not appear anywhere in the answer (secrets that were submitted). */
  forbidden?: readonly string[];
}

/**
 * Every way an error answer breaks the envelope promise: not a 4xx, not JSON, no string `code` or
 * `message`, no `x-request-id` header, `requestId` missing or not the header's value, a submitted secret
 * echoed back. An empty list means the answer is a proper refusal.
 */
export function envelopeProblems(res: RawResponse, expect: EnvelopeExpectation = {}): string[] {
  const problems: string[] = [];
  const snippet = res.text.length > 160 ? `${res.text.slice(0, 160)}…` : res.text;
  if (res.status >= 500) problems.push(`server error ${res.status}: ${snippet}`);
  else if (res.status < 400) problems.push(`accepted with ${res.status}: ${snippet}`);
  const wanted = expect.status === undefined ? undefined : ([] as number[]).concat(expect.status);
  if (wanted && res.status >= 400 && res.status < 500 && !wanted.includes(res.status)) {
    problems.push(`status ${res.status}, expected ${wanted.join(' or ')}: ${snippet}`);
  }
  const b = res.body as Record<string, unknown> | undefined;
  if (typeof b !== 'object' || b === null || Array.isArray(b)) {
    problems.push(`body is not a JSON object: ${JSON.stringify(snippet)}`);
  } else {
    if (typeof b['code'] !== 'string' || b['code'] === '') problems.push(`no string code in ${snippet}`);
    if (typeof b['message'] !== 'string' || b['message'] === '') problems.push(`no string message in ${snippet}`);
    if (expect.code !== undefined && b['code'] !== expect.code) {
      problems.push(`code ${String(b['code'])}, expected ${expect.code}`);
    }
    if (typeof b['requestId'] !== 'string') problems.push(`no requestId in ${snippet}`);
    else if (b['requestId'] !== res.headers['x-request-id']) {
      problems.push(`body requestId ${b['requestId']} differs from header ${String(res.headers['x-request-id'])}`);
    }
  }
  const rid = res.headers['x-request-id'];
  if (typeof rid !== 'string' || rid === '') problems.push('no x-request-id header');
  else if (expect.requestId !== undefined && rid !== expect.requestId) {
    problems.push(`x-request-id ${rid}, expected the sent ${expect.requestId}`);
  }
  if (!String(res.headers['content-type'] ?? '').startsWith('application/json')) {
    problems.push(`content-type ${String(res.headers['content-type'])} is not JSON`);
  }
  for (const secret of expect.forbidden ?? []) {
    if (res.text.includes(secret) || JSON.stringify(res.headers).includes(secret)) {
      problems.push('a submitted secret is echoed in the answer');
    }
  }
  return problems;
}
