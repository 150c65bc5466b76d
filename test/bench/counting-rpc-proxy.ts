/**
 * A JSON-RPC proxy that only counts: it sits on loopback between the service and a node, forwards every request as
 * it came (single calls and batches, one upstream request each) and counts the HTTP requests and the calls in them
 * by method. A benchmark points the service's chains file at it and reads `counts()` before and after a phase.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Pool } from 'undici';

export interface RpcCounts {
  /** HTTP requests (round trips). */
  requests: number;
  /** JSON-RPC calls in them. */
  calls: number;
  byMethod: Record<string, number>;
  /**
   * How long the node took to answer the requests (ms), by the request's first method: a batch is named by its first
   * call (a polling round's receipts batch starts with eth_getBlockByNumber; a fee quote with eth_chainId).
   */
  latency: Record<string, number[]>;
}

export interface CountingRpcProxy {
  url: string;
  /** What has gone through so far. */
  counts(): RpcCounts;
  close(): Promise<void>;
}

/** What went through between two `counts()`. */
export function countsBetween(before: RpcCounts, after: RpcCounts): RpcCounts {
  const byMethod: Record<string, number> = {};
  for (const [m, n] of Object.entries(after.byMethod)) {
    const d = n - (before.byMethod[m] ?? 0);
    if (d > 0) byMethod[m] = d;
  }
  const latency: Record<string, number[]> = {};
  for (const [m, all] of Object.entries(after.latency)) {
    const since = all.slice(before.latency[m]?.length ?? 0);
    if (since.length > 0) latency[m] = since;
  }
  return { requests: after.requests - before.requests, calls: after.calls - before.calls, byMethod, latency };
}

/** The node's answer times by first method: requests, p50 and max (ms). */
export function formatLatency(c: RpcCounts): string {
  return Object.entries(c.latency)
    .sort((a, b) => b[1].length - a[1].length)
    .map(([m, all]) => {
      const s = [...all].sort((a, b) => a - b);
      return `${m} ×${s.length} p50 ${s[Math.floor(s.length / 2)]!.toFixed(0)} max ${s[s.length - 1]!.toFixed(0)} ms`;
    })
    .join(', ');
}

/** One line: totals, then the methods, most called first. */
export function formatCounts(c: RpcCounts): string {
  const methods = Object.entries(c.byMethod)
    .sort((a, b) => b[1] - a[1])
    .map(([m, n]) => `${m} ${n}`)
    .join(', ');
  return `${c.calls} calls in ${c.requests} HTTP requests (${methods || 'none'})`;
}

export async function startCountingRpcProxy(upstream: string): Promise<CountingRpcProxy> {
  const target = new URL(upstream);
  const pool = new Pool(target.origin, { connections: 64, keepAliveTimeout: 30_000 });
  let requests = 0;
  let calls = 0;
  const byMethod = new Map<string, number>();
  const latency = new Map<string, number[]>();
  const count = (method: unknown) => {
    const m = typeof method === 'string' ? method : '(no method)';
    byMethod.set(m, (byMethod.get(m) ?? 0) + 1);
    calls += 1;
  };

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      requests += 1;
      let first = '(unparsable)';
      try {
        const parsed = JSON.parse(body.toString('utf8')) as unknown;
        const all = Array.isArray(parsed) ? parsed : [parsed];
        for (const call of all) count((call as { method?: unknown })?.method);
        first = String((all[0] as { method?: unknown } | undefined)?.method ?? '(empty)');
      } catch {
        count(first);
      }
      const sent = performance.now();
      pool
        .request({
          method: 'POST',
          path: target.pathname,
          headers: { 'content-type': req.headers['content-type'] ?? 'application/json' },
          body,
        })
        .then(async (up) => {
          const answer = Buffer.from(await up.body.arrayBuffer());
          const took = latency.get(first) ?? [];
          took.push(performance.now() - sent);
          latency.set(first, took);
          res.writeHead(up.statusCode, { 'content-type': 'application/json' });
          res.end(answer);
        })
        .catch(() => res.socket?.destroy());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    counts: () => ({
      requests,
      calls,
      byMethod: Object.fromEntries(byMethod),
      latency: Object.fromEntries([...latency].map(([m, all]) => [m, [...all]])),
    }),
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await pool.close();
    },
  };
}
