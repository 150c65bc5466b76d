/**
 * Master-key rotation against the real enclave process: a file key rotated under SIGKILLs at the worst moments,
 * an outside key (ENCLAVE_MASTER_KEY / ENCLAVE_MASTER_KEY_NEXT) rotated and promoted by the operator, and the
 * admin routes on the whole appliance.
 */
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { createEnclaveClient, type EnclaveClient } from '../enclave/client.ts';
import type { Cipher } from '../enclave/envelope.ts';
import { createKeyRing, masterKeyId, type SealedBlob, shareContext, unseal } from '../enclave/envelope.ts';
import { SEALED_KEY_CONTEXTS } from '../enclave/key-store.ts';
import type { EnclaveOps, Scheme } from '../enclave/protocol.ts';
import { type EnclaveProcess, spawnEnclave } from './helpers/enclave-process.ts';
import { signAndVerify } from './helpers/enclave-signing.ts';
import { startTestService, type TestService, tempDataDir } from './helpers/service.ts';

type Status = EnclaveOps['masterKeyStatus']['result'];
type Wallet = { walletId: string; scheme: Scheme; publicKey: string };

function readKeyFile(path: string): Uint8Array {
  return Uint8Array.from(Buffer.from(readFileSync(path, 'utf8').trim(), 'hex'));
}

async function connect(enclave: EnclaveProcess): Promise<EnclaveClient> {
  const client = createEnclaveClient({ socketPath: enclave.socketPath, requestTimeoutMs: 30_000 });
  await client.connect();
  return client;
}

async function createWallets(client: EnclaveClient, count: number): Promise<Wallet[]> {
  const wallets: Wallet[] = [];
  for (let start = 0; start < count; start += 500) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(500, count - start) }, async (_, i) => {
        const scheme: Scheme = (start + i) % 2 ? 'ED25519' : 'DKLS';
        const walletId = randomUUID();
        const { publicKey } = await client.generateKey({ walletId, scheme });
        return { walletId, scheme, publicKey };
      }),
    );
    wallets.push(...batch);
  }
  return wallets;
}

