/**
 * Actors as the operator sees them: a wallet actor the service cannot run is faulted at start instead of failing
 * at every boot, listed by the admin API and the CLI, retried or abandoned; a stored actor newer than the code
 * stops the API's start with a message naming it.
 */

import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import { nodeArgs } from './helpers/entry.ts';
import {
  ROOT,
  startEnclaveProcess,
  startTestService,
  stopProcess,
  type TestService,
  tempDataDir,
} from './helpers/service.ts';

const run = promisify(execFile);

/** A wallet row in `creating` whose actor row cannot be read (as if written by a broken release). */
function plantBrokenWallet(dataDir: string, projectId: string): string {
  const id = randomUUID();
  const db = new Database(path.join(dataDir, 'service.db'));
  const now = new Date().toISOString();
  const seq = (db.prepare('select coalesce(max(seq), 0) + 1 from wallets').pluck().get() as number) ?? 1;
  db.prepare(
    `insert into wallets (id, project_id, type, scheme, status, user_identifier, user_identifier_type, custody,
                          created_at, updated_at, seq)
     values (?, ?, 'EVM', 'DKLS', 'creating', ?, 'CUSTOM_ID', 'managed', ?, ?, ?)`,
  ).run(id, projectId, `broken-${id}`, now, now, seq);
  db.prepare(
    `insert into actor_snapshots (actor_id, machine, machine_version, snapshot, state, step, updated_at)
     values (?, 'wallet', 2, '{"value": "creating", "context": ', 'creating', 1, ?)`,
  ).run(id, now);
  db.prepare(
    `insert into actor_effects (key, actor_id, invoke_id, src, input, created_at)
     values (?, ?, '0.wallet.creating', 'generateKey', '{}', ?)`,
  ).run(`${id}:1:0`, id, now);
  db.close();
  return id;
}

describe('faulted actors through the admin API and the CLI', () => {
  let svc: TestService;
  let secret: string;
  let broken: string;

  before(async () => {
    const first = await startTestService();
    const partner = await first.newPartner();
    secret = partner.secret;
    await first.stop({ keepData: true });
    broken = plantBrokenWallet(first.dataDir, partner.projectId);
    svc = await startTestService({}, { dataDir: first.dataDir });
    await svc.waitReady();
  });
  after(async () => {
    await svc?.stop();
  });

  test('an actor that cannot be loaded is faulted at start, not retried at every boot', async () => {
    const list = await svc.admin('GET', '/actors?faulted=true');
    assert.equal(list.status, 200);
    const found = list.body.data.find((a: { actorId: string }) => a.actorId === broken);
    assert.ok(found, JSON.stringify(list.body));
    assert.equal(found.machine, 'wallet');
    assert.equal(found.status, 'faulted');
    assert.equal(found.state, 'creating');
    assert.match(found.faultReason, /could not be loaded/);
    const ready = (await fetch(`${svc.url}/readyz`).then((r) => r.json())) as { checks: Record<string, boolean> };
    assert.equal(ready.checks.actors, true, 'the start finished its recovery');
    const one = await svc.admin('GET', `/actors/${broken}`);
    assert.equal(one.status, 200);
    assert.deepEqual(
      one.body.effects.map((e: { src: string }) => e.src),
      ['generateKey'],
    );
  });

  test('the CLI lists faulted actors', async () => {
    const { stdout } = await run(
      process.execPath,
      nodeArgs('bin/admin', 'list-actors', '--faulted', '--url', svc.adminUrl),
      { cwd: ROOT, env: { ...process.env, ADMIN_TOKEN: svc.adminToken } },
    );
    assert.match(stdout, new RegExp(`${broken}\\s+wallet v2\\s+creating\\s+faulted\\s+\\(could not be loaded`));
  });

  test('retry runs it again (it faults again); abandon ends it and removes the wallet it never handed out', async () => {
    const retried = await svc.admin('POST', `/actors/${broken}/retry`);
    assert.equal(retried.status, 200);
    assert.equal(retried.body.status, 'faulted');
    const abandoned = await svc.admin('POST', `/actors/${broken}/abandon`);
    assert.equal(abandoned.status, 200);
    assert.equal(abandoned.body.status, 'done');
    assert.ok(abandoned.body.abandonedAt);
    assert.deepEqual(abandoned.body.effects, []);
    assert.equal((await svc.v1(secret, 'GET', `/wallets/${broken}`)).status, 404);
    const again = await svc.admin('POST', `/actors/${broken}/abandon`);
    assert.equal(again.status, 409);
    assert.equal(again.body.code, 'ACTOR_NOT_FAULTED');
    assert.equal((await svc.admin('GET', '/actors/no-such-actor')).body.code, 'ACTOR_NOT_FOUND');
    const bad = await svc.admin('GET', '/actors?cursor=bm9wZQ');
    assert.equal(bad.status, 400);
    assert.equal(bad.body.code, 'INVALID_CURSOR');
  });

  test('a healthy wallet actor is listed while it is created and gone once ready', async () => {
    const created = await svc.v1(secret, 'POST', '/wallets', {
      type: 'SOLANA',
      userIdentifier: 'listed',
      userIdentifierType: 'CUSTOM_ID',
    });
    assert.equal(created.status, 201);
    const list = await svc.admin('GET', '/actors?machine=wallet');
    assert.equal(
      list.body.data.some((a: { actorId: string }) => a.actorId === created.body.id),
      false,
      'a finished actor is not listed',
    );
    const done = await svc.admin('GET', `/actors/${created.body.id}`);
    assert.equal(done.body.status, 'done');
    assert.equal(done.body.state, 'ready');
  });
});

