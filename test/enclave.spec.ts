/**
 * The enclave as deployed: a separate OS process (`node --import tsx enclave/main.ts`) reached only through
 * enclave/client over its Unix socket.
 */
import assert from 'node:assert/strict';
import { createHash, createPublicKey, randomUUID } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ed25519 } from '@noble/curves/ed25519.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { createEnclaveClient, type EnclaveClient, EnclaveClientError } from '../enclave/client.ts';
import { encodeFrame } from '../enclave/framing.ts';
import { MAX_FRAME_BYTES } from '../enclave/protocol.ts';
import { defaultSocketPath } from '../enclave/socket-path.ts';
import { type EnclaveProcess, spawnEnclave } from './helpers/enclave-process.ts';
import { openRawSocket } from './helpers/enclave-raw-socket.ts';

const started = new Set<EnclaveProcess>();
const dirs: string[] = [];

async function start(dataDir: string, env?: Record<string, string>): Promise<EnclaveProcess> {
  const enclave = await spawnEnclave({ dataDir, ...(env ? { env } : {}) });
  started.add(enclave);
  return enclave;
}

function freshDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'enclave-spec-'));
  dirs.push(dir);
  return dir;
}

function isClientError(code: string) {
  return (error: unknown): boolean => {
    assert.ok(error instanceof EnclaveClientError, String(error));
    assert.equal(error.code, code, error.message);
    return true;
  };
}

