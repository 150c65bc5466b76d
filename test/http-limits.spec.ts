import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { envelopeProblems, type RawResponse } from './helpers/bad-input-http.ts';
import { type SocketOutcome, socketExchange } from './helpers/raw-socket.ts';
import { type Partner, startTestService, type TestService } from './helpers/service.ts';

// The listeners' edges against slow and hostile clients: Node's timeouts set and enforced, a header size
// limit, a connection cap, and every answer Node's HTTP layer gives on its own in the service's envelope.

const HEADERS_MS = 3000;
const REQUEST_MS = 4000;
const KEEP_ALIVE_MS = 1000;
const CAP = 16;
/** Longer than any timeout here plus Node's checking period: a connection still open then was never closed. */
const GIVE_UP_MS = 12_000;

let svc: TestService;
let partner: Partner;

before(async () => {
  svc = await startTestService({
    HTTP_HEADERS_TIMEOUT_MS: String(HEADERS_MS),
    HTTP_REQUEST_TIMEOUT_MS: String(REQUEST_MS),
    HTTP_KEEP_ALIVE_TIMEOUT_MS: String(KEEP_ALIVE_MS),
    HTTP_MAX_CONNECTIONS: String(CAP),
  });
  partner = await svc.newPartner();
});
after(async () => {
  await svc?.stop();
});

/** The server answered `status`/`code` in the envelope, then closed the connection itself. */
function assertRefusedAndClosed(name: string, out: SocketOutcome, status: number, code: string) {
  assert.equal(out.closedBy, 'server', `${name}: the connection was still open after ${GIVE_UP_MS} ms`);
  assert.ok(out.response, `${name}: no HTTP answer, got ${JSON.stringify(out.text.slice(0, 200))}`);
  const problems = envelopeProblems(out.response as RawResponse, { status, code });
  assert.deepEqual(problems, [], `${name}: ${out.text.slice(0, 300)}`);
  assert.equal(out.response.headers['connection'], 'close', name);
}

const chars = (s: string) => [...s];

