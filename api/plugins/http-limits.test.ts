import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
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
