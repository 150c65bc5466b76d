/**
 * `sign` with an effect key: the enclave signs at most one (wallet, message) per key, recorded in its key store
 * before the signature leaves. Against real key store files, the real writer thread and real crypto workers; then
 * through the real enclave process, killed with SIGKILL and started again.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { ed25519 } from '@noble/curves/ed25519.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import Database from 'better-sqlite3';
import { spawnEnclave } from '../test/helpers/enclave-process.ts';
import { writeSchema2KeyStore } from '../test/helpers/legacy-key-store.ts';
import { createEnclaveClient, EnclaveClientError } from './client.ts';
import { createCryptoPool } from './crypto-pool.ts';
import { EFFECT_RECORD_RETENTION_MS, startEffectRecordPruning } from './effect-records.ts';
import { createKeyStore, SCHEMA_VERSION } from './key-store.ts';
import { createKeyWriter } from './key-writer.ts';
import { type EnclaveOps, type EnclaveReply, MAX_EFFECT_KEY_LENGTH, type Scheme } from './protocol.ts';
import { createRequestHandler } from './request-handler.ts';
import { startEnclave } from './server.ts';
import type { SignItem } from './sign.ts';

type SignResult = EnclaveOps['sign']['result'];

const dirs: string[] = [];
function freshDir(prefix = 'enclave-effect-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(dir);
  return dir;
}
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const sha256 = (bytes: Uint8Array): Buffer => createHash('sha256').update(bytes).digest();
const b64 = (bytes: Uint8Array): string => Buffer.from(bytes).toString('base64');

/** A random message of the scheme's shape: a 32-byte digest (DKLS) or a 200-byte message (ED25519). */
function randomMessage(scheme: Scheme): Uint8Array {
  return new Uint8Array(randomBytes(scheme === 'DKLS' ? 32 : 200));
}

/** Verifies with noble, independently of the enclave's libraries. */
function verifies(scheme: Scheme, signature: string, message: Uint8Array, publicKey: string): boolean {
  const sig = Buffer.from(signature, 'hex');
  const key = Buffer.from(publicKey, 'hex');
  return scheme === 'DKLS'
    ? secp256k1.verify(sig, message, key, { prehash: false, lowS: true })
    : ed25519.verify(sig, message, key);
}

/** The effect records of a key store file, read on a connection of its own. */
function readEffectRows(
  path: string,
): Array<{ effect_key: string; wallet_id: string; message_sha256: Buffer; created_at: string }> {
  const db = new Database(path, { readonly: true });
  try {
    return db.prepare('SELECT * FROM effect_signatures ORDER BY effect_key').all() as never;
  } finally {
    db.close();
  }
}

/**
 * The enclave's request handler over a real key store file, writer thread and crypto workers (what startEnclave
 * wires, without the socket). `signed` lists every item that reached the workers' signing.
 */
async function openHandler(path: string, masterKey: Uint8Array) {
  const store = createKeyStore({ path });
  const writer = createKeyWriter({ path });
  const pool = createCryptoPool({ masterKey, threads: 1 });
  const signed: SignItem[] = [];
  const logs: string[] = [];
  const handler = createRequestHandler({
    store,
    writer,
    crypto: {
      generate: pool.generate,
      migrate: pool.migrate,
      signIdentity: pool.signIdentity,
      sign: (item) => {
        signed.push(item);
        return pool.sign(item);
      },
    },
    eciesPublicKey: { publicKeyPem: '', keyFingerprint: '', generatedAt: '' },
    identity: await pool.generateIdentityKey(),
    log: (line) => logs.push(line),
    rotation: {
      bind: () => undefined,
      status: () => Promise.reject(new Error('unused')),
      rotate: () => Promise.reject(new Error('unused')),
    },
  });
  let id = 0;
  const call = async (op: 'sign' | 'generateKey', params: Record<string, unknown>): Promise<EnclaveReply> =>
    handler.handle({ id: ++id, op, params: params as never });
  return {
    call,
    signed,
    logs,
    writer,
    async wallet(walletId: string, scheme: Scheme): Promise<{ walletId: string; scheme: Scheme; publicKey: string }> {
      const reply = await call('generateKey', { walletId, scheme });
      assert.ok(reply.ok, JSON.stringify(reply));
      return { walletId, scheme, publicKey: (reply.result as { publicKey: string }).publicKey };
    },
    sign(wallet: { walletId: string; scheme: Scheme }, message: Uint8Array, effectKey?: unknown) {
      return call('sign', {
        walletId: wallet.walletId,
        scheme: wallet.scheme,
        message: b64(message),
        ...(effectKey === undefined ? {} : { effectKey }),
      });
    },
    async close() {
      await pool.destroy();
      await writer.close();
      store.close();
    },
  };
}