test('a stored actor newer than this release stops the API start, naming it (exit 78)', async () => {
  const dataDir = tempDataDir();
  const first = await startTestService({}, { dataDir });
  await first.stop({ keepData: true });
  const db = new Database(path.join(dataDir, 'service.db'));
  db.prepare(
    `insert into actor_snapshots (actor_id, machine, machine_version, snapshot, state, updated_at)
     values ('from-the-future', 'wallet', 99, '{}', 'creating', 'now')`,
  ).run();
  db.close();
  const enclave = await startEnclaveProcess(dataDir);
  try {
    const api = spawn(process.execPath, nodeArgs('api/main'), {
      cwd: ROOT,
      env: {
        ...process.env,
        DATA_DIR: dataDir,
        PORT: '0',
        ADMIN_PORT: '0',
        ADMIN_TOKEN: 'test-admin-token-0123456789abcdefgh',
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    api.stderr?.on('data', (d) => {
      stderr += String(d);
    });
    const code = await new Promise<number | null>((resolve) => api.once('exit', (c) => resolve(c)));
    assert.equal(code, 78, stderr);
    assert.match(stderr, /from-the-future.*v99.*newer than this code's v2/s);
  } finally {
    await stopProcess(enclave);
  }
});

test('past the bound of live actors, wallet creation answers 503 SERVICE_BUSY with Retry-After, nothing half-made', async () => {
  const svc = await startTestService({}, { api: { maxLiveActors: 1 } });
  try {
    const { secret } = await svc.newPartner();
    const answers = await Promise.all(
      Array.from({ length: 24 }, (_, i) =>
        svc.v1(secret, 'POST', '/wallets', {
          type: 'EVM',
          userIdentifier: `busy-${i}`,
          userIdentifierType: 'CUSTOM_ID',
        }),
      ),
    );
    const busy = answers.filter((a) => a.status === 503);
    assert.ok(busy.length > 0, 'some creations met the bound');
    for (const b of busy) {
      assert.equal(b.body.code, 'SERVICE_BUSY');
      assert.equal(b.headers.get('retry-after'), '1');
    }
    assert.ok(answers.every((a) => a.status === 201 || a.status === 503));
    const listed = await svc.v1(secret, 'GET', '/wallets?limit=100');
    assert.equal(listed.body.data.length, answers.filter((a) => a.status === 201).length, 'no wallet row for a 503');
    // Once the burst is over, creation works again.
    const later = await svc.v1(secret, 'POST', '/wallets', {
      type: 'EVM',
      userIdentifier: 'after-the-burst',
      userIdentifierType: 'CUSTOM_ID',
    });
    assert.equal(later.status, 201);
  } finally {
    await svc.stop();
  }
});
