import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, test } from 'node:test';
import Database from 'better-sqlite3';
import { createEnclaveClient } from '../enclave/client.ts';
import { startTestService, type TestService } from './helpers/service.ts';

let svc: TestService;
before(async () => {
  svc = await startTestService();
});
after(async () => {
  await svc.stop();
});

test('killing the enclave mid-load: 503s, a restarted enclave, and no lost or half-created wallet', async () => {
  const partner = await svc.newPartner();
  const answers: Array<{ status: number; body: any; headers: Headers; i: number }> = [];
  let next = 0;
  const TOTAL = 400;
  let killed = false;
  const worker = async () => {
    while (next < TOTAL) {
      const i = next++;
      if (i === 120 && !killed) {
        killed = true;
        // Kill -9 while requests are in flight; the enclave comes back a moment later.
        void svc.restartEnclave();
      }
      const type = ['EVM', 'SOLANA', 'COSMOS', 'STELLAR', 'SUI'][i % 5];
      const r = await svc.v1(partner.secret, 'POST', '/wallets', {
        type,
        userIdentifier: `crash-${i}`,
        userIdentifierType: 'CUSTOM_ID',
      });
      answers.push({ ...r, i });
    }
  };
  await Promise.all(Array.from({ length: 32 }, worker));

  const created = answers.filter((a) => a.status === 201);
  const unavailable = answers.filter((a) => a.status === 503);
  const other = answers.filter((a) => a.status !== 201 && a.status !== 503);
  assert.deepEqual(
    other.map((a) => [a.status, a.body]),
    [],
    'every answer is a 201 or a 503',
  );
  assert.ok(unavailable.length > 0, 'some creates met the dead enclave');
  assert.ok(created.length > 0);
  for (const u of unavailable) {
    assert.match(u.body.code, /^ENCLAVE_(UNAVAILABLE|TIMEOUT)$/);
    assert.equal(u.headers.get('retry-after'), '1');
  }

  // After the restart the service creates wallets again.
  await svc.waitReady();
  const afterwards = await svc.v1(partner.secret, 'POST', '/wallets', {
    type: 'EVM',
    userIdentifier: 'after-restart',
    userIdentifierType: 'CUSTOM_ID',
  });
  assert.equal(afterwards.status, 201);

  // No half-created wallet: nothing is left in `creating`, and every answered wallet is stored as ready.
  const db = new Database(path.join(svc.dataDir, 'service.db'), { readonly: true });
  const rows = db.prepare('select id, scheme, status, public_key, address from wallets').all() as Array<{
    id: string;
    scheme: 'DKLS' | 'ED25519';
    status: string;
    public_key: string;
    address: string;
  }>;
  const live = db.prepare('select count(*) as n from actor_snapshots where done = 0').get() as { n: number };
  db.close();
  assert.equal(rows.filter((r) => r.status !== 'ready').length, 0);
  assert.equal(live.n, 0);
  const byId = new Map(rows.map((r) => [r.id, r]));
  for (const c of created) {
    const row = byId.get(c.body.id);
    assert.ok(row, `answered wallet ${c.body.id} is stored`);
    assert.equal(row.address, c.body.address);
  }
  // A 503 left no wallet behind for its identity: the partner's retry creates it.
  const retry = await svc.v1(partner.secret, 'POST', '/wallets', {
    type: ['EVM', 'SOLANA', 'COSMOS', 'STELLAR', 'SUI'][unavailable[0]!.i % 5],
    userIdentifier: `crash-${unavailable[0]!.i}`,
    userIdentifierType: 'CUSTOM_ID',
  });
  assert.equal(retry.status, 201);

  // Every stored wallet's key is in the restarted enclave, unchanged.
  const client = createEnclaveClient({ socketPath: svc.config.enclaveSocket });
  await client.connect();
  try {
    for (const r of rows) {
      const k = await client.generateKey({ walletId: r.id, scheme: r.scheme });
      assert.equal(k.created, false, `wallet ${r.id} key survived the crash`);
    }
  } finally {
    await client.close();
  }
});
