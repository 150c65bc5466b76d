import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { openRawSocket } from '../test/helpers/enclave-raw-socket.ts';
import { createEnclaveClient, type EnclaveClient, EnclaveClientError } from './client.ts';
import { masterKeyId, XCHACHA20_POLY1305 } from './envelope.ts';
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
  test('files: socket 0660 in its 0750 directory, enclave directory 0700', () => {
    assert.equal(statSync(enclave.socketPath).mode & 0o777, 0o660);
    assert.equal(statSync(dirname(enclave.socketPath)).mode & 0o7777, 0o750);
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

describe('enclave identity and connection cap (in-process)', () => {
  test('the identity proved on the socket is the one logged at start, and it survives a restart', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'enclave-identity-'));
    try {
      const key = new Uint8Array(randomBytes(32));
      const lines: string[] = [];
      const first = await startEnclave({ dataDir: dir, masterKey: key, log: (line) => lines.push(line) });
      const raw = await openRawSocket(first.socketPath);
      assert.equal(raw.identity?.fingerprint, first.identityFingerprint);
      assert.ok(
        lines.some((line) => line.includes(`identity key fingerprint ${first.identityFingerprint} (generated now)`)),
      );
      raw.destroy();
      await first.close();
      const second = await startEnclave({ dataDir: dir, masterKey: key, log: (line) => lines.push(line) });
      assert.equal(second.identityFingerprint, first.identityFingerprint);
      await second.close();
      // Another store, another identity.
      const other = mkdtempSync(join(tmpdir(), 'enclave-identity-'));
      const third = await startEnclave({ dataDir: other, masterKey: key, log: () => undefined });
      assert.notEqual(third.identityFingerprint, first.identityFingerprint);
      await third.close();
      rmSync(other, { recursive: true, force: true });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('connections past maxConnections are closed at once, logged once; the open ones keep working', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'enclave-cap-'));
    const lines: string[] = [];
    const running = await startEnclave({
      dataDir: dir,
      masterKey: new Uint8Array(randomBytes(32)),
      log: (line) => lines.push(line),
      limits: { maxConnections: 3 },
    });
    const c = createEnclaveClient({ socketPath: running.socketPath });
    try {
      await c.connect();
      const open = [await openRawSocket(running.socketPath), await openRawSocket(running.socketPath)];
      for (let i = 0; i < 3; i++) {
        const extra = await openRawSocket(running.socketPath, { hello: false });
        await extra.waitForClose(2000);
      }
      assert.equal(lines.filter((line) => line.includes('refusing new ones')).length, 1);
      assert.deepEqual(await c.ping(), { status: 'ok' });
      open[0]!.send(encodeFrame({ id: 1, op: 'ping' }));
      assert.equal((await open[0]!.waitForReplies(1))[0]?.ok, true);
      open[1]!.destroy();
      await new Promise((resolve) => setTimeout(resolve, 50));
      const again = await openRawSocket(running.socketPath);
      again.send(encodeFrame({ id: 2, op: 'ping' }));
      assert.equal((await again.waitForReplies(1))[0]?.ok, true);
      again.destroy();
      open[0]!.destroy();
    } finally {
      await c.close();
      await running.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('request handler', () => {
  test('an unexpected failure answers INTERNAL with a generic message; the cause goes to the log only', async () => {
    const lines: string[] = [];
    const empty = new Uint8Array(0);
    const handler = createRequestHandler({
      store: { getKey: () => undefined, getStoredKey: () => undefined, getEciesKey: () => undefined },
      writer: {
        insertKey: () => Promise.reject(new Error('disk on fire')),
        insertUserShare: () => Promise.reject(new Error('unused')),
        recordEffect: () => Promise.reject(new Error('unused')),
      },
      crypto: {
        generate: () => Promise.resolve({ publicKey: 'ab', shares: [] }),
        sign: () => Promise.reject(new Error('unused')),
        migrate: () => Promise.reject(new Error('unused')),
        signIdentity: () => Promise.reject(new Error('unused')),
      },
      eciesPublicKey: { publicKeyPem: '', keyFingerprint: '', generatedAt: '' },
      identity: {
        publicKey: new Uint8Array(32),
        sealed: {
          keyId: 'unused',
          wrapCipher: XCHACHA20_POLY1305,
          dataCipher: XCHACHA20_POLY1305,
          dekIv: empty,
          wrappedKey: empty,
          iv: empty,
          ciphertext: empty,
        },
      },
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

  test('a socket directory other users may write to is used, with a warning; a fresh one is 0750', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'enclave-sockdir-'));
    try {
      const shared = join(dir, 'shared');
      mkdirSync(shared);
      chmodSync(shared, 0o1777);
      const lines: string[] = [];
      const masterKey = new Uint8Array(randomBytes(32));
      const loose = await startEnclave({
        dataDir: dir,
        socketPath: join(shared, 'e.sock'),
        masterKey,
        threads: 1,
        log: (line) => lines.push(line),
      });
      await loose.close();
      assert.equal(
        lines.filter((line) => line.includes(`socket directory ${shared} (mode 01777)`)).length,
        1,
        lines.join('\n'),
      );
      assert.equal(statSync(shared).mode & 0o7777, 0o1777, 'an existing directory is left as it is');

      const fresh = join(dir, 'fresh', 'sock');
      const own = await startEnclave({
        dataDir: dir,
        socketPath: join(fresh, 'e.sock'),
        masterKey,
        threads: 1,
        log: (line) => lines.push(line),
      });
      await own.close();
      assert.equal(statSync(fresh).mode & 0o7777, 0o750);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
