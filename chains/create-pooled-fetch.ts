import { type Dispatcher, Pool } from 'undici';
import { ResponseBodyTooLargeError } from 'viem';

export interface PooledFetchOptions {
  /** Largest answer body read, in bytes; a longer one is cut off and rejected with `ResponseBodyTooLargeError`. */
  maxResponseBytes: number;
}

type Target = { pool: Pool; path: string };

/**
 * A `fetch` for a chain's JSON-RPC node on undici's `Pool.request`, with keep-alive connections, for viem's HTTP
 * client (`fetchFn`). Node's own `fetch` builds a WHATWG `Request`, `Response` and web streams for every call, and
 * that was two thirds of a position read's CPU in the API (docs/benchmarks.md, "Yield positions").
 *
 * The body is read before the answer is returned, at most `maxResponseBytes` of it (a node cannot make the process
 * buffer an unbounded answer), so no connection is ever left holding an unread body. The answer is a
 * `Response`-shaped object with what viem's client reads (`ok`, `status`, `statusText`, `headers`, `text()`) and no
 * `body` stream, so the client takes the text. A request honours `init.signal` (viem's timeout aborts it, headers or
 * body). One pool per origin; idle sockets do not keep the process alive.
 */
export function createPooledFetch(options: PooledFetchOptions): typeof fetch {
  const pools = new Map<string, Pool>();
  let lastUrl: string | undefined;
  let lastTarget: Target | undefined;

  function targetOf(href: string): Target {
    if (href === lastUrl && lastTarget) return lastTarget;
    const url = new URL(href);
    let pool = pools.get(url.origin);
    if (!pool) {
      pool = new Pool(url.origin, { pipelining: 1 });
      pools.set(url.origin, pool);
    }
    lastUrl = href;
    lastTarget = { pool, path: `${url.pathname}${url.search}` };
    return lastTarget;
  }

  async function readText(body: Dispatcher.ResponseData['body'], declared: unknown): Promise<string> {
    const max = options.maxResponseBytes;
    if (typeof declared === 'string' && Number(declared) > max) {
      // Destroying the body aborts its request, which the body then reports as an error nobody else listens for.
      body.on('error', () => {});
      body.destroy();
      throw new ResponseBodyTooLargeError({ maxSize: max, size: Number(declared) });
    }
    const chunks: Buffer[] = [];
    let size = 0;
    // Leaving the loop by a throw ends the body (and its connection) the same way.
    for await (const chunk of body as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > max) throw new ResponseBodyTooLargeError({ maxSize: max, size });
      chunks.push(chunk);
    }
    return chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks, size).toString('utf8');
  }

  const pooledFetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const href = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    const { pool, path } = targetOf(href);
    const answer = await pool.request({
      path,
      method: (init?.method ?? 'GET') as 'GET',
      headers: (init?.headers ?? {}) as Record<string, string>,
      body: (init?.body ?? null) as string | null,
      signal: init?.signal ?? undefined,
    });
    const headers = new Headers();
    for (const [name, value] of Object.entries(answer.headers)) {
      if (value === undefined) continue;
      if (Array.isArray(value)) for (const v of value) headers.append(name, v);
      else headers.set(name, value);
    }
    const text = await readText(answer.body, answer.headers['content-length']);
    const response = {
      ok: answer.statusCode >= 200 && answer.statusCode < 300,
      status: answer.statusCode,
      statusText: '',
      headers,
      body: null,
      text: async () => text,
    };
    return response as unknown as Response;
  };
  return pooledFetch as typeof fetch;
}