after(async () => {
  for (const enclave of started) await enclave.stop(2000);
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe('enclave process', () => {
  const dataDir = freshDir();
  let enclave: EnclaveProcess;
  let client: EnclaveClient;
  /** Keys answered before the crash test, which must survive it. */
  const answered = new Map<string, { scheme: 'DKLS' | 'ED25519'; publicKey: string }>();
  let eciesBefore: Awaited<ReturnType<EnclaveClient['getEciesPublicKey']>>;

  before(async () => {
    enclave = await start(dataDir);
    client = createEnclaveClient({ socketPath: enclave.socketPath, reconnectDelayMs: 50 });
    await client.connect();
  });
  after(() => client?.close());

  test('starts, reports ready, and answers ping', async () => {
    // The IPC 'ready' message and the stdout line travel on different pipes: give the line a moment.
    for (let i = 0; i < 40 && enclave.stdout() === ''; i++) await sleep(25);
    assert.equal(enclave.stdout(), `enclave ready on ${defaultSocketPath(dataDir)}\n`);
    assert.deepEqual(await client.ping(), { status: 'ok' });
  });

  test('keeps its files private: master key 0600, enclave directory 0700; socket 0660 in its 0750 directory', () => {
    assert.equal(statSync(enclave.socketPath).mode & 0o777, 0o660);
    assert.equal(statSync(dirname(enclave.socketPath)).mode & 0o7777, 0o750);
    assert.equal(statSync(join(dataDir, 'enclave')).mode & 0o777, 0o700);
    const keyFile = join(dataDir, 'enclave', 'master.key');
    assert.equal(statSync(keyFile).mode & 0o777, 0o600);
    assert.match(enclave.stderr(), /BACK IT UP/);
    const key = readFileSync(keyFile, 'utf8').trim();
    assert.equal(enclave.stderr().includes(key), false, 'the master key is never printed');
    assert.equal(enclave.stdout().includes(key), false);
  });

  test('generates DKLS (secp256k1) and ED25519 keys: valid points in the protocol format, idempotent', async () => {
    const dkls = await client.generateKey({ walletId: 'wallet-dkls', scheme: 'DKLS' });
    assert.equal(dkls.created, true);
    assert.match(dkls.publicKey, /^04[0-9a-f]{128}$/);
    secp256k1.Point.fromHex(dkls.publicKey).assertValidity();

    const ed = await client.generateKey({ walletId: 'wallet-ed', scheme: 'ED25519' });
    assert.equal(ed.created, true);
    assert.match(ed.publicKey, /^[0-9a-f]{64}$/);
    ed25519.Point.fromHex(ed.publicKey).assertValidity();

    assert.deepEqual(await client.generateKey({ walletId: 'wallet-dkls', scheme: 'DKLS' }), {
      publicKey: dkls.publicKey,
      created: false,
    });
    await assert.rejects(
      client.generateKey({ walletId: 'wallet-dkls', scheme: 'ED25519' }),
      isClientError('KEY_EXISTS'),
    );
    await assert.rejects(client.generateKey({ walletId: '', scheme: 'DKLS' }), isClientError('BAD_REQUEST'));
    answered.set('wallet-dkls', { scheme: 'DKLS', publicKey: dkls.publicKey });
    answered.set('wallet-ed', { scheme: 'ED25519', publicKey: ed.publicKey });
  });

  test('200 concurrent generateKey calls all succeed with distinct keys', async () => {
    const ids = Array.from({ length: 200 }, (_, i) => `bulk-${i}`);
    const results = await Promise.all(
      ids.map((walletId, i) => client.generateKey({ walletId, scheme: i % 4 === 0 ? 'ED25519' : 'DKLS' })),
    );
    assert.ok(results.every((r) => r.created));
    assert.equal(new Set(results.map((r) => r.publicKey)).size, 200);
    for (const [i, walletId] of ids.entries()) {
      answered.set(walletId, { scheme: i % 4 === 0 ? 'ED25519' : 'DKLS', publicKey: results[i]!.publicKey });
    }
  });

  test('publishes its ECIES key as a P-256 SPKI PEM with the SHA-256 fingerprint of the DER', async () => {
    eciesBefore = await client.getEciesPublicKey();
    const key = createPublicKey(eciesBefore.publicKeyPem);
    assert.equal(key.asymmetricKeyType, 'ec');
    assert.equal(key.asymmetricKeyDetails?.namedCurve, 'prime256v1');
    const der = key.export({ type: 'spki', format: 'der' });
    assert.equal(eciesBefore.keyFingerprint, createHash('sha256').update(der).digest('hex'));
    assert.equal(new Date(eciesBefore.generatedAt).toISOString(), eciesBefore.generatedAt);
  });

  test('answers oversized and garbage frames with errors and keeps serving everyone else', async () => {
    const garbage = await openRawSocket(enclave.socketPath);
    const body = Buffer.from('\u0000\u00ffnot json at all');
    const header = Buffer.alloc(4);
    header.writeUInt32BE(body.length, 0);
    garbage.send(Buffer.concat([header, body]));
    garbage.send(encodeFrame({ id: 12, op: 'nope' }));
    const replies = await garbage.waitForReplies(2);
    assert.deepEqual(
      replies.map((r) => [r.id, !r.ok && r.error.code]),
      [
        [0, 'BAD_FRAME'],
        [12, 'UNKNOWN_OP'],
      ],
    );

    const oversized = await openRawSocket(enclave.socketPath);
    const big = Buffer.alloc(4);
    big.writeUInt32BE(MAX_FRAME_BYTES + 1, 0);
    oversized.send(Buffer.concat([big, Buffer.alloc(64 * 1024, 0x41)]));
    const [tooLarge] = await oversized.waitForReplies(1);
    assert.deepEqual(tooLarge && !tooLarge.ok && [tooLarge.id, tooLarge.error.code], [0, 'FRAME_TOO_LARGE']);
    await oversized.waitForClose();

    garbage.send(encodeFrame({ id: 13, op: 'ping' }));
    const [, , pong] = await garbage.waitForReplies(3);
    assert.deepEqual(pong, { id: 13, ok: true, result: { status: 'ok' } });
    assert.deepEqual(await client.ping(), { status: 'ok' });
    garbage.destroy();
  });

  test('kill -9 with 100 requests in flight: every call fails fast, and acknowledged keys survive the restart', async () => {
    // 100 callers, each keeping one request in flight until a call fails.
    let resolved = 0;
    const callers = Array.from({ length: 100 }, async (): Promise<unknown> => {
      for (;;) {
        const walletId = randomUUID();
        try {
          const result = await client.generateKey({ walletId, scheme: 'DKLS' });
          answered.set(walletId, { scheme: 'DKLS', publicKey: result.publicKey });
          resolved++;
        } catch (error) {
          return error;
        }
      }
    });
    for (let i = 0; i < 400 && resolved < 200; i++) await sleep(10);
    assert.ok(resolved >= 200, 'the enclave was serving the callers');
    const killedAt = performance.now();
    await enclave.kill9();
    const failures = await Promise.all(callers);
    assert.ok(performance.now() - killedAt < 2000, 'all in-flight calls settled within 2 s of the kill');
    for (const failure of failures) isClientError('ENCLAVE_UNAVAILABLE')(failure);

    assert.equal(client.isConnected(), false);
    const refusedAt = performance.now();
    await assert.rejects(client.ping(), isClientError('ENCLAVE_UNAVAILABLE'));
    assert.ok(performance.now() - refusedAt < 100, 'calls while down are refused at once');

    enclave = await start(dataDir);
    for (let i = 0; i < 100 && !client.isConnected(); i++) await sleep(50);
    assert.equal(client.isConnected(), true, 'the client reconnected by itself');
    const after = await Promise.all(
      [...answered].map(([walletId, { scheme }]) => client.generateKey({ walletId, scheme })),
    );
    for (const [i, [walletId, { publicKey }]] of [...answered].entries()) {
      assert.deepEqual(after[i], { publicKey, created: false }, walletId);
    }
    assert.deepEqual(await client.getEciesPublicKey(), eciesBefore, 'the ECIES key is stable across restarts');
  });

  test('SIGTERM shuts down cleanly: exit code 0 and the socket removed', async () => {
    const code = await enclave.stop();
    assert.equal(code, 0, enclave.stderr());
    assert.equal(existsSync(enclave.socketPath), false);
    assert.equal(client.isConnected(), false);
  });
});

describe('enclave process configuration', () => {
  test('an invalid ENCLAVE_MASTER_KEY stops the start with a message naming it', async () => {
    await assert.rejects(start(freshDir(), { ENCLAVE_MASTER_KEY: 'not-hex' }), (error: unknown) => {
      assert.match(String(error), /exited \(78\)/, 'EX_CONFIG: the supervisor does not retry');
      assert.match(String(error), /ENCLAVE_MASTER_KEY must hold exactly 64 hexadecimal characters/);
      return true;
    });
  });

  for (const file of ['master.key', 'keys.db', 'keys.db-wal']) {
    test(`a ${file} that other users may read stops the start (78), naming the file and the fix`, async () => {
      const dataDir = freshDir();
      mkdirSync(join(dataDir, 'enclave'), { mode: 0o700 });
      const path = join(dataDir, 'enclave', file);
      writeFileSync(path, file === 'master.key' ? `${'33'.repeat(32)}\n` : '', { mode: 0o600 });
      if (file !== 'master.key')
        writeFileSync(join(dataDir, 'enclave', 'master.key'), `${'33'.repeat(32)}\n`, { mode: 0o600 });
      chmodSync(path, 0o640);
      await assert.rejects(start(dataDir), (error: unknown) => {
        assert.match(String(error), /exited \(78\)/, 'EX_CONFIG: the supervisor does not retry');
        assert.ok(String(error).includes(`${path} (`), String(error));
        assert.ok(String(error).includes(`chmod 600 ${path}`), String(error));
        return true;
      });
      assert.equal(statSync(path).mode & 0o777, 0o640, 'the mode is reported, not silently fixed');
    });
  }

  test('a master key other than the one the store was sealed with is refused', async () => {
    const dataDir = freshDir();
    const first = await start(dataDir, { ENCLAVE_MASTER_KEY: '11'.repeat(32) });
    await first.stop();
    await assert.rejects(start(dataDir, { ENCLAVE_MASTER_KEY: '22'.repeat(32) }), /master key does not open/);
    const again = await start(dataDir, { ENCLAVE_MASTER_KEY: '11'.repeat(32) });
    await again.stop();
  });
});
