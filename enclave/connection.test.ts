import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { openRawSocket, type RawEnclaveSocket } from '../test/helpers/enclave-raw-socket.ts';
import { createFakeIdentity } from '../test/helpers/fake-enclave.ts';
import { type ConnectionLimits, DEFAULT_CONNECTION_LIMITS, serveConnection } from './connection.ts';
import { encodeFrame } from './framing.ts';
import type { EnclaveReply, EnclaveRequest } from './protocol.ts';
import type { RequestHandler } from './request-handler.ts';

const dir = mkdtempSync(join(tmpdir(), 'enclave-connection-'));
const servers: Server[] = [];
const sockets = new Set<Socket>();
after(() => {
  for (const socket of sockets) socket.destroy();
  for (const server of servers) server.close();
  rmSync(dir, { recursive: true, force: true });
});

/**
 * A handler standing in for request-handler.ts: `hello` is answered correctly, `ping` at once, `slow` when the
 * test releases it. It counts what reached it.
 */
function fakeHandler() {
  const identity = createFakeIdentity();
  const waiting: (() => void)[] = [];
  const handled: string[] = [];
  const handler: Pick<RequestHandler, 'handle'> = {
    handle(request: EnclaveRequest): EnclaveReply | Promise<EnclaveReply> {
      handled.push(request.op);
      if (request.op === 'hello') return Promise.resolve(identity.answerHello(request));
      if ((request.op as string) === 'slow') {
        return new Promise((resolve) => waiting.push(() => resolve({ id: request.id, ok: true, result: {} })));
      }
      return { id: request.id, ok: true, result: { status: 'ok' } };
    },
  };
  return {
    handler,
    handled,
    /** Requests other than hello that reached the handler. */
    count: (op: string) => handled.filter((name) => name === op).length,
    release(): number {
      const all = waiting.splice(0);
      for (const resolve of all) resolve();
      return all.length;
    },
  };
}

let serverCount = 0;
/** A socket server serving every connection with serveConnection, `limits` over tight test defaults. */
async function serve(handler: Pick<RequestHandler, 'handle'>, limits: Partial<ConnectionLimits> = {}) {
  const path = join(dir, `c${serverCount++}.sock`);
  const all: ConnectionLimits = {
    ...DEFAULT_CONNECTION_LIMITS,
    helloTimeoutMs: 2000,
    idleTimeoutMs: 5000,
    frameTimeoutMs: 2000,
    ...limits,
  };
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    serveConnection(socket, handler, { limits: all, onSettled: () => undefined });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(path, resolve));
  return path;
}

const frame = (id: number, op: string, params: unknown = {}): Buffer => encodeFrame({ id, op, params });

