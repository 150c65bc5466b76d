import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { createFakeIdentity, startFakeEnclave } from '../test/helpers/fake-enclave.ts';
import { createEnclaveClient, EnclaveClientError, memoryPin, probeEnclaveIdentity } from './client.ts';
import { encodeFrame } from './framing.ts';
import { helloMessage } from './identity.ts';
import type { EnclaveReply, EnclaveRequest } from './protocol.ts';

const dir = mkdtempSync(join(tmpdir(), 'enclave-client-'));
after(() => rmSync(dir, { recursive: true, force: true }));
let socketCount = 0;
const nextSocketPath = (): string => join(dir, `s${socketCount++}.sock`);

const pong = (request: EnclaveRequest): EnclaveReply => ({ id: request.id, ok: true, result: { status: 'ok' } });

function isClientError(code: string, httpStatus: number, transient: boolean) {
  return (error: unknown): boolean => {
    assert.ok(error instanceof EnclaveClientError, String(error));
    assert.equal(error.code, code);
    assert.equal(error.httpStatus, httpStatus);
    assert.equal(error.transient, transient);
    return true;
  };
}

describe('enclave client', () => {
  test('rejects at once while never connected', async () => {
    const client = createEnclaveClient({ socketPath: nextSocketPath() });
    assert.equal(client.isConnected(), false);
    await assert.rejects(client.ping(), isClientError('ENCLAVE_UNAVAILABLE', 503, true));
  });

  test('connect() retries until the socket appears, and gives up after its timeout', async () => {
    const socketPath = nextSocketPath();
    const lonely = createEnclaveClient({ socketPath, reconnectDelayMs: 20 });
    await assert.rejects(lonely.connect({ timeoutMs: 150 }), isClientError('ENCLAVE_UNAVAILABLE', 503, true));
    await lonely.close();

    const client = createEnclaveClient({ socketPath, reconnectDelayMs: 20 });
    const connecting = client.connect({ timeoutMs: 3000 });
    await sleep(100);
    const fake = startFakeEnclave(socketPath, { answer: pong });
    await fake.listening;
    await connecting;
    assert.equal(client.isConnected(), true);
    assert.deepEqual(await client.ping(), { status: 'ok' });
    await client.close();
    await fake.close();
  });

  test('routes replies that come back in any order', async () => {
    const socketPath = nextSocketPath();
    const held: [Socket, EnclaveRequest][] = [];
    const fake = startFakeEnclave(socketPath, {
      answer: (request, socket) => {
        held.push([socket, request]);
        if (held.length === 50) {
          for (const [s, r] of held.reverse()) {
            s.write(
              encodeFrame({
                id: r.id,
                ok: true,
                result: { publicKey: (r.params as { walletId: string }).walletId, created: true },
              }),
            );
          }
        }
        return undefined;
      },
    });
    await fake.listening;
    const client = createEnclaveClient({ socketPath });
    await client.connect();
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) => client.generateKey({ walletId: `w${i}`, scheme: 'DKLS' })),
    );
    assert.deepEqual(
      results.map((r) => r.publicKey),
      Array.from({ length: 50 }, (_, i) => `w${i}`),
    );
    await client.close();
    await fake.close();
  });

  test('maps enclave error replies to codes and HTTP statuses', async () => {
    const socketPath = nextSocketPath();
    const expected = [
      ['BAD_REQUEST', 400],
      ['UNKNOWN_OP', 400],
      ['BAD_FRAME', 400],
      ['KEY_EXISTS', 409],
      ['NO_KEY', 404],
      ['SHARE_MISSING', 409],
      ['PAYLOAD_TOO_LARGE', 413],
      ['INVALID_PAYLOAD', 400],
      ['WRONG_WALLET', 400],
      ['ALREADY_MIGRATED', 409],
      ['ALREADY_SIGNED', 409],
      ['HELLO_REQUIRED', 500],
      ['INTERNAL', 500],
    ] as const;
    const codes = expected.map(([code]) => code);
    let next = 0;
    const fake = startFakeEnclave(socketPath, {
      answer: (request) => ({
        id: request.id,
        ok: false,
        error: { code: codes[next++]!, message: 'nope' },
      }),
    });
    await fake.listening;
    const client = createEnclaveClient({ socketPath });
    await client.connect();
    for (const [code, status] of expected) {
      await assert.rejects(client.ping(), isClientError(code, status, false));
    }
    await client.close();
    await fake.close();
  });

  test('a call not answered in time rejects with ENCLAVE_TIMEOUT; a late reply is ignored', async () => {
    const socketPath = nextSocketPath();
    let slow: [Socket, EnclaveRequest] | undefined;
    const fake = startFakeEnclave(socketPath, {
      answer: (request, socket) => {
        if (!slow) {
          slow = [socket, request];
          return undefined;
        }
        return pong(request);
      },
    });
    await fake.listening;
    const client = createEnclaveClient({ socketPath, requestTimeoutMs: 100 });
    await client.connect();
    const started = performance.now();
    await assert.rejects(client.ping(), isClientError('ENCLAVE_TIMEOUT', 503, true));
    assert.ok(performance.now() - started < 1000);
    slow![0].write(encodeFrame(pong(slow![1])));
    assert.deepEqual(await client.ping(), { status: 'ok' });
    await client.close();
    await fake.close();
  });

  test('when the connection drops, calls under way fail at once and the client reconnects by itself', async () => {
    const socketPath = nextSocketPath();
    let answering = false;
    const fake = startFakeEnclave(socketPath, { answer: (request) => (answering ? pong(request) : undefined) });
    await fake.listening;
    const client = createEnclaveClient({ socketPath, requestTimeoutMs: 10_000, reconnectDelayMs: 20 });
    await client.connect();
    const calls = Array.from({ length: 20 }, () => client.ping());
    const settled = Promise.allSettled(calls);
    await sleep(20);
    const dropped = performance.now();
    fake.dropConnections();
    const outcomes = await settled;
    assert.ok(performance.now() - dropped < 500, 'rejected at once, not at the timeout');
    for (const outcome of outcomes) {
      assert.equal(outcome.status, 'rejected');
      if (outcome.status === 'rejected') isClientError('ENCLAVE_UNAVAILABLE', 503, true)(outcome.reason);
    }
    answering = true;
    for (let i = 0; i < 100 && !client.isConnected(); i++) await sleep(20);
    assert.equal(client.isConnected(), true);
    assert.deepEqual(await client.ping(), { status: 'ok' });
    await client.close();
    await fake.close();
  });

  test('close() fails calls under way and stops reconnecting', async () => {
    const socketPath = nextSocketPath();
    const fake = startFakeEnclave(socketPath, { answer: () => undefined });
    await fake.listening;
    const client = createEnclaveClient({ socketPath, reconnectDelayMs: 10 });
    await client.connect();
    const call = assert.rejects(client.ping(), isClientError('ENCLAVE_UNAVAILABLE', 503, true));
    await client.close();
    await call;
    await sleep(50);
    assert.equal(client.isConnected(), false);
    await assert.rejects(client.ping(), isClientError('ENCLAVE_UNAVAILABLE', 503, true));
    await assert.rejects(client.connect(), isClientError('ENCLAVE_UNAVAILABLE', 503, true));
    await fake.close();
  });
});

