import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { signAndVerify } from '../test/helpers/enclave-signing.ts';
import { writeLegacyKeyStore } from '../test/helpers/legacy-key-store.ts';
import { createEnclaveClient, type EnclaveClient } from './client.ts';
import { AES_256_GCM, masterKeyId, XCHACHA20_POLY1305 } from './envelope.ts';
import { MasterKeyError } from './master-key.ts';
import type { EnclaveOps, Scheme } from './protocol.ts';
import { type RunningEnclave, startEnclave } from './server.ts';

type Status = EnclaveOps['masterKeyStatus']['result'];

const dirs: string[] = [];
function freshDataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'enclave-rotation-'));
  dirs.push(dir);
  return dir;
}
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

async function start(
  dataDir: string,
  masterKey: Uint8Array,
  nextMasterKey?: Uint8Array,
): Promise<{ enclave: RunningEnclave; client: EnclaveClient; stop(): Promise<void> }> {
  const enclave = await startEnclave({
    dataDir,
    masterKey,
    ...(nextMasterKey ? { nextMasterKey } : {}),
    threads: 2,
    log: () => undefined,
  });
  const client = createEnclaveClient({ socketPath: enclave.socketPath });
  await client.connect();
  return {
    enclave,
    client,
    async stop() {
      await client.close();
      await enclave.close();
    },
  };
}