function resultOf(reply: EnclaveReply): SignResult {
  assert.ok(reply.ok, JSON.stringify(reply));
  return reply.result as SignResult;
}

function assertCode(reply: EnclaveReply, code: string): void {
  assert.equal(reply.ok, false, JSON.stringify(reply));
  if (!reply.ok) assert.equal(reply.error.code, code, reply.error.message);
}

describe('sign with an effect key (request handler, real key store, writer and workers)', () => {
  test('the same key, wallet and message: the same signature again, marked replayed; recorded before the reply', async () => {
    const path = join(freshDir(), 'keys.db');
    const enclave = await openHandler(path, new Uint8Array(randomBytes(32)));
    try {
      for (const scheme of ['DKLS', 'ED25519'] as const) {
        const wallet = await enclave.wallet(`w-${scheme}`, scheme);
        const message = randomMessage(scheme);
        const effectKey = `pay-${scheme}:1:0`;
        const first = resultOf(await enclave.sign(wallet, message, effectKey));
        // On disk when the reply came: another connection reads the record (and only its digest, never the message).
        const row = readEffectRows(path).find((r) => r.effect_key === effectKey);
        assert.ok(row, 'the record is committed before the signature is answered');
        assert.equal(row.wallet_id, wallet.walletId);
        assert.deepEqual(row.message_sha256, sha256(message));
        assert.ok(Math.abs(Date.parse(row.created_at) - Date.now()) < 60_000, row.created_at);
        assert.equal(first.replayed, undefined, 'a first signature is not a replay');
        assert.ok(verifies(scheme, first.signature, message, wallet.publicKey));

        const again = resultOf(await enclave.sign(wallet, message, effectKey));
        assert.deepEqual(again, { ...first, replayed: true });
        assert.equal(readEffectRows(path).filter((r) => r.effect_key === effectKey).length, 1);
      }
    } finally {
      await enclave.close();
    }
  });

  test('another message or another wallet under a used key: ALREADY_SIGNED, and nothing reaches the workers', async () => {
    const path = join(freshDir(), 'keys.db');
    const enclave = await openHandler(path, new Uint8Array(randomBytes(32)));
    try {
      const evm = await enclave.wallet('evm', 'DKLS');
      const evm2 = await enclave.wallet('evm-2', 'DKLS');
      const sol = await enclave.wallet('sol', 'ED25519');
      const message = randomMessage('DKLS');
      resultOf(await enclave.sign(evm, message, 'k:1:0'));
      const signedBefore = enclave.signed.length;

      const otherMessage = await enclave.sign(evm, randomMessage('DKLS'), 'k:1:0');
      assertCode(otherMessage, 'ALREADY_SIGNED');
      assert.ok(!otherMessage.ok && /nothing was signed/.test(otherMessage.error.message));
      assertCode(await enclave.sign(evm2, message, 'k:1:0'), 'ALREADY_SIGNED');
      assertCode(await enclave.sign(sol, randomMessage('ED25519'), 'k:1:0'), 'ALREADY_SIGNED');
      assert.equal(enclave.signed.length, signedBefore, 'a refused request is never signed');

      // The record is the first one, unchanged; the same request still replays.
      const [row] = readEffectRows(path);
      assert.deepEqual([row!.wallet_id, row!.message_sha256], ['evm', sha256(message)]);
      assert.equal(resultOf(await enclave.sign(evm, message, 'k:1:0')).replayed, true);
      // An expected refusal is not an incident: nothing logged.
      assert.deepEqual(enclave.logs, []);
    } finally {
      await enclave.close();
    }
  });

  test('concurrent requests under one key: exactly one message is signed, across group commits', async () => {
    const path = join(freshDir(), 'keys.db');
    const enclave = await openHandler(path, new Uint8Array(randomBytes(32)));
    try {
      const wallet = await enclave.wallet('busy', 'DKLS');
      const messages = Array.from({ length: 40 }, () => randomMessage('DKLS'));
      const replies: Array<Promise<EnclaveReply>> = [];
      // Two waves: the first leaves as one batch; the second is queued while it commits, so goes in the next.
      for (const message of messages.slice(0, 20)) replies.push(enclave.sign(wallet, message, 'race:1:0'));
      await new Promise((resolve) => setImmediate(resolve));
      for (const message of messages.slice(20)) replies.push(enclave.sign(wallet, message, 'race:1:0'));
      const settled = await Promise.all(replies);
      const winners = settled.flatMap((reply, i) => (reply.ok ? [i] : []));
      assert.equal(winners.length, 1, 'exactly one signature');
      for (const reply of settled) if (!reply.ok) assertCode(reply, 'ALREADY_SIGNED');
      assert.equal(enclave.signed.length, 1, 'the workers signed once');
      const winner = winners[0]!;
      assert.ok(verifies('DKLS', resultOf(settled[winner]!).signature, messages[winner]!, wallet.publicKey));
      assert.deepEqual(readEffectRows(path)[0]!.message_sha256, sha256(messages[winner]!));

      // The same message many times at once: all answer the one signature, all but the first as replays.
      const message = randomMessage('ED25519');
      const sol = await enclave.wallet('sol-busy', 'ED25519');
      const same = (await Promise.all(Array.from({ length: 10 }, () => enclave.sign(sol, message, 'same:1:0')))).map(
        resultOf,
      );
      assert.equal(new Set(same.map((r) => r.signature)).size, 1);
      assert.equal(same.filter((r) => r.replayed === true).length, 9);
      assert.ok(verifies('ED25519', same[0]!.signature, message, sol.publicKey));
    } finally {
      await enclave.close();
    }
  });

  test('a bad effect key answers BAD_REQUEST: nothing recorded, nothing signed; no key records nothing', async () => {
    const path = join(freshDir(), 'keys.db');
    const enclave = await openHandler(path, new Uint8Array(randomBytes(32)));
    try {
      const wallet = await enclave.wallet('w', 'DKLS');
      const bad: unknown[] = [
        '',
        'x'.repeat(MAX_EFFECT_KEY_LENGTH + 1),
        'caf\u00e9',
        'line\nbreak',
        'tab\there',
        'nul\u0000',
        'del\u007f',
        '\u{1F600}',
        42,
        null,
        true,
        {},
        ['k'],
      ];
      for (const effectKey of bad) {
        const reply = await enclave.sign(wallet, randomMessage('DKLS'), effectKey);
        assertCode(reply, 'BAD_REQUEST');
        assert.ok(!reply.ok && /effectKey must be 1 to 200 printable ASCII characters/.test(reply.error.message));
      }
      assert.equal(enclave.signed.length, 0);
      assert.deepEqual(readEffectRows(path), []);

      // The bounds are accepted: 200 characters, space and tilde.
      for (const effectKey of ['x'.repeat(MAX_EFFECT_KEY_LENGTH), ' ', '~', 'a:1:0#1']) {
        resultOf(await enclave.sign(wallet, randomMessage('DKLS'), effectKey));
      }
      assert.equal(readEffectRows(path).length, 4);

      // Without a key: signed, nothing recorded, the result as it always was.
      const plain = resultOf(await enclave.sign(wallet, randomMessage('DKLS')));
      assert.deepEqual(Object.keys(plain).sort(), ['recovery', 'signature']);
      assert.equal(readEffectRows(path).length, 4);
    } finally {
      await enclave.close();
    }
  });

  test('the record survives closing and reopening the store', async () => {
    const path = join(freshDir(), 'keys.db');
    const masterKey = new Uint8Array(randomBytes(32));
    const message = randomMessage('ED25519');
    let first: SignResult;
    const before = await openHandler(path, masterKey);
    try {
      const wallet = await before.wallet('kept', 'ED25519');
      first = resultOf(await before.sign(wallet, message, 'kept:1:0'));
    } finally {
      await before.close();
    }
    const reopened = await openHandler(path, masterKey);
    try {
      const wallet = { walletId: 'kept', scheme: 'ED25519' as const };
      assertCode(await reopened.sign(wallet, randomMessage('ED25519'), 'kept:1:0'), 'ALREADY_SIGNED');
      assert.deepEqual(resultOf(await reopened.sign(wallet, message, 'kept:1:0')), { ...first, replayed: true });
      assert.equal(reopened.signed.length, 1, 'only the replay was signed');
    } finally {
      await reopened.close();
    }
  });
});

