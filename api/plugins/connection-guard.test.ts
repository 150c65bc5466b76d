import assert from 'node:assert/strict';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { guardConnections } from './connection-guard.ts';

// A real HTTP server on loopback whose answers the test releases: "being answered" is a real state here.

const CAP = 5;
let server: http.Server;
let port: number;
let release: () => void = () => undefined;
let held = new Promise<void>((r) => {
  release = r;
});
const counts = { evicted: 0, dropped: 0, connections: 0, requests: 0 };

/** Waits for `pred` (a machine under load may take a while; the test never relies on a fixed delay). */
async function until(pred: () => boolean, what: string): Promise<void> {
  for (const t0 = Date.now(); !pred(); await sleep(5)) {
    if (Date.now() - t0 > 10_000) throw new Error(`timed out waiting for ${what}`);
  }
}

before(async () => {
  server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.url === '/hold') void held.then(() => res.end('held'));
      else res.end('ok');
    });
  });
  // Registered before the guard's own listeners, so a count here means the guard has seen it too once
  // the event loop turns.
  server.on('connection', () => {
    counts.connections += 1;
  });
  server.on('request', () => {
    counts.requests += 1;
  });
  guardConnections(server, CAP, {
    onEvicted: () => {
      counts.evicted += 1;
    },
    onDropped: () => {
      counts.dropped += 1;
    },
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
});
after(async () => {
  release();
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

interface Client {
  socket: net.Socket;
  closed: boolean;
  data: string;
}

/**
 * Opens a connection, writes `first`, and waits until the server has seen the connection and, per
 * `wait`, the request head or the whole answer.
 */
async function connect(first?: string, wait: 'connection' | 'request' | 'answer' = 'connection'): Promise<Client> {
  const seen = { connections: counts.connections, requests: counts.requests };
  const c: Client = { socket: net.connect(port, '127.0.0.1'), closed: false, data: '' };
  c.socket.on('data', (d) => {
    c.data += String(d);
  });
  c.socket.on('error', () => undefined);
  c.socket.on('close', () => {
    c.closed = true;
  });
  await new Promise((r) => c.socket.once('connect', r));
  await until(() => counts.connections > seen.connections, 'the server to see the connection');
  if (first) c.socket.write(first);
  if (wait === 'request') await until(() => counts.requests > seen.requests, 'the request head');
  if (wait === 'answer') await until(() => /\r\n\r\n/.test(c.data) || c.closed, 'an answer');
  await sleep(1); // a turn of the event loop: the guard's listeners ran
  return c;
}

const get = (path: string) => `GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`;

describe('guardConnections', () => {
  test('at the cap a newcomer is admitted by closing the connection that has gone longest without progress', async () => {
    const silent = await connect();
    const trickling = await connect('GET /ok HTTP/1.1\r\nHost: x\r\nX-Slow: ');
    const bodyTrickling = await connect('POST /ok HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{', 'request');
    const idle = await connect(get('/ok'), 'answer');
    assert.match(idle.data, /200 OK/);
    const fifth = await connect();
    // Full. The next one closes the oldest without progress, the silent one.
    const sixth = await connect(get('/ok'), 'answer');
    assert.match(sixth.data, /200 OK/, 'the newcomer is served');
    await until(() => silent.closed, 'the silent connection to close');
    assert.deepEqual(
      [silent, trickling, bodyTrickling, idle, fifth].map((c) => c.closed),
      [true, false, false, false, false],
    );
    // Then the head that is still trickling, then the body still trickling, then the idle keep-alive one.
    const order: boolean[][] = [];
    for (const [i, victim] of [trickling, bodyTrickling, idle].entries()) {
      await connect();
      await until(() => victim.closed, `victim ${i} to close`);
      order.push([trickling, bodyTrickling, idle].map((c) => c.closed));
    }
    assert.deepEqual(order, [
      [true, false, false],
      [true, true, false],
      [true, true, true],
    ]);
    assert.equal(counts.evicted, 4);
    for (const c of [fifth, sixth]) c.socket.destroy();
    await until(() => fifth.closed && sixth.closed, 'the clean-up');
  });

  test('a connection whose request is being answered is never closed; with only those, the newcomer is', async () => {
    const server0 = { evicted: counts.evicted, dropped: counts.dropped };
    // Leftovers of the previous test go first.
    const busy: Client[] = [];
    for (let i = 0; i < CAP; i++) busy.push(await connect(get('/hold'), 'request'));
    const newcomer = await connect();
    await until(() => newcomer.closed, 'the newcomer to be closed');
    assert.equal(newcomer.data, '');
    assert.deepEqual(
      busy.map((c) => c.closed),
      busy.map(() => false),
    );
    assert.equal(counts.dropped - server0.dropped, 1);
    release();
    await until(() => busy.every((c) => /held/.test(c.data)), 'the held answers');
    assert.deepEqual(
      busy.map((c) => /held/.test(c.data)),
      busy.map(() => true),
      'each held request got its answer',
    );
    // Answered, they are idle keep-alive connections again: a newcomer gets in.
    const later = await connect(get('/ok'), 'answer');
    assert.match(later.data, /200 OK/);
    held = new Promise<void>((r) => {
      release = r;
    });
  });
});

test('startClosing: connections without a request under way close now, a busy one after its answer, newcomers at once', async () => {
  let answer: () => void = () => undefined;
  const answered = new Promise<void>((r) => {
    answer = r;
  });
  let requests = 0;
  const own = http.createServer((req, res) => {
    requests += 1;
    req.resume();
    req.on('end', () => {
      if (req.url === '/hold') void answered.then(() => res.end('held'));
      else res.end('ok');
    });
  });
  const guard = guardConnections(own, 10);
  await new Promise<void>((r) => own.listen(0, '127.0.0.1', r));
  const ownPort = (own.address() as AddressInfo).port;
  const open = async (first?: string) => {
    const c: Client = { socket: net.connect(ownPort, '127.0.0.1'), closed: false, data: '' };
    c.socket.on('data', (d) => {
      c.data += String(d);
    });
    c.socket.on('error', () => undefined);
    c.socket.on('close', () => {
      c.closed = true;
    });
    await new Promise((r) => c.socket.once('connect', r));
    if (first) c.socket.write(first);
    return c;
  };
  try {
    // One that never sends a request (a pool connecting ahead of need), one kept alive after its answer, one busy.
    const silent = await open();
    const keptAlive = await open(get('/ok'));
    await until(() => /200 OK/.test(keptAlive.data), 'the first answer');
    const busy = await open(get('/hold'));
    await until(() => requests === 2 && guard.open === 3, 'the held request and every connection seen');
    guard.startClosing();
    await until(() => silent.closed && keptAlive.closed, 'the connections without a request to close');
    assert.equal(busy.closed, false, 'the request under way is not cut');
    const newcomer = await open(get('/ok'));
    await until(() => newcomer.closed, 'the newcomer to be closed');
    assert.equal(newcomer.data, '');
    answer();
    await until(() => busy.closed, 'the busy connection to close after its answer');
    assert.match(busy.data, /held$/);
  } finally {
    own.closeAllConnections();
    await new Promise((r) => own.close(r));
  }
});