async function waitWhileRotating(client: EnclaveClient): Promise<Status> {
  for (;;) {
    const status = await client.masterKeyStatus();
    if (status.state !== 'rotating' || status.error) return status;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

interface ShareRowBytes {
  wallet_id: string;
  kind: string;
  key_id: string;
  wrap_cipher: number;
  data_cipher: number;
  iv: Buffer;
  ciphertext: Buffer;
}

function readShareRows(dataDir: string, columns = 'key_id, wrap_cipher, data_cipher, iv, ciphertext'): ShareRowBytes[] {
  const db = new Database(join(dataDir, 'enclave', 'keys.db'), { readonly: true });
  try {
    return db.prepare(`SELECT wallet_id, kind, ${columns} FROM shares ORDER BY 1, 2`).all() as ShareRowBytes[];
  } finally {
    db.close();
  }
}

describe('master-key rotation (in-process enclave)', () => {
  test('a store of an earlier version: labeled at start, still signs, moved by a rotation (wrap layer only)', async () => {
    const dataDir = freshDataDir();
    mkdirSync(join(dataDir, 'enclave'), { mode: 0o700 });
    const oldKey = new Uint8Array(randomBytes(32));
    const newKey = new Uint8Array(randomBytes(32));
    const [oldId, newId] = [masterKeyId(oldKey), masterKeyId(newKey)];
    const wallets = writeLegacyKeyStore(join(dataDir, 'enclave', 'keys.db'), oldKey, 12);
    const legacyRows = readShareRows(dataDir, 'iv, ciphertext');

    const first = await start(dataDir, oldKey, newKey);
    try {
      const prepared = await first.client.masterKeyStatus();
      assert.equal(prepared.state, 'prepared');
      assert.deepEqual([prepared.masterKeyId, prepared.nextKeyId, prepared.sealingKeyId], [oldId, newId, oldId]);
      assert.deepEqual(
        prepared.rowsByKeyId,
        { [oldId]: 12 * 2 + 2 },
        'every row labeled with the key that opens it (shares, ECIES and identity keys)',
      );
      assert.match(prepared.action, new RegExp(`--confirm ${newId}`));
      for (const wallet of wallets) await signAndVerify(first.client, wallet);

      await assert.rejects(first.client.rotateMasterKey({ confirmKeyId: oldId }), { code: 'NEXT_KEY_MISMATCH' });
      await assert.rejects(first.client.rotateMasterKey({ confirmKeyId: 'not-a-key-id' }), { code: 'BAD_REQUEST' });
      assert.equal((await first.client.rotateMasterKey({})).state, 'prepared', 'without confirmKeyId: nothing moves');
      assert.deepEqual(readShareRows(dataDir, 'iv, ciphertext'), legacyRows);
      assert.ok(readShareRows(dataDir).every((row) => row.key_id === oldId && row.wrap_cipher === AES_256_GCM));

      const started = await first.client.rotateMasterKey({ confirmKeyId: newId });
      assert.equal(started.sealingKeyId, newId);
      const done = await waitWhileRotating(first.client);
      // The keys came as options (from outside): the operator promotes the new one.
      assert.equal(done.state, 'rotated');
      assert.deepEqual(done.rowsByKeyId, { [newId]: 12 * 2 + 2 });
      assert.match(done.action, /set ENCLAVE_MASTER_KEY to the value of ENCLAVE_MASTER_KEY_NEXT/);
      for (const wallet of wallets) await signAndVerify(first.client, wallet);
      const fresh = await first.client.generateKey({ walletId: 'after-rotation', scheme: 'ED25519' });
      await signAndVerify(first.client, { walletId: 'after-rotation', scheme: 'ED25519', publicKey: fresh.publicKey });
    } finally {
      await first.stop();
    }

    const rows = readShareRows(dataDir);
    for (const row of rows) {
      assert.equal(row.key_id, newId);
      assert.equal(row.wrap_cipher, XCHACHA20_POLY1305);
      const legacy = legacyRows.find((old) => old.wallet_id === row.wallet_id && old.kind === row.kind);
      if (legacy) {
        assert.equal(row.data_cipher, AES_256_GCM, 'the data layer of a legacy row is untouched');
        assert.deepEqual([row.iv, row.ciphertext], [legacy.iv, legacy.ciphertext]);
      } else {
        assert.equal(row.data_cipher, XCHACHA20_POLY1305, 'rows sealed during or after the rotation');
      }
    }

    await assert.rejects(
      startEnclave({ dataDir, masterKey: oldKey, log: () => undefined }),
      (error: unknown) =>
        error instanceof MasterKeyError && error.message.includes(newId) && error.message.includes(oldId),
    );
    const promoted = await start(dataDir, newKey);
    try {
      const status = await promoted.client.masterKeyStatus();
      assert.deepEqual([status.state, status.masterKeyId, status.sealingKeyId], ['idle', newId, newId]);
      for (const wallet of wallets) await signAndVerify(promoted.client, wallet);
    } finally {
      await promoted.stop();
    }
  });

  test('signing goes on throughout a rotation, from cached rows of the old key and fresh rows of the new', async () => {
    const dataDir = freshDataDir();
    const oldKey = new Uint8Array(randomBytes(32));
    const newKey = new Uint8Array(randomBytes(32));
    const running = await start(dataDir, oldKey, newKey);
    try {
      const { client } = running;
      const wallets = await Promise.all(
        Array.from({ length: 600 }, async (_, i) => {
          const scheme: Scheme = i % 2 ? 'DKLS' : 'ED25519';
          const walletId = randomUUID();
          const { publicKey } = await client.generateKey({ walletId, scheme });
          return { walletId, scheme, publicKey };
        }),
      );
      // Warm the signing cache with rows wrapped by the old key.
      await Promise.all(wallets.map((wallet) => signAndVerify(client, wallet)));

      let rotating = true;
      let signedDuringRotation = 0;
      const signer = async (offset: number) => {
        for (let i = offset; rotating; i += 8) {
          await signAndVerify(client, wallets[i % wallets.length]!);
          signedDuringRotation++;
        }
      };
      const signers = Array.from({ length: 8 }, (_, i) => signer(i));
      await client.rotateMasterKey({ confirmKeyId: masterKeyId(newKey) });
      const done = await waitWhileRotating(client);
      rotating = false;
      await Promise.all(signers);
      assert.equal(done.error, undefined);
      assert.deepEqual(done.rowsByKeyId, { [masterKeyId(newKey)]: 600 * 2 + 2 });
      assert.ok(signedDuringRotation > 0);
      await Promise.all(wallets.map((wallet) => signAndVerify(client, wallet)));
    } finally {
      await running.stop();
    }
  });
});