async function waitWhileRotating(client: EnclaveClient): Promise<Status> {
  for (;;) {
    const status = await client.masterKeyStatus();
    if (status.state !== 'rotating' || status.error) return status;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

interface RowWithWrap {
  wallet_id: string | null;
  name: string | null;
  kind: string | null;
  scheme: string | null;
  key_id: string;
  wrap_cipher: Cipher;
  dek_iv: Buffer;
  wrapped_key: Buffer;
  data_cipher: Cipher;
  iv: Buffer;
  ciphertext: Buffer;
}

/**
 * With the enclave dead: opens every sealed row of keys.db with the keys in the data directory, and answers the
 * number of rows under each key id. Throws if a row does not open.
 */
function checkEveryRowOpens(dataDir: string, keys: Uint8Array[]): Record<string, number> {
  const ring = createKeyRing(keys);
  const db = new Database(join(dataDir, 'enclave', 'keys.db'));
  try {
    const rows = db
      .prepare(
        'SELECT s.wallet_id, NULL AS name, s.kind, k.scheme, s.key_id, s.wrap_cipher, s.dek_iv, s.wrapped_key, ' +
          's.data_cipher, s.iv, s.ciphertext FROM shares s JOIN keys k USING (wallet_id) ' +
          'UNION ALL SELECT NULL, name, NULL, NULL, key_id, wrap_cipher, dek_iv, wrapped_key, data_cipher, iv, ' +
          'ciphertext FROM sealed_keys',
      )
      .all() as RowWithWrap[];
    const counts: Record<string, number> = {};
    for (const row of rows) {
      const sealed: SealedBlob = {
        keyId: row.key_id,
        wrapCipher: row.wrap_cipher,
        dekIv: row.dek_iv,
        wrappedKey: row.wrapped_key,
        dataCipher: row.data_cipher,
        iv: row.iv,
        ciphertext: row.ciphertext,
      };
      const context =
        row.name === null
          ? shareContext(row.wallet_id!, row.scheme!, row.kind as 'service' | 'user')
          : SEALED_KEY_CONTEXTS[row.name]!;
      unseal(ring, context, sealed).fill(0);
      counts[row.key_id] = (counts[row.key_id] ?? 0) + 1;
    }
    return counts;
  } finally {
    db.close();
  }
}

/** Polls keys.db (another connection) until some but not all rows are under `keyId`; resolves false if it never is. */
async function untilPartlyMoved(dataDir: string, keyId: string, total: number, atLeast: number): Promise<boolean> {
  const db = new Database(join(dataDir, 'enclave', 'keys.db'), { readonly: true });
  try {
    const count = db.prepare('SELECT count(*) AS n FROM shares WHERE key_id = ?');
    for (const until = Date.now() + 60_000; Date.now() < until; ) {
      const { n } = count.get(keyId) as { n: number };
      if (n >= atLeast && n < total) return true;
      if (n >= total) return false;
      await new Promise((resolve) => setImmediate(resolve));
    }
    return false;
  } finally {
    db.close();
  }
}

describe('rotating a file master key, with SIGKILLs mid-rotation', () => {
  const dataDir = tempDataDir('wcs-rotation-');
  let enclave: EnclaveProcess | undefined;
  let client: EnclaveClient | undefined;
  after(async () => {
    await client?.close();
    await enclave?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  test('every row opens with the keys on disk after each kill; a restart resumes; every key signs; the file is promoted', async () => {
    enclave = await spawnEnclave({ dataDir });
    client = await connect(enclave);
    const WALLETS = 2000;
    const wallets = await createWallets(client, WALLETS);
    const keyPath = join(dataDir, 'enclave', 'master.key');
    const nextPath = join(dataDir, 'enclave', 'master.key.next');
    const oldKey = readKeyFile(keyPath);
    const oldId = masterKeyId(oldKey);

    const prepared = await client.rotateMasterKey({});
    assert.equal(prepared.state, 'prepared');
    assert.equal(statSync(nextPath).mode & 0o777, 0o600);
    const newKey = readKeyFile(nextPath);
    const newId = masterKeyId(newKey);
    assert.equal(prepared.nextKeyId, newId);
    assert.match(enclave.stderr(), new RegExp(`NEW MASTER KEY \\(id ${newId}\\)[\\s\\S]*BACK IT UP`));
    assert.doesNotMatch(enclave.stderr() + enclave.stdout(), new RegExp(Buffer.from(newKey).toString('hex')));
    // Signing still works with the new key prepared (the workers were given it without a restart).
    await signAndVerify(client, wallets[0]!);

    const total = WALLETS * 2;
    const restart = async (): Promise<void> => {
      await client!.close();
      enclave = await spawnEnclave({ dataDir });
      client = await connect(enclave);
    };
    const killAndCheck = async (): Promise<Record<string, number>> => {
      await enclave!.kill9();
      const counts = checkEveryRowOpens(dataDir, [oldKey, newKey]);
      assert.deepEqual(
        Object.keys(counts).filter((id) => id !== oldId && id !== newId),
        [],
        'only the two keys wrap rows',
      );
      return counts;
    };

    await client.rotateMasterKey({ confirmKeyId: newId });
    // Kill 1: right after the confirmation answered (the sealing key is recorded; rows may not have moved yet).
    await killAndCheck();
    await restart();
    assert.equal((await client.masterKeyStatus()).sealingKeyId, newId, 'the confirmation survived the kill');

    // Kills 2 and 3: while rows are part moved (each page commits on its own).
    let previous = 0;
    for (const share of [0.25, 0.6]) {
      const caught = await untilPartlyMoved(dataDir, newId, total, Math.max(previous + 1, Math.floor(total * share)));
      assert.ok(caught, 'the rotation was caught half done');
      const counts = await killAndCheck();
      assert.ok((counts[newId] ?? 0) > previous && (counts[oldId] ?? 0) > 0, JSON.stringify(counts));
      previous = counts[newId] ?? 0;
      await restart();
    }
    assert.match(enclave.stderr(), new RegExp(`resuming the master-key rotation to ${newId}`));

    // A concurrent signer meanwhile: the enclave serves while it finishes.
    const done = await Promise.all([waitWhileRotating(client), signAndVerify(client, wallets[1]!)]).then(([s]) => s);
    assert.deepEqual([done.state, done.error, done.masterKeyId, done.sealingKeyId], ['idle', undefined, newId, newId]);
    assert.deepEqual(done.rowsByKeyId, { [newId]: total + 2 }, 'the shares, the ECIES key and the identity key');
    assert.equal(existsSync(nextPath), false, 'master.key.next was renamed over master.key');
    assert.equal(masterKeyId(readKeyFile(keyPath)), newId);
    assert.equal(statSync(keyPath).mode & 0o777, 0o600);
    for (let i = 0; i < wallets.length; i += 500) {
      await Promise.all(wallets.slice(i, i + 500).map((wallet) => signAndVerify(client!, wallet)));
    }

    // After a restart only the new key is on disk, and it opens everything.
    await client.close();
    await enclave.stop();
    enclave = await spawnEnclave({ dataDir });
    client = await connect(enclave);
    assert.equal((await client.masterKeyStatus()).state, 'idle');
    await signAndVerify(client, wallets[2]!);
    await signAndVerify(client, wallets[3]!);
  });
});

describe('rotating a master key given from outside (ENCLAVE_MASTER_KEY, ENCLAVE_MASTER_KEY_NEXT)', () => {
  const dataDir = tempDataDir('wcs-rotation-env-');
  const oldHex = randomBytes(32).toString('hex');
  const newHex = randomBytes(32).toString('hex');
  const oldId = masterKeyId(Uint8Array.from(Buffer.from(oldHex, 'hex')));
  const newId = masterKeyId(Uint8Array.from(Buffer.from(newHex, 'hex')));
  let enclave: EnclaveProcess | undefined;
  let client: EnclaveClient | undefined;
  after(async () => {
    await client?.close();
    await enclave?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  test('no next key: refused; with it: rotated; a start with only the old key then fails naming both key ids', async () => {
    enclave = await spawnEnclave({ dataDir, env: { ENCLAVE_MASTER_KEY: oldHex } });
    client = await connect(enclave);
    const wallets = await createWallets(client, 40);
    await assert.rejects(client.rotateMasterKey({}), (error: { code: string; message: string }) => {
      assert.equal(error.code, 'NEXT_KEY_MISSING');
      assert.match(error.message, /ENCLAVE_MASTER_KEY_NEXT/);
      return true;
    });
    assert.equal(existsSync(join(dataDir, 'enclave', 'master.key.next')), false, 'no key file for an outside key');
    await client.close();
    await enclave.stop();

    enclave = await spawnEnclave({ dataDir, env: { ENCLAVE_MASTER_KEY: oldHex, ENCLAVE_MASTER_KEY_NEXT: newHex } });
    client = await connect(enclave);
    const prepared = await client.masterKeyStatus();
    assert.deepEqual([prepared.state, prepared.nextKeyId], ['prepared', newId]);
    await assert.rejects(client.rotateMasterKey({ confirmKeyId: oldId }), { code: 'NEXT_KEY_MISMATCH' });
    await client.rotateMasterKey({ confirmKeyId: newId });
    const rotated = await waitWhileRotating(client);
    assert.equal(rotated.state, 'rotated');
    assert.deepEqual(rotated.rowsByKeyId, { [newId]: 82 });
    assert.match(rotated.action, /set ENCLAVE_MASTER_KEY to the value of ENCLAVE_MASTER_KEY_NEXT/);
    for (const wallet of wallets) await signAndVerify(client, wallet);
    await client.close();
    await enclave.stop();
    client = undefined;

    await assert.rejects(spawnEnclave({ dataDir, env: { ENCLAVE_MASTER_KEY: oldHex } }), (error: Error) => {
      assert.match(error.message, /exited \(78\)/, 'a configuration error: the supervisor does not retry it');
      assert.match(error.message, new RegExp(`master key ${newId}.*it holds ${oldId}`, 's'));
      return true;
    });
    enclave = undefined;

    // The operator swaps the values: the new key alone.
    enclave = await spawnEnclave({ dataDir, env: { ENCLAVE_MASTER_KEY: newHex } });
    client = await connect(enclave);
    const promoted = await client.masterKeyStatus();
    assert.deepEqual([promoted.state, promoted.masterKeyId, promoted.nextKeyId], ['idle', newId, undefined]);
    for (const wallet of wallets) await signAndVerify(client, wallet);
    assert.doesNotMatch(enclave.stderr() + enclave.stdout(), new RegExp(`${newHex}|${oldHex}`));
  });

  test('a file key refuses ENCLAVE_MASTER_KEY_NEXT, and an outside key refuses a master.key.next beside it', async () => {
    const fileDir = tempDataDir('wcs-rotation-mixed-');
    try {
      const first = await spawnEnclave({ dataDir: fileDir });
      await first.stop();
      await assert.rejects(
        spawnEnclave({ dataDir: fileDir, env: { ENCLAVE_MASTER_KEY_NEXT: newHex } }),
        /exited \(78\)[\s\S]*ENCLAVE_MASTER_KEY_NEXT is set but the master key comes from/,
      );
    } finally {
      rmSync(fileDir, { recursive: true, force: true });
    }
    // The outside-key store of the test above (its enclave stopped), with a stray master.key.next beside it.
    await client?.close();
    await enclave?.stop();
    client = undefined;
    enclave = undefined;
    const stray = join(dataDir, 'enclave', 'master.key.next');
    writeFileSync(stray, `${newHex}\n`, { mode: 0o600 });
    try {
      await assert.rejects(
        spawnEnclave({ dataDir, env: { ENCLAVE_MASTER_KEY: newHex } }),
        /exited \(78\)[\s\S]*master\.key\.next exists but the master key is given from outside/,
      );
    } finally {
      rmSync(stray);
    }
  });
});

describe('admin routes: GET /admin/v1/enclave/master-key, POST …/rotate', () => {
  let svc: TestService;
  before(async () => {
    svc = await startTestService();
  });
  after(async () => {
    await svc.stop();
  });

  test('prepare, confirm, follow: the service signs before, during and after', async () => {
    const partner = await svc.newPartner();
    const created = await svc.v1(partner.secret, 'POST', '/wallets', {
      type: 'SOLANA',
      userIdentifier: 'rotation-user',
      userIdentifierType: 'CUSTOM_ID',
    });
    assert.equal(created.status, 201);
    const sign = () => svc.v1(partner.secret, 'POST', `/wallets/${created.body.id}/sign-message`, { message: 'm' });
    assert.equal((await sign()).status, 200);

    const idle = await svc.admin('GET', '/enclave/master-key');
    assert.equal(idle.status, 200);
    assert.equal(idle.body.state, 'idle');
    assert.match(idle.body.masterKeyId, /^[0-9a-f]{16}$/);
    assert.equal(idle.body.masterKeyId, masterKeyId(readKeyFile(join(svc.dataDir, 'enclave', 'master.key'))));

    const prepared = await svc.admin('POST', '/enclave/master-key/rotate');
    assert.equal(prepared.status, 200);
    assert.equal(prepared.body.state, 'prepared');
    const nextKeyId: string = prepared.body.nextKeyId;
    assert.equal(masterKeyId(readKeyFile(join(svc.dataDir, 'enclave', 'master.key.next'))), nextKeyId);
    assert.doesNotMatch(JSON.stringify(prepared.body), /[0-9a-f]{64}/, 'no key material in the answer');

    const wrong = await svc.admin('POST', '/enclave/master-key/rotate', { confirmKeyId: idle.body.masterKeyId });
    assert.equal(wrong.status, 409);
    assert.equal(wrong.body.code, 'NEXT_KEY_MISMATCH');
    assert.ok(wrong.body.requestId);

    const started = await svc.admin('POST', '/enclave/master-key/rotate', { confirmKeyId: nextKeyId });
    assert.equal(started.status, 202);
    assert.equal(started.body.sealingKeyId, nextKeyId);
    assert.equal((await sign()).status, 200);
    let status = started.body;
    while (status.state === 'rotating') status = (await svc.admin('GET', '/enclave/master-key')).body;
    assert.deepEqual([status.state, status.masterKeyId, status.error], ['idle', nextKeyId, undefined]);
    assert.equal((await sign()).status, 200);
  });

  test('bad bodies are 400s with the error envelope', async () => {
    for (const body of [{ confirmKeyId: 'xyz' }, { confirmKeyId: 12 }, { confirm: 'aaaaaaaaaaaaaaaa' }, []]) {
      const r = await svc.admin('POST', '/enclave/master-key/rotate', body);
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.ok(r.body.code && r.body.message && r.body.requestId, JSON.stringify(r.body));
    }
  });
});