describe('effect records in the key store', () => {
  test('one group commit decides in order: recorded, then replayed or conflict, never overwritten', () => {
    const path = join(freshDir(), 'keys.db');
    const store = createKeyStore({ path });
    try {
      const a = new Uint8Array(sha256(Buffer.from('a')));
      const b = new Uint8Array(sha256(Buffer.from('b')));
      const outcomes = store.write({
        keys: [],
        userShares: [],
        effects: [
          { effectKey: 'k', walletId: 'w1', messageSha256: a },
          { effectKey: 'k', walletId: 'w1', messageSha256: a },
          { effectKey: 'k', walletId: 'w1', messageSha256: b },
          { effectKey: 'k', walletId: 'w2', messageSha256: a },
          { effectKey: 'other', walletId: 'w2', messageSha256: b },
        ],
      });
      assert.deepEqual(outcomes.effects, ['recorded', 'replayed', 'conflict', 'conflict', 'recorded']);
      const record = store.getEffectRecord('k')!;
      assert.deepEqual([record.walletId, Buffer.from(record.messageSha256)], ['w1', Buffer.from(a)]);
      assert.equal(store.getEffectRecord('missing'), undefined);
      // The table refuses what is not a SHA-256 digest.
      assert.throws(() =>
        store.write({
          keys: [],
          userShares: [],
          effects: [{ effectKey: 'x', walletId: 'w', messageSha256: a.slice(1) }],
        }),
      );
      assert.equal(store.getEffectRecord('x'), undefined, 'the failed batch wrote nothing');
    } finally {
      store.close();
    }
  });

  test('records queued together are one group commit on the writer thread, answered once it is on disk', async () => {
    const path = join(freshDir(), 'keys.db');
    createKeyStore({ path }).close();
    const writer = createKeyWriter({ path });
    try {
      const digest = new Uint8Array(32).fill(7);
      const outcomes = await Promise.all(
        Array.from({ length: 300 }, (_, i) =>
          writer.recordEffect({ effectKey: `batch:${i}:0`, walletId: 'w', messageSha256: digest }),
        ),
      );
      assert.ok(outcomes.every((o) => o === 'recorded'));
      // Visible from another connection when the promises resolved, and all written by one transaction (one time).
      const rows = readEffectRows(path);
      assert.equal(rows.length, 300);
      assert.equal(new Set(rows.map((r) => r.created_at)).size, 1, 'one transaction, one fsync');
    } finally {
      await writer.close();
    }
  });

  test('records older than the retention are deleted at start and on the timer, page by page; newer ones kept', async () => {
    const path = join(freshDir(), 'keys.db');
    createKeyStore({ path }).close();
    const writer = createKeyWriter({ path });
    const digest = new Uint8Array(32).fill(1);
    try {
      const outcomes = await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          writer.recordEffect({ effectKey: `e${i}`, walletId: 'w', messageSha256: digest }),
        ),
      );
      assert.ok(outcomes.every((o) => o === 'recorded'));
      // Back-date seven of them past the retention (one exactly at it: kept), as time would.
      const now = Date.now();
      const raw = new Database(path);
      const at = (ms: number) => new Date(ms).toISOString();
      for (let i = 0; i < 7; i++) {
        raw
          .prepare('UPDATE effect_signatures SET created_at = ? WHERE effect_key = ?')
          .run(at(now - EFFECT_RECORD_RETENTION_MS - 1000 * (i + 1)), `e${i}`);
      }
      raw
        .prepare('UPDATE effect_signatures SET created_at = ? WHERE effect_key = ?')
        .run(at(now - EFFECT_RECORD_RETENTION_MS), 'e7');
      raw.close();

      const logs: string[] = [];
      const pages: number[] = [];
      const pruning = startEffectRecordPruning({
        writer: {
          pruneEffectRecords: async (before, limit) => {
            const deleted = await writer.pruneEffectRecords(before, limit);
            pages.push(deleted);
            return deleted;
          },
        },
        log: (line) => logs.push(line),
        now: () => now,
        pageSize: 3,
        intervalMs: 20,
      });
      try {
        // The pass at start: 7 old records in pages of 3 (3, 3, 1).
        for (let i = 0; i < 200 && logs.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 5));
        assert.deepEqual(logs, ['enclave: deleted 7 effect records older than the retention']);
        assert.deepEqual(pages.slice(0, 3), [3, 3, 1]);
        assert.deepEqual(
          readEffectRows(path).map((r) => r.effect_key),
          ['e10', 'e11', 'e7', 'e8', 'e9'],
        );
        // The timer comes back: a record that ages is deleted by a later pass.
        const aged = new Database(path);
        aged.prepare('UPDATE effect_signatures SET created_at = ? WHERE effect_key = ?').run(at(0), 'e9');
        aged.close();
        for (let i = 0; i < 200 && logs.length < 2; i++) await new Promise((resolve) => setTimeout(resolve, 5));
        assert.equal(logs[1], 'enclave: deleted 1 effect records older than the retention');
        assert.deepEqual(
          readEffectRows(path).map((r) => r.effect_key),
          ['e10', 'e11', 'e7', 'e8'],
        );
      } finally {
        await pruning.close();
      }
      const passes = pages.length;
      await new Promise((resolve) => setTimeout(resolve, 60));
      assert.equal(pages.length, passes, 'no pass after close');
    } finally {
      await writer.close();
    }
  });

  test('a key store of schema 2 is migrated in place at start: its wallets sign with effect keys', async () => {
    const dataDir = freshDir();
    mkdirSync(join(dataDir, 'enclave'), { mode: 0o700 });
    const path = join(dataDir, 'enclave', 'keys.db');
    const masterKey = new Uint8Array(randomBytes(32));
    const wallets = writeSchema2KeyStore(path, masterKey, 2);
    const raw = new Database(path, { readonly: true });
    assert.equal(raw.pragma('user_version', { simple: true }), 2);
    assert.equal(raw.prepare("SELECT name FROM sqlite_master WHERE name = 'effect_signatures'").get(), undefined);
    const sharesBefore = raw.prepare('SELECT * FROM shares ORDER BY wallet_id, kind').all();
    raw.close();

    const enclave = await startEnclave({ dataDir, masterKey, threads: 1, log: () => undefined });
    const client = createEnclaveClient({ socketPath: enclave.socketPath });
    try {
      await client.connect();
      for (const wallet of wallets) {
        const message = randomMessage(wallet.scheme);
        const params = { walletId: wallet.walletId, scheme: wallet.scheme, message: b64(message) };
        const first = await client.sign({ ...params, effectKey: `${wallet.walletId}:1:0` });
        assert.ok(verifies(wallet.scheme, first.signature, message, wallet.publicKey));
        assert.deepEqual(await client.sign({ ...params, effectKey: `${wallet.walletId}:1:0` }), {
          ...first,
          replayed: true,
        });
        await assert.rejects(
          client.sign({ ...params, message: b64(randomMessage(wallet.scheme)), effectKey: `${wallet.walletId}:1:0` }),
          (error: unknown) => error instanceof EnclaveClientError && error.code === 'ALREADY_SIGNED',
        );
      }
    } finally {
      await client.close();
      await enclave.close();
    }
    const check = new Database(path, { readonly: true });
    try {
      assert.equal(check.pragma('user_version', { simple: true }), SCHEMA_VERSION);
      assert.equal(SCHEMA_VERSION, 3);
      assert.deepEqual(check.prepare('SELECT * FROM shares ORDER BY wallet_id, kind').all(), sharesBefore);
      assert.equal((check.prepare('SELECT count(*) AS n FROM effect_signatures').get() as { n: number }).n, 2);
      assert.ok(
        check.prepare("SELECT name FROM sqlite_master WHERE name = 'effect_signatures_by_created_at'").get(),
        'the pruning index',
      );
    } finally {
      check.close();
    }
  });
});

