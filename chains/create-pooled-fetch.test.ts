import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { createPooledFetch } from './create-pooled-fetch.ts';
import { createRpcBatchPoster } from './evm/create-rpc-batch-poster.ts';
import { ChainRpcError } from './payment-chain.ts';

/**
 * The pooled fetch under viem's HTTP client, through the batch poster, against a real HTTP server on loopback: what
 * the server does is chosen by the request's path.
 */
describe('createPooledFetch', () => {
  let server: http.Server;
  let origin = '';
  let connections = 0;
  const seen: { path: string; authorization: string | undefined; body: string }[] = [];

  before(async () => {
    server = http.createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        seen.push({ path: request.url ?? '', authorization: request.headers.authorization, body });
        const calls = JSON.parse(body) as { id: number; method: string }[];
        const answer = JSON.stringify(calls.map((c) => ({ jsonrpc: '2.0', id: c.id, result: `${c.method}!` })));
        switch (request.url) {
          case '/unavailable':
            response.writeHead(503, { 'content-type': 'text/plain' }).end('Service Unavailable');
            return;
          case '/declared-large':
            response.writeHead(200, { 'content-type': 'application/json', 'content-length': '5000' });
            response.end('x'.repeat(5000));
            return;
          case '/streamed-large':
            response.writeHead(200, { 'content-type': 'application/json' });
            for (let i = 0; i < 10; i++) response.write('x'.repeat(500));
            response.end();
            return;
          case '/silent':
            return;
          case '/stalls-body':
            response.writeHead(200, { 'content-type': 'application/json' });
            response.write('[');
            return;
          default:
            response.writeHead(200, { 'content-type': 'application/json' }).end(answer);
        }
      });
    });
    server.on('connection', () => connections++);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  const poster = (rpcUrl: string, timeoutMs = 2_000) =>
    createRpcBatchPoster({ rpcUrl, timeoutMs, fetchFn: createPooledFetch({ maxResponseBytes: 1_000 }) });

  async function failure(rpcUrl: string, timeoutMs?: number): Promise<string> {
    const error = await poster(rpcUrl, timeoutMs)
      .post([{ method: 'eth_chainId', params: [] }])
      .then(
        () => assert.fail('the batch was answered'),
        (e: unknown) => e,
      );
    assert.ok(error instanceof ChainRpcError && error.transient && error.code === 'RPC_UNAVAILABLE', String(error));
    assert.ok(!error.message.includes('secret'), error.message);
    return error.message;
  }

  it('answers a batch, on one kept-alive connection, with the credentials of the URL as basic authorization', async () => {
    const url = new URL(`${origin}/node/secret?key=1`);
    url.username = 'user';
    url.password = 'pa ss';
    const p = poster(url.href);
    const before = connections;
    for (let i = 0; i < 10; i++) {
      const { answers, requests } = await p.post([
        { method: 'eth_chainId', params: [] },
        { method: 'eth_blockNumber', params: [] },
      ]);
      assert.equal(requests, 1);
      assert.deepEqual(answers, [
        { ok: true, result: 'eth_chainId!' },
        { ok: true, result: 'eth_blockNumber!' },
      ]);
    }
    // undici may open a second connection while the first is finishing its answer, and keeps both.
    assert.ok(connections - before <= 2, `ten sequential batches took ${connections - before} connections`);
    const last = seen.at(-1)!;
    assert.equal(last.path, '/node/secret?key=1');
    assert.equal(last.authorization, `Basic ${Buffer.from('user:pa ss').toString('base64')}`);
    assert.equal((JSON.parse(last.body) as unknown[]).length, 2);
  });

  it('an HTTP error status is the node unavailable, naming the status', async () => {
    assert.match(await failure(`${origin}/unavailable`), /answered HTTP 503/);
  });

  it('an answer over the size limit is refused, declared or streamed, and the pool still serves', async () => {
    assert.match(await failure(`${origin}/declared-large`), /more than the size limit/);
    assert.match(await failure(`${origin}/streamed-large`), /more than the size limit/);
    const { answers } = await poster(`${origin}/`).post([{ method: 'eth_chainId', params: [] }]);
    assert.deepEqual(answers, [{ ok: true, result: 'eth_chainId!' }]);
  });

  it('a node that does not answer in time, before or within its body, is unavailable', async () => {
    assert.match(await failure(`${origin}/silent`, 100), /in time/);
    assert.match(await failure(`${origin}/stalls-body`, 100), /in time/);
  });

  it('a node that cannot be reached is unavailable, naming the system error', async () => {
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    assert.match(await failure(`http://127.0.0.1:${port}/secret`), /could not be reached \(ECONNREFUSED\)/);
  });
});
