import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, test } from 'node:test';
import Database from 'better-sqlite3';
import { createPartnerKey } from './helpers/http.ts';
import { tempDataDir } from './helpers/service.ts';
import { type RunningSupervisor, startSupervisor } from './helpers/supervisor.ts';

const ADMIN = 'api-crash-admin-token-0123456789';
let sup: RunningSupervisor | undefined;
let dataDir = '';

after(async () => {
  await sup?.stop();
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
});

test('killing the API process mid-load: the restarted API finishes every wallet it had started', async () => {
  dataDir = tempDataDir();
  sup = await startSupervisor({ DATA_DIR: dataDir, ADMIN_TOKEN: ADMIN });
  const { url } = sup;
  const waitFor = sup.waitFor;
  const key = await createPartnerKey(sup.adminUrl, ADMIN, {
    plan: 'enterprise',
    rateLimitPerMinute: 100000,
  });

  const apiPid = sup.apiPid();
  const answered: Array<{ id: string; address: string }> = [];
  let sent = 0;
  let killed = false;
  const worker = async () => {
    while (!killed || sent < 50) {
      const i = sent++;
      if (i === 150) {
        killed = true;
        process.kill(apiPid, 'SIGKILL');
      }
      try {
        const r = await fetch(`${url}/v1/wallets`, {
          method: 'POST',
          headers: { 'x-api-key': key.secretKey, 'content-type': 'application/json' },
          body: JSON.stringify({ type: 'EVM', userIdentifier: `c-${i}`, userIdentifierType: 'CUSTOM_ID' }),
        });
        if (r.status === 201) answered.push((await r.json()) as { id: string; address: string });
      } catch {
        // the connection died with the process
      }
      if (killed) return;
    }
  };
  await Promise.all(Array.from({ length: 32 }, worker));
  assert.ok(killed);

  // The supervisor restarts the API; it restores the wallets that were in `creating` and finishes them.
  await waitFor(() => /api restarted/.test(sup!.log()), 'the API restart');
  await waitFor(async () => {
    const db = new Database(path.join(dataDir, 'service.db'), { readonly: true });
    try {
      const n = db.prepare("select count(*) as n from wallets where status != 'ready'").get() as { n: number };
      return n.n === 0;
    } finally {
      db.close();
    }
  }, 'no wallet left in creating');

  const db = new Database(path.join(dataDir, 'service.db'), { readonly: true });
  const rows = db.prepare('select id, address, status from wallets').all() as Array<{ id: string; address: string }>;
  const live = db.prepare('select count(*) as n from actor_snapshots where done = 0').get() as { n: number };
  const events = db.prepare("select count(*) as n from outbox where type = 'wallet.created'").get() as { n: number };
  db.close();
  assert.equal(live.n, 0, 'no live actor left behind');
  assert.equal(events.n, rows.length, 'one wallet.created event per wallet');
  const byId = new Map(rows.map((r) => [r.id, r.address]));
  for (const a of answered) assert.equal(byId.get(a.id), a.address, `answered wallet ${a.id} kept its address`);
  assert.ok(answered.length >= 100);
  console.log(`wallets stored ${rows.length}, answered 201 ${answered.length}`);
  // And the restarted API serves them.
  const r = await fetch(`${url}/v1/wallets/${answered[0]!.id}`, { headers: { 'x-api-key': key.secretKey } });
  assert.equal(r.status, 200);
});
