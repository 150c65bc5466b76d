import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { openRawSocket } from '../test/helpers/enclave-raw-socket.ts';
import { createEnclaveClient, type EnclaveClient, EnclaveClientError } from './client.ts';
import { masterKeyId } from './envelope.ts';
import { encodeFrame } from './framing.ts';
import { MasterKeyError } from './master-key.ts';
import { MAX_FRAME_BYTES } from './protocol.ts';
import { createRequestHandler } from './request-handler.ts';
import { type RunningEnclave, startEnclave } from './server.ts';

const dataDir = mkdtempSync(join(tmpdir(), 'enclave-server-'));
const masterKey = new Uint8Array(randomBytes(32));
let enclave: RunningEnclave;
let client: EnclaveClient;

before(async () => {
  enclave = await startEnclave({ dataDir, masterKey, log: () => undefined });
  client = createEnclaveClient({ socketPath: enclave.socketPath });
  await client.connect();
});
after(async () => {
  await client?.close();
  await enclave?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

function rejectsWith(code: string) {
  return (error: unknown): boolean => {
    assert.ok(error instanceof EnclaveClientError, String(error));
    assert.equal(error.code, code, error.message);
    return true;
  };
}

describe('enclave server (in-process)', () => {
  test('files: socket 0600, enclave directory 0700', () => {
    assert.equal(statSync(enclave.socketPath).mode & 0o777, 0o600);
    assert.equal(statSync(join(dataDir, 'enclave')).mode & 0o777, 0o700);
    assert.equal(statSync(join(dataDir, 'enclave', 'keys.db')).mode & 0o777, 0o600);
  });

  test('concurrent requests for one wallet id: one key wins, all answer it', async () => {
    const results = await Promise.all(
      Array.from({ length: 10 }, () => client.generateKey({ walletId: 'same-id', scheme: 'DKLS' })),
    );
    assert.equal(new Set(results.map((r) => r.publicKey)).size, 1);
    assert.equal(results.filter((r) => r.created).length, 1);
    const again = await client.generateKey({ walletId: 'same-id', scheme: 'DKLS' });
    assert.deepEqual(again, { publicKey: results[0]!.publicKey, created: false });
  });

  test('concurrent requests for one wallet id with two schemes: the loser gets KEY_EXISTS', async () => {
    const [first, second] = await Promise.allSettled([
      client.generateKey({ walletId: 'mixed', scheme: 'ED25519' }),
      client.generateKey({ walletId: 'mixed', scheme: 'DKLS' }),
    ]);
    assert.equal(first.status, 'fulfilled');
    assert.equal(second.status, 'rejected');
    if (second.status === 'rejected') rejectsWith('KEY_EXISTS')(second.reason);
    await assert.rejects(client.generateKey({ walletId: 'mixed', scheme: 'DKLS' }), (error: unknown) => {
      rejectsWith('KEY_EXISTS')(error);
      assert.equal((error as EnclaveClientError).httpStatus, 409);
      return true;
    });
  });

  test('bad generateKey params answer BAD_REQUEST (400)', async () => {
    const bad: unknown[] = [
      {},
      { walletId: '', scheme: 'DKLS' },
      { walletId: 'x'.repeat(129), scheme: 'DKLS' },
      { walletId: 42, scheme: 'DKLS' },
      { walletId: 'ok', scheme: 'dkls' },
      { walletId: 'ok', scheme: 'SECP256K1' },
      { walletId: 'ok' },
    ];
    for (const params of bad) {
      await assert.rejects(
        client.generateKey(params as { walletId: string; scheme: 'DKLS' }),
        (error: unknown) => rejectsWith('BAD_REQUEST')(error) && (error as EnclaveClientError).httpStatus === 400,
      );
    }
    const longest = await client.generateKey({ walletId: 'x'.repeat(128), scheme: 'ED25519' });
    assert.equal(longest.created, true);
  });

  test('raw protocol: unknown ops, bad frames, pipelined requests', async () => {
    const raw = await openRawSocket(enclave.socketPath);
    raw.send(
      Buffer.concat([
        encodeFrame({ id: 1, op: 'exportKey', params: { walletId: 'same-id' } }),
        encodeFrame({ id: 2, op: 'constructor', params: {} }),
        encodeFrame({ id: 3, op: '__proto__' }),
        encodeFrame('just a string'),
        encodeFrame({ id: 4, op: 'ping', params: [1] }),
        encodeFrame({ id: 5, op: 'ping' }),
        encodeFrame({ id: 6, op: 'getEciesPublicKey' }),
      ]),
    );
    const body = Buffer.from('{"id": 7, "op": "pi');
    const header = Buffer.alloc(4);
    header.writeUInt32BE(body.length, 0);
    raw.send(Buffer.concat([header, body]));
    const replies = await raw.waitForReplies(8);
    const byId = (id: number) => replies.filter((r) => r.id === id);
    const codeOf = (id: number) => {
      const reply = byId(id)[0];
      return reply && !reply.ok ? reply.error.code : undefined;
    };
    for (const id of [1, 2, 3]) assert.equal(codeOf(id), 'UNKNOWN_OP');
    assert.equal(codeOf(4), 'BAD_FRAME');
    assert.deepEqual(byId(5)[0], { id: 5, ok: true, result: { status: 'ok' } });
    assert.equal(byId(6)[0]?.ok, true);
    assert.deepEqual(
      byId(0).map((r) => !r.ok && r.error.code),
      ['BAD_FRAME', 'BAD_FRAME'],
      'unreadable frames answer id 0',
    );
    for (const reply of replies) {
      assert.equal(JSON.stringify(reply).includes('stack'), false);
    }
    raw.destroy();
  });

  test('an oversized frame closes only that connection', async () => {
    const raw = await openRawSocket(enclave.socketPath);
    const header = Buffer.alloc(4);
    header.writeUInt32BE(MAX_FRAME_BYTES + 1, 0);
    raw.send(header);
    const [reply] = await raw.waitForReplies(1);
    assert.deepEqual(reply && !reply.ok && [reply.id, reply.error.code], [0, 'FRAME_TOO_LARGE']);
    await raw.waitForClose();
    assert.deepEqual(await client.ping(), { status: 'ok' });
  });

  test('refuses to start a second enclave on a live socket', async () => {
    await assert.rejects(startEnclave({ dataDir, masterKey, log: () => undefined }), /already listening/);
    assert.deepEqual(await client.ping(), { status: 'ok' });
  });
});

describe('request handler', () => {
  test('an unexpected failure answers INTERNAL with a generic message; the cause goes to the log only', async () => {
    const lines: string[] = [];
    const handler = createRequestHandler({
      store: { getKey: () => undefined, getStoredKey: () => undefined, getEciesKey: () => undefined },
      writer: {
        insertKey: () => Promise.reject(new Error('disk on fire')),
        insertUserShare: () => Promise.reject(new Error('unused')),
      },
      crypto: {
        generate: () => Promise.resolve({ publicKey: 'ab', shares: [] }),
        sign: () => Promise.reject(new Error('unused')),
        migrate: () => Promise.reject(new Error('unused')),
      },
      eciesPublicKey: { publicKeyPem: '', keyFingerprint: '', generatedAt: '' },
      log: (line) => lines.push(line),
      rotation: {
        bind: () => undefined,
        status: () => Promise.reject(new Error('unused')),
        rotate: () => Promise.reject(new Error('unused')),
      },
    });
    const reply = await handler.handle({ id: 9, op: 'generateKey', params: { walletId: 'w', scheme: 'DKLS' } });
    assert.deepEqual(reply, { id: 9, ok: false, error: { code: 'INTERNAL', message: 'internal enclave error' } });
    assert.ok(lines.some((line) => line.includes('disk on fire') && line.includes('generateKey')));
    // The failed generation is forgotten: the next request tries again.
    const retry = await handler.handle({ id: 10, op: 'generateKey', params: { walletId: 'w', scheme: 'DKLS' } });
    assert.equal(retry.ok, false);
    assert.equal(lines.length, 2);
  });
});

describe('enclave shutdown (in-process)', () => {
  test('close() lets requests under way finish and commit before it stops', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'enclave-close-'));
    try {
      const key = new Uint8Array(randomBytes(32));
      const running = await startEnclave({ dataDir: dir, masterKey: key, log: () => undefined });
      const c = createEnclaveClient({ socketPath: running.socketPath });
      await c.connect();
      const calls = Array.from({ length: 50 }, (_, i) => c.generateKey({ walletId: `closing-${i}`, scheme: 'DKLS' }));
      await new Promise((resolve) => setImmediate(resolve));
      const closed = running.close();
      const results = await Promise.all(calls);
      await closed;
      await c.close();
      assert.ok(results.every((r) => r.created));

      const reopened = await startEnclave({ dataDir: dir, masterKey: key, log: () => undefined });
      const c2 = createEnclaveClient({ socketPath: reopened.socketPath });
      await c2.connect();
      const again = await Promise.all(
        results.map((_, i) => c2.generateKey({ walletId: `closing-${i}`, scheme: 'DKLS' })),
      );
      assert.deepEqual(
        again.map((r) => r.publicKey),
        results.map((r) => r.publicKey),
      );
      await c2.close();
      await reopened.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('enclave restart (in-process)', () => {
  test('keys and the ECIES key survive a restart; a wrong master key is refused', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'enclave-restart-'));
    try {
      const key = new Uint8Array(randomBytes(32));
      const first = await startEnclave({ dataDir: dir, masterKey: key, log: () => undefined });
      const c1 = createEnclaveClient({ socketPath: first.socketPath });
      await c1.connect();
      const generated = await c1.generateKey({ walletId: 'durable', scheme: 'ED25519' });
      const ecies = await c1.getEciesPublicKey();
      await c1.close();
      await first.close();
      assert.equal(existsSync(first.socketPath), false, 'the socket is removed on close');

      const wrongKey = new Uint8Array(randomBytes(32));
      await assert.rejects(
        startEnclave({ dataDir: dir, masterKey: wrongKey, log: () => undefined }),
        (error: unknown) =>
          error instanceof MasterKeyError &&
          error.message.includes(masterKeyId(key)) &&
          error.message.includes(masterKeyId(wrongKey)),
      );

      const second = await startEnclave({ dataDir: dir, masterKey: key, log: () => undefined });
      const c2 = createEnclaveClient({ socketPath: second.socketPath });
      await c2.connect();
      assert.deepEqual(await c2.generateKey({ walletId: 'durable', scheme: 'ED25519' }), {
        publicKey: generated.publicKey,
        created: false,
      });
      assert.deepEqual(await c2.getEciesPublicKey(), ecies);
      await c2.close();
      await second.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
