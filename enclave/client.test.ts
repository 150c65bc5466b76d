import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { startFakeEnclave } from '../test/helpers/fake-enclave.ts';
import { createEnclaveClient, EnclaveClientError } from './client.ts';
import { encodeFrame } from './framing.ts';
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