describe('slow clients', () => {
  test('a silent connection, a trickled head and a trickled body each get a 408 envelope and are closed; others are served meanwhile', async () => {
    const body = JSON.stringify({ type: 'EVM', userIdentifier: 'trickle', userIdentifierType: 'CUSTOM_ID' });
    const before = await svc.v1(partner.secret, 'GET', '/wallets?limit=100');
    const slow = Promise.all([
      socketExchange(svc.url, [], { timeoutMs: GIVE_UP_MS }),
      socketExchange(svc.url, ['GET /healthz HTTP/1.1\r\n', ...chars(`Host: x\r\nX-Slow: ${'a'.repeat(200)}`)], {
        gapMs: 100,
        timeoutMs: GIVE_UP_MS,
      }),
      socketExchange(
        svc.url,
        [
          `POST /v1/wallets HTTP/1.1\r\nHost: x\r\nX-API-Key: ${partner.secret}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
          ...chars(body),
        ],
        { gapMs: 200, timeoutMs: GIVE_UP_MS },
      ),
      // The admin listener has the same limits.
      socketExchange(svc.adminUrl, [], { timeoutMs: GIVE_UP_MS }),
    ]);
    // While they wait, other callers are answered at once.
    await sleep(300);
    for (let i = 0; i < 5; i++) {
      assert.equal((await svc.v1(partner.secret, 'GET', '/wallets')).status, 200);
      assert.equal((await fetch(`${svc.adminUrl}/healthz`)).status, 200);
    }
    const [silent, head, trickledBody, adminSilent] = await slow;
    assertRefusedAndClosed('silent connection', silent, 408, 'REQUEST_TIMEOUT');
    assertRefusedAndClosed('trickled head', head, 408, 'REQUEST_TIMEOUT');
    assertRefusedAndClosed('trickled body', trickledBody, 408, 'REQUEST_TIMEOUT');
    assertRefusedAndClosed('silent connection to the admin listener', adminSilent, 408, 'REQUEST_TIMEOUT');
    // Closed by the timeouts, not by anything else: not before them.
    assert.ok(silent.elapsedMs >= HEADERS_MS - 100, `silent closed after ${silent.elapsedMs} ms`);
    assert.ok(trickledBody.elapsedMs >= REQUEST_MS - 100, `trickled body closed after ${trickledBody.elapsedMs} ms`);
    assert.ok(trickledBody.written < body.length, 'the body was cut before it was complete');
    // The trickled create created nothing.
    assert.deepEqual((await svc.v1(partner.secret, 'GET', '/wallets?limit=100')).body, before.body);
  });

  test('an idle keep-alive connection is closed after the keep-alive timeout, without a second answer', async () => {
    const out = await socketExchange(svc.url, ['GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'], { timeoutMs: GIVE_UP_MS });
    assert.equal(out.closedBy, 'server');
    assert.equal(out.response?.status, 200);
    assert.equal(out.text.match(/HTTP\/1\.1 /g)?.length, 1, out.text);
    assert.ok(out.elapsedMs >= KEEP_ALIVE_MS - 100, `closed after ${out.elapsedMs} ms`);
  });
});

describe("what Node's HTTP layer refuses is answered in the envelope", () => {
  const head = (lines: string[]) => `${lines.join('\r\n')}\r\n\r\n`;
  /** A body route each listener reads the body of, with its credentials: what the chunk parser sees. */
  const bodyRoute = (admin: boolean) =>
    admin
      ? ['POST /admin/v1/projects HTTP/1.1', `Authorization: Bearer ${svc.adminToken}`]
      : ['POST /v1/wallets HTTP/1.1', `X-API-Key: ${partner.secret}`];
  const cases: Array<[string, string | ((admin: boolean) => string), number, string]> = [
    [
      'headers over 16 KiB',
      head(['GET /healthz HTTP/1.1', 'Host: x', `X-Big: ${'a'.repeat(17 * 1024)}`]),
      431,
      'HEADERS_TOO_LARGE',
    ],
    [
      'many headers over 16 KiB together',
      head([
        'GET /healthz HTTP/1.1',
        'Host: x',
        ...Array.from({ length: 40 }, (_, i) => `X-H${i}: ${'b'.repeat(500)}`),
      ]),
      431,
      'HEADERS_TOO_LARGE',
    ],
    ['an invalid method', head(['GE@T /healthz HTTP/1.1', 'Host: x']), 400, 'INVALID_REQUEST'],
    ['an unknown HTTP version', head(['GET /healthz HTTP/7.1', 'Host: x']), 400, 'INVALID_REQUEST'],
    ['an invalid header name', head(['GET /healthz HTTP/1.1', 'Host: x', 'Bad Header: 1']), 400, 'INVALID_REQUEST'],
    [
      'Content-Length with Transfer-Encoding',
      `${head(['POST /v1/wallets HTTP/1.1', 'Host: x', 'Content-Length: 5', 'Transfer-Encoding: chunked'])}0\r\n\r\n`,
      400,
      'INVALID_REQUEST',
    ],
    ['an HTTP/2 preface', 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 400, 'INVALID_REQUEST'],
    ['HTTP/1.1 without Host', head(['GET /healthz HTTP/1.1']), 400, 'INVALID_REQUEST'],
    [
      'an Expect other than 100-continue',
      `${head(['POST /v1/wallets HTTP/1.1', 'Host: x', 'Expect: the-unexpected', 'Content-Type: application/json', 'Content-Length: 2'])}{}`,
      417,
      'EXPECTATION_FAILED',
    ],
    ['CONNECT', head(['CONNECT example.com:443 HTTP/1.1', 'Host: example.com:443']), 405, 'METHOD_NOT_ALLOWED'],
    [
      'chunk extensions over the limit',
      (admin) =>
        `${head([...bodyRoute(admin), 'Host: x', 'Content-Type: application/json', 'Transfer-Encoding: chunked'])}2;${'e'.repeat(20_000)}\r\n{}\r\n0\r\n\r\n`,
      413,
      'PAYLOAD_TOO_LARGE',
    ],
  ];
  for (const [name, bytes, status, code] of cases) {
    test(`${name}: ${status} ${code}, on both listeners`, async () => {
      for (const base of [svc.url, svc.adminUrl]) {
        const sent = typeof bytes === 'string' ? bytes : bytes(base === svc.adminUrl);
        const out = await socketExchange(base, [sent], { timeoutMs: GIVE_UP_MS });
        assert.ok(out.response, `${name} on ${base}: no HTTP answer, got ${JSON.stringify(out.text.slice(0, 200))}`);
        const problems = envelopeProblems(out.response, { status, code });
        assert.deepEqual(problems, [], `${name} on ${base}: ${out.text.slice(0, 300)}`);
        // Sixteen in a row: four could be in the random request id (hex), which failed about one run in a hundred.
        assert.ok(
          !out.text.includes('a'.repeat(16)) && !out.text.includes('e'.repeat(16)),
          `the sent bytes are not echoed: ${out.text.slice(0, 300)}`,
        );
      }
    });
  }

  test('a head just under the limit is served', async () => {
    const out = await socketExchange(
      svc.url,
      [`GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Big: ${'a'.repeat(15 * 1024)}\r\n\r\n`],
      { timeoutMs: GIVE_UP_MS },
    );
    assert.equal(out.response?.status, 200, out.text.slice(0, 200));
  });
});

describe('connection cap', () => {
  test(`at ${CAP} open connections a newcomer gets in by closing the one longest without progress; a real request is served`, async () => {
    const sockets: Array<{ socket: net.Socket; closed: boolean; data: string }> = [];
    const port = Number(new URL(svc.url).port);
    const open = async () => {
      const entry = { socket: net.connect(port, '127.0.0.1'), closed: false, data: '' };
      entry.socket.on('data', (d) => {
        entry.data += String(d);
      });
      entry.socket.on('error', () => undefined);
      entry.socket.on('close', () => {
        entry.closed = true;
      });
      await new Promise((r) => entry.socket.once('connect', r));
      sockets.push(entry);
    };
    try {
      const t0 = Date.now();
      for (let i = 0; i < CAP + 8; i++) await open();
      while (sockets.filter((s) => s.closed).length < 8 && Date.now() - t0 < HEADERS_MS - 500) await sleep(10);
      // Well inside the headers timeout: only the cap can have closed any of them.
      assert.ok(Date.now() - t0 < HEADERS_MS - 500, 'the machine is too slow for this test');
      // The eight oldest of ours went (after any idle connection the test's own fetch pool had left).
      assert.deepEqual(
        sockets.map((s) => s.closed),
        sockets.map((_, i) => i < 8),
      );
      assert.deepEqual(
        sockets.filter((s) => s.closed).map((s) => s.data),
        Array.from({ length: 8 }, () => ''),
        'a closed connection gets no bytes',
      );
      // The listener is full of silent connections: a caller with a real request still gets in and is served.
      assert.equal((await svc.v1(partner.secret, 'GET', '/wallets')).status, 200);
      assert.equal(sockets[8]!.closed, true, 'by closing the oldest silent one');
      // The admin listener has its own cap: an operator still gets in while the public one is full.
      const metrics = await (await fetch(`${svc.adminUrl}/metrics`)).text();
      const evicted = Number(/http_connections_evicted_total\{listener="public"\} (\d+)/.exec(metrics)?.[1] ?? 0);
      assert.ok(evicted >= 9, metrics.slice(0, 200));
    } finally {
      for (const s of sockets) s.socket.destroy();
    }
  });
});
