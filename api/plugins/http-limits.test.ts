import assert from 'node:assert/strict';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { test } from 'node:test';
import Fastify from 'fastify';
import { envelopeProblems, rawRequest } from '../../test/helpers/bad-input-http.ts';
import { errorsPlugin } from './errors.ts';
import { connectionCap, describeClientError, httpLimitsPlugin, RESERVED_FILES } from './http-limits.ts';
import { requestIdPlugin } from './request-id.ts';

test('the connection cap is HTTP_MAX_CONNECTIONS, lowered to leave RESERVED_FILES under the open-file limit', () => {
  assert.equal(connectionCap(10_000, 65_536), 10_000);
  assert.equal(connectionCap(10_000, 4096), 4096 - RESERVED_FILES);
  assert.equal(connectionCap(10_000, 1024), 1);
  assert.equal(connectionCap(10_000, undefined), 10_000);
});

test("client errors: Node's codes become the service's, the peer's own bytes never appear, a reset gets no answer", () => {
  const limits = { headersTimeoutMs: 10_000, requestTimeoutMs: 30_000 };
  const cases: Array<[string, number | undefined, string | undefined]> = [
    ['ERR_HTTP_REQUEST_TIMEOUT', 408, 'REQUEST_TIMEOUT'],
    ['HPE_HEADER_OVERFLOW', 431, 'HEADERS_TOO_LARGE'],
    ['HPE_CHUNK_EXTENSIONS_OVERFLOW', 413, 'PAYLOAD_TOO_LARGE'],
    ['HPE_INVALID_METHOD', 400, 'INVALID_REQUEST'],
    ['ECONNRESET', undefined, undefined],
    ['EPIPE', undefined, undefined],
  ];
  for (const [code, status, ours] of cases) {
    const err = Object.assign(new Error('Parse Error: <script>secret-bytes'), {
      code,
      reason: 'Invalid method encountered',
    });
    const answer = describeClientError(err, limits);
    assert.equal(answer?.status, status, code);
    assert.equal(answer?.code, ours, code);
    if (answer) assert.ok(!answer.message.includes('secret-bytes'), code);
  }
  assert.match(
    describeClientError(Object.assign(new Error('x'), { code: 'ERR_HTTP_REQUEST_TIMEOUT' }), limits)!.message,
    /10 s.*30 s/,
  );
});

test('a request that arrives while the app closes gets a 503 in the envelope with Retry-After', async () => {
  const app = Fastify({ logger: false, return503OnClosing: false });
  await app.register(errorsPlugin);
  await app.register(requestIdPlugin);
  await app.register(httpLimitsPlugin, { maxConnections: 10 });
  app.get('/healthz', async () => ({ status: 'ok' }));
  await app.ready();
  // The app's routing behind a server of the test's own, which stays open while the app closes.
  const server = http.createServer((req, res) => app.routing(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    assert.equal((await rawRequest(base, { method: 'GET', path: '/healthz', headers: { host: 'x' } })).status, 200);
    await app.close();
    const res = await rawRequest(base, { method: 'GET', path: '/healthz', headers: { host: 'x' } });
    // envelopeProblems counts any 5xx as a problem; a 503 is the answer wanted here.
    assert.deepEqual(
      envelopeProblems(res, { status: 503, code: 'SERVICE_UNAVAILABLE' }).filter((p) => !p.startsWith('server error')),
      [],
    );
    assert.equal(res.status, 503);
    assert.equal(res.headers['retry-after'], '1');
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
});

test('the close completes with connections open: one busy (closed after its answer) and one that never sent a request', async () => {
  const app = Fastify({ logger: false, return503OnClosing: false });
  await app.register(errorsPlugin);
  await app.register(requestIdPlugin);
  await app.register(httpLimitsPlugin, { maxConnections: 10 });
  let answer: () => void = () => undefined;
  const answered = new Promise<void>((resolve) => {
    answer = resolve;
  });
  let started: () => void = () => undefined;
  const inFlight = new Promise<void>((resolve) => {
    started = resolve;
  });
  app.get('/slow', async () => {
    started();
    await answered;
    return { status: 'ok' };
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as AddressInfo;
  // A client that keeps its connections (as partners' HTTP pools and load balancers do).
  const agent = new http.Agent({ keepAlive: true });
  let silent: net.Socket | undefined;
  try {
    const response = new Promise<http.IncomingMessage>((resolve, reject) => {
      http.get({ host: '127.0.0.1', port, path: '/slow', agent }, resolve).on('error', reject);
    });
    await inFlight;
    // A connection that sends nothing (a client's pool connecting ahead of need): Node's close() never ends it.
    silent = net.connect(port, '127.0.0.1');
    silent.on('error', () => undefined);
    await new Promise((r) => silent!.once('connect', r));
    const silentClosed = new Promise((r) => silent!.once('close', r));
    let closed = false;
    const closing = app.close().then(() => {
      closed = true;
    });
    // The close has begun (the port no longer accepts) while the request is still under way.
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(closed, false, 'the close waits for the request under way');
    answer();
    const res = await response;
    res.resume();
    assert.equal(res.statusCode, 200, 'the request under way is answered');
    assert.equal(res.headers.connection, 'close');
    // Else they would stay open, and the close pending, until HTTP_KEEP_ALIVE_TIMEOUT_MS and HTTP_IDLE_TIMEOUT_MS.
    await Promise.race([
      Promise.all([closing, silentClosed]),
      new Promise((_, reject) =>
        setTimeout(() => reject(new Error('the close waited on an open connection')), 2_000).unref(),
      ),
    ]);
    assert.equal(closed, true);
  } finally {
    agent.destroy();
    silent?.destroy();
    // A failed run must not leave the close pending on them.
    app.server.closeAllConnections();
  }
});