describe('sign with an effect key (real enclave process)', () => {
  test('a keyed signature, SIGKILL, restart: the same key with another message is ALREADY_SIGNED', async () => {
    const dataDir = freshDir('enclave-effect-kill-');
    let enclave = await spawnEnclave({ dataDir });
    let client = createEnclaveClient({ socketPath: enclave.socketPath });
    try {
      await client.connect();
      const { publicKey } = await client.generateKey({ walletId: 'pay', scheme: 'DKLS' });
      const message = randomMessage('DKLS');
      const first = await client.sign({
        walletId: 'pay',
        scheme: 'DKLS',
        message: b64(message),
        effectKey: 'tx-1:1:0',
      });
      assert.ok(verifies('DKLS', first.signature, message, publicKey));
      // No shutdown at all: whatever was answered must already be on disk.
      assert.equal(await enclave.kill9(), 'SIGKILL');
      await client.close();

      enclave = await spawnEnclave({ dataDir });
      client = createEnclaveClient({ socketPath: enclave.socketPath });
      await client.connect();
      await assert.rejects(
        client.sign({ walletId: 'pay', scheme: 'DKLS', message: b64(randomMessage('DKLS')), effectKey: 'tx-1:1:0' }),
        (error: unknown) => {
          assert.ok(error instanceof EnclaveClientError, String(error));
          assert.equal(error.code, 'ALREADY_SIGNED');
          assert.equal(error.httpStatus, 409);
          return true;
        },
      );
      assert.deepEqual(
        await client.sign({ walletId: 'pay', scheme: 'DKLS', message: b64(message), effectKey: 'tx-1:1:0' }),
        { ...first, replayed: true },
      );
    } finally {
      await client.close();
      await enclave.stop();
    }
  });
});