async function until(condition: () => boolean, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting: ${what}`);
    await sleep(10);
  }
}

/** Opens a connection that has done its handshake, and checks that it answers a ping. */
async function greeted(path: string): Promise<RawEnclaveSocket> {
  const raw = await openRawSocket(path);
  assert.ok(raw.identity);
  return raw;
}

async function pingWorks(path: string): Promise<void> {
  const raw = await greeted(path);
  raw.send(frame(1, 'ping'));
  const [reply] = await raw.waitForReplies(1, 2000);
  assert.deepEqual(reply, { id: 1, ok: true, result: { status: 'ok' } });
  raw.destroy();
}

describe('enclave connection: the handshake comes first', () => {
  test('any other first frame answers HELLO_REQUIRED and closes; the request never reaches the handler', async () => {
    const fake = fakeHandler();
    const path = await serve(fake.handler);
    for (const first of [frame(5, 'generateKey', { walletId: 'w', scheme: 'DKLS' }), encodeFrame('junk')]) {
      const raw = await openRawSocket(path, { hello: false });
      raw.send(Buffer.concat([first, frame(6, 'ping')]));
      const [reply] = await raw.waitForReplies(1);
      assert.equal(reply?.ok === false && reply.error.code, 'HELLO_REQUIRED');
      await raw.waitForClose();
      assert.equal(raw.replies.length, 1, 'nothing after the refusal is answered');
    }
    assert.deepEqual(fake.handled, []);
  });

  test('a second hello on a connection answers BAD_REQUEST', async () => {
    const fake = fakeHandler();
    const path = await serve(fake.handler);
    const raw = await greeted(path);
    raw.send(frame(9, 'hello', { challenge: Buffer.alloc(32).toString('base64') }));
    const [reply] = await raw.waitForReplies(1);
    assert.deepEqual(reply && !reply.ok && [reply.id, reply.error.code], [9, 'BAD_REQUEST']);
    raw.destroy();
  });

  test('a connection that never says hello is closed after helloTimeoutMs', async () => {
    const path = await serve(fakeHandler().handler, { helloTimeoutMs: 200 });
    const raw = await openRawSocket(path, { hello: false });
    await raw.waitForClose(2000);
  });
});

describe('enclave connection limits', () => {
  test('an idle connection is closed after idleTimeoutMs, not while a request is under way', async () => {
    const fake = fakeHandler();
    const path = await serve(fake.handler, { idleTimeoutMs: 300 });
    const idle = await greeted(path);
    const busy = await greeted(path);
    busy.send(frame(1, 'slow'));
    await idle.waitForClose(2000);
    await sleep(400);
    assert.equal(busy.socket.destroyed, false, 'a connection waiting for its answer stays open');
    fake.release();
    await busy.waitForReplies(1);
    await busy.waitForClose(2000);
  });

  test('a header announcing 1 MiB then a trickle is closed after frameTimeoutMs; others are served meanwhile', async () => {
    const path = await serve(fakeHandler().handler, { frameTimeoutMs: 400 });
    const raw = await greeted(path);
    const header = Buffer.alloc(4);
    header.writeUInt32BE(1024 * 1024, 0);
    raw.send(header);
    const trickle = setInterval(() => raw.socket.writable && raw.send('x'), 20);
    try {
      const started = Date.now();
      await pingWorks(path);
      await raw.waitForClose(3000);
      assert.ok(Date.now() - started < 2000);
    } finally {
      clearInterval(trickle);
    }
  });

  test('frames split across slow chunks keep a connection open as long as frames complete', async () => {
    const path = await serve(fakeHandler().handler, { frameTimeoutMs: 300 });
    const raw = await greeted(path);
    const stream = Buffer.concat(Array.from({ length: 40 }, (_, i) => frame(i + 1, 'ping')));
    const piece = Math.ceil(stream.length / 20);
    for (let offset = 0; offset < stream.length; offset += piece) {
      raw.send(stream.subarray(offset, offset + piece));
      await sleep(60);
    }
    await raw.waitForReplies(40);
    assert.equal(raw.socket.destroyed, false);
    raw.destroy();
  });

  test('requests in flight per connection stop at maxInFlight; the rest are read as they settle', async () => {
    const fake = fakeHandler();
    const path = await serve(fake.handler, { maxInFlight: 8 });
    const raw = await greeted(path);
    raw.send(Buffer.concat(Array.from({ length: 100 }, (_, i) => frame(i + 1, 'slow'))));
    await until(() => fake.count('slow') === 8, '8 requests taken on');
    await sleep(200);
    assert.equal(fake.count('slow'), 8, 'no more than maxInFlight reach the handler');
    await pingWorks(path);
    while (fake.count('slow') < 100 || raw.replies.length < 100) {
      fake.release();
      await sleep(5);
    }
    fake.release();
    await raw.waitForReplies(100);
    assert.deepEqual(new Set(raw.replies.map((reply) => reply.id)).size, 100);
    raw.destroy();
  });

  test('bytes of requests in flight stop at maxInFlightBytes', async () => {
    const fake = fakeHandler();
    const path = await serve(fake.handler, { maxInFlightBytes: 500_000 });
    const raw = await greeted(path);
    const padding = 'p'.repeat(200_000);
    raw.send(Buffer.concat(Array.from({ length: 10 }, (_, i) => frame(i + 1, 'slow', { padding }))));
    await until(() => fake.count('slow') === 3, 'three 200 kB requests taken on');
    await sleep(200);
    assert.equal(fake.count('slow'), 3);
    while (raw.replies.length < 10) {
      fake.release();
      await sleep(5);
    }
    raw.destroy();
  });

  test('a peer that does not read its replies stops being read; nothing is lost when it reads again', async () => {
    const fake = fakeHandler();
    const path = await serve(fake.handler, { maxWriteBufferBytes: 64 * 1024 });
    const raw = await greeted(path);
    raw.socket.pause();
    const total = 50_000;
    const requests = Buffer.concat(Array.from({ length: total }, (_, i) => frame(i + 1, 'ping')));
    raw.send(requests);
    await sleep(500);
    const taken = fake.count('ping');
    assert.ok(taken < total / 2, `the server stopped reading (${taken} of ${total} taken)`);
    assert.ok(raw.socket.writableLength > requests.length / 4, 'the requests wait on the sender side');
    await sleep(200);
    assert.equal(fake.count('ping'), taken, 'and it stays stopped');
    await pingWorks(path);
    raw.socket.resume();
    await raw.waitForReplies(total, 10_000);
    assert.equal(raw.replies.length, total);
    raw.destroy();
  });
});