describe('enclave client: identity', () => {
  /** Log lines a client wrote, and a client on `socketPath` that writes them there. */
  function loggingClient(socketPath: string, options: Partial<Parameters<typeof createEnclaveClient>[0]> = {}) {
    const lines: string[] = [];
    const client = createEnclaveClient({
      socketPath,
      reconnectDelayMs: 10,
      refusedRetryDelayMs: 50,
      handshakeTimeoutMs: 300,
      log: (line) => lines.push(line),
      ...options,
    });
    return { client, lines };
  }

  test('hello goes first and alone; the connection counts once the answer verifies', async () => {
    const socketPath = nextSocketPath();
    const fake = startFakeEnclave(socketPath, { answer: pong });
    await fake.listening;
    const { client, lines } = loggingClient(socketPath);
    await client.connect();
    assert.equal(client.identity()?.fingerprint, fake.identity.fingerprint);
    assert.deepEqual(await client.ping(), { status: 'ok' });
    assert.deepEqual(fake.ops, ['hello', 'ping']);
    assert.deepEqual(lines, []);
    await client.close();
    await fake.close();
  });

  test('a replayed hello answer is refused: only hello is ever sent, calls answer 503, one log line', async () => {
    const socketPath = nextSocketPath();
    const identity = createFakeIdentity();
    let recorded: EnclaveReply | undefined;
    // An impostor that recorded the real enclave's answer to an earlier challenge and plays it back.
    const fake = startFakeEnclave(socketPath, {
      identity,
      answer: pong,
      hello: (request) => {
        recorded ??= identity.answerHello(request);
        return { ...recorded, id: request.id };
      },
    });
    await fake.listening;
    const first = createEnclaveClient({ socketPath, identity: memoryPin() });
    await first.connect();
    await first.close();

    const { client, lines } = loggingClient(socketPath, { identity: memoryPin() });
    await assert.rejects(client.connect({ timeoutMs: 400 }), (error: unknown) => {
      isClientError('ENCLAVE_UNAVAILABLE', 503, true)(error);
      assert.match((error as Error).message, /does not verify for this challenge/);
      return true;
    });
    await assert.rejects(client.ping(), isClientError('ENCLAVE_UNAVAILABLE', 503, true));
    assert.equal(client.isConnected(), false);
    assert.ok(fake.ops.filter((op) => op === 'hello').length >= 3, 'the client kept retrying');
    assert.deepEqual(new Set(fake.ops), new Set(['hello']), 'nothing but hello reached the impostor');
    assert.equal(lines.length, 1, lines.join('\n'));
    assert.match(lines[0]!, /identity handshake failed: the hello signature does not verify/);
    await client.close();
    await fake.close();
  });

  test('a hello signed by another key than the one presented is refused', async () => {
    const socketPath = nextSocketPath();
    const real = createFakeIdentity();
    const impostor = createFakeIdentity();
    const fake = startFakeEnclave(socketPath, {
      answer: pong,
      hello: (request) => {
        const challenge = Buffer.from((request.params as { challenge: string }).challenge, 'base64');
        const nonce = Buffer.alloc(32, 9);
        return {
          id: request.id,
          ok: true,
          result: {
            publicKey: real.publicKey.toString('base64'),
            nonce: nonce.toString('base64'),
            signature: impostor.sign(helloMessage(challenge, nonce, real.publicKey)).toString('base64'),
          },
        };
      },
    });
    await fake.listening;
    const { client, lines } = loggingClient(socketPath);
    await assert.rejects(client.connect({ timeoutMs: 300 }), /does not verify/);
    assert.equal(lines.length, 1);
    assert.deepEqual(new Set(fake.ops), new Set(['hello']));
    await client.close();
    await fake.close();
  });

  test('another key at the socket is refused with both fingerprints, once; the pinned one is served again', async () => {
    const socketPath = nextSocketPath();
    const pinned = createFakeIdentity();
    let fake = startFakeEnclave(socketPath, { identity: pinned, answer: pong });
    await fake.listening;
    const { client, lines } = loggingClient(socketPath);
    await client.connect();
    await fake.close();

    const impostor = startFakeEnclave(socketPath, { answer: pong });
    await impostor.listening;
    await sleep(400);
    await assert.rejects(client.ping(), isClientError('ENCLAVE_UNAVAILABLE', 503, true));
    assert.ok(impostor.ops.length >= 3, 'retried in the background');
    assert.deepEqual(new Set(impostor.ops), new Set(['hello']));
    assert.equal(lines.length, 1, lines.join('\n'));
    assert.ok(lines[0]!.includes(impostor.identity.fingerprint) && lines[0]!.includes(pinned.fingerprint));
    await impostor.close();

    fake = startFakeEnclave(socketPath, { identity: pinned, answer: pong });
    await fake.listening;
    for (let i = 0; i < 100 && !client.isConnected(); i++) await sleep(20);
    assert.deepEqual(await client.ping(), { status: 'ok' });
    assert.equal(lines.length, 2);
    assert.match(lines[1]!, new RegExp(`identity ${pinned.fingerprint} verified .* serving again`));
    await client.close();
    await fake.close();
  });

  test('an impostor with a new key at every attempt, and extra frames after its answer, cannot flood the log', async () => {
    const socketPath = nextSocketPath();
    const fake = startFakeEnclave(socketPath, {
      answer: pong,
      hello: (request, socket) => {
        socket.write(encodeFrame(createFakeIdentity().answerHello(request)));
        return { id: request.id + 1, ok: true, result: { status: 'ok' } };
      },
    });
    await fake.listening;
    const pinned = createFakeIdentity().fingerprint;
    const { client, lines } = loggingClient(socketPath, {
      refusedRetryDelayMs: 5,
      identity: {
        check: (identity) => (identity.fingerprint === pinned ? undefined : `presented ${identity.fingerprint}`),
      },
    });
    client.connect({ timeoutMs: 5000 }).catch(() => undefined);
    for (let i = 0; i < 200 && fake.ops.length < 30; i++) await sleep(20);
    assert.ok(fake.ops.length >= 30);
    assert.equal(client.isConnected(), false);
    assert.equal(lines.length, 9, lines.join('\n'));
    assert.match(lines[8]!, /for 8 different reasons; further ones are not logged/);
    await client.close();
    await fake.close();
  });

  test('an enclave that does not answer hello in time, or answers an error, is refused', async () => {
    const silent = nextSocketPath();
    const quiet = startFakeEnclave(silent, { answer: pong, hello: () => undefined });
    await quiet.listening;
    const first = loggingClient(silent);
    await assert.rejects(first.client.connect({ timeoutMs: 500 }), /did not answer the identity handshake within/);
    assert.deepEqual(new Set(quiet.ops), new Set(['hello']));
    await first.client.close();
    await quiet.close();

    const erring = nextSocketPath();
    const refusing = startFakeEnclave(erring, {
      answer: pong,
      hello: (request) => ({ id: request.id, ok: false, error: { code: 'INTERNAL', message: 'no' } }),
    });
    await refusing.listening;
    const second = loggingClient(erring);
    await assert.rejects(second.client.connect({ timeoutMs: 300 }), /answered the identity handshake with INTERNAL/);
    await second.client.close();
    await refusing.close();
  });

  test('a socket that fails its checks is never connected to', async () => {
    const socketPath = nextSocketPath();
    const fake = startFakeEnclave(socketPath, { answer: pong });
    await fake.listening;
    const me = process.getuid!();
    const { client, lines } = loggingClient(socketPath, { owners: { socket: [me + 1], directories: [0, me] } });
    await assert.rejects(client.connect({ timeoutMs: 300 }), /socket check failed: .* owned by uid/);
    assert.deepEqual(fake.ops, [], 'not even hello was sent');
    assert.equal(lines.length, 1);
    await client.close();
    await fake.close();
  });

  test("a quiet connection sends keepalive pings, so the enclave's idle timeout never closes it", async () => {
    const socketPath = nextSocketPath();
    const fake = startFakeEnclave(socketPath, { answer: pong });
    await fake.listening;
    const { client } = loggingClient(socketPath, { keepaliveMs: 50 });
    await client.connect();
    await sleep(300);
    assert.equal(fake.ops[0], 'hello');
    assert.equal(fake.ops.filter((op) => op === 'hello').length, 1, 'one connection all along');
    assert.ok(fake.ops.filter((op) => op === 'ping').length >= 2, fake.ops.join(','));
    await client.close();
    await fake.close();
  });

  test('probeEnclaveIdentity answers the key the enclave proves', async () => {
    const socketPath = nextSocketPath();
    const fake = startFakeEnclave(socketPath, { answer: pong });
    await fake.listening;
    const identity = await probeEnclaveIdentity({ socketPath });
    assert.equal(identity.fingerprint, fake.identity.fingerprint);
    await fake.close();
  });
});
