import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { openServiceDb } from './db.ts';
import { createStore } from './index.ts';
import { createWriter } from './writer.ts';

function tempDb() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wcs-store-'));
  return { file: path.join(dir, 'service.db'), dir };
}

test('migrations apply to an empty file and again to an existing one', () => {
  const { file, dir } = tempDb();
  createStore(file).close();
  const store = createStore(file);
  const tables = store.sqlite
    .prepare("select name from sqlite_master where type='table' and name not like 'sqlite_%' order by name")
    .all()
    .map((r) => (r as { name: string }).name);
  for (const t of ['actor_effects', 'actor_inbox', 'actor_snapshots', 'api_keys', 'outbox', 'projects', 'wallets'])
    assert.ok(tables.includes(t), t);
  assert.equal(store.sqlite.pragma('journal_mode', { simple: true }), 'wal');
  assert.equal(store.sqlite.pragma('foreign_keys', { simple: true }), 1);
  assert.equal(store.sqlite.pragma('synchronous', { simple: true }), 1, 'NORMAL: the writer fsyncs the WAL itself');
  store.close();
  fs.rmSync(dir, { recursive: true });
});

test('group commit: concurrent writes share one transaction, a failing one rolls back only itself', async () => {
  const { file, dir } = tempDb();
  const store = createStore(file);
  const now = new Date().toISOString();
  const inserts = Array.from({ length: 50 }, (_, i) =>
    store.writer.write(() => store.projects.insert({ id: `p${i}`, name: `n${i}`, plan: 'free', createdAt: now })),
  );
  const dup = store.writer.write(() => store.projects.insert({ id: 'p1', name: 'dup', plan: 'free', createdAt: now }));
  const results = await Promise.allSettled([...inserts, dup]);
  assert.equal(results.filter((r) => r.status === 'fulfilled').length, 50);
  const rejected = results.filter((r) => r.status === 'rejected') as PromiseRejectedResult[];
  assert.equal(rejected.length, 1);
  assert.equal((rejected[0]!.reason as { code: string }).code, 'SQLITE_CONSTRAINT_PRIMARYKEY');
  store.close();
  // What resolved is on disk: a fresh connection sees all fifty and not the duplicate's name.
  const raw = new Database(file, { readonly: true });
  assert.equal((raw.prepare('select count(*) n from projects').get() as { n: number }).n, 50);
  assert.equal((raw.prepare("select name from projects where id='p1'").get() as { name: string }).name, 'n1');
  raw.close();
  fs.rmSync(dir, { recursive: true });
});

test('a write resolves only after the WAL is synced; a failed sync rejects the whole batch', async () => {
  const { file, dir } = tempDb();
  const { sqlite } = openServiceDb(file);
  const pendingSyncs: Array<(err: NodeJS.ErrnoException | null) => void> = [];
  const writer = createWriter(sqlite, { walFile: `${file}-wal`, datasync: (_fd, cb) => pendingSyncs.push(cb) });
  const now = new Date().toISOString();
  let resolved = false;
  const first = writer
    .write(() =>
      sqlite.prepare("insert into projects (id, name, plan, created_at) values ('a', 'a', 'free', ?)").run(now),
    )
    .then(() => {
      resolved = true;
    });
  await new Promise((r) => setImmediate(r));
  await new Promise((r) => setImmediate(r));
  // Committed (visible to a read) but not acknowledged until the sync returns.
  assert.equal((sqlite.prepare('select count(*) n from projects').get() as { n: number }).n, 1);
  assert.equal(resolved, false);
  assert.equal(pendingSyncs.length, 1);
  pendingSyncs[0]!(null);
  await first;
  assert.equal(resolved, true);

  const second = writer.write(() => 1);
  const third = writer.write(() => 2);
  await new Promise((r) => setImmediate(r));
  await new Promise((r) => setImmediate(r));
  assert.equal(pendingSyncs.length, 2, 'one sync for the batch of two');
  pendingSyncs[1]!(Object.assign(new Error('EIO'), { code: 'EIO' }));
  await assert.rejects(second, { code: 'STORE_SYNC_FAILED' });
  await assert.rejects(third, { code: 'STORE_SYNC_FAILED' });
  writer.close();
  sqlite.close();
  fs.rmSync(dir, { recursive: true });
});

test('the writer is bounded: past maxPending new work is refused at once, finishing work is not', async () => {
  const { file, dir } = tempDb();
  const { sqlite } = openServiceDb(file);
  const syncs: Array<(err: NodeJS.ErrnoException | null) => void> = [];
  // A disk that does not return: committed batches pile up waiting for their sync.
  const writer = createWriter(sqlite, { walFile: `${file}-wal`, datasync: (_fd, cb) => syncs.push(cb), maxPending: 3 });
  const admitted = [writer.write(() => 1), writer.write(() => 2), writer.write(() => 3)];
  await assert.rejects(
    writer.write(() => 4),
    { code: 'STORE_OVERLOADED', httpStatus: 503, transient: true },
  );
  const finishing = writer.write(() => 5, { bounded: false });
  assert.equal(writer.pending, 4);
  await new Promise((r) => setImmediate(r));
  await new Promise((r) => setImmediate(r));
  for (const cb of syncs) cb(null);
  assert.deepEqual(await Promise.all([...admitted, finishing]), [1, 2, 3, 5]);
  assert.equal(writer.pending, 0);
  // Room again: the next write is admitted (and settles with its sync).
  const next = writer.write(() => 6);
  await new Promise((r) => setImmediate(r));
  await new Promise((r) => setImmediate(r));
  syncs[syncs.length - 1]!(null);
  assert.equal(await next, 6);
  writer.close();
  sqlite.close();
  fs.rmSync(dir, { recursive: true });
});

test('afterDurable hooks run once their batch is on disk, never for a write rolled back or a batch not synced', async () => {
  const { file, dir } = tempDb();
  const { sqlite } = openServiceDb(file);
  const syncs: Array<(err: NodeJS.ErrnoException | null) => void> = [];
  const writer = createWriter(sqlite, { walFile: `${file}-wal`, datasync: (_fd, cb) => syncs.push(cb) });
  const ran: string[] = [];
  const tick = async () => {
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
  };
  const kept = writer.write(() => writer.afterDurable(() => ran.push('kept')));
  const rolledBack = writer.write(() => {
    writer.afterDurable(() => ran.push('rolled back'));
    throw new Error('this write fails');
  });
  await tick();
  assert.equal(ran.length, 0, 'committed, not yet synced: no hook has run');
  // The next batch commits while the first one's sync is under way; its hook waits for a sync of its own, which
  // starts only once the running one returns.
  const second = writer.write(() => writer.afterDurable(() => ran.push('second')));
  await tick();
  assert.equal(syncs.length, 1, 'one fdatasync at a time');
  syncs[0]!(null);
  await kept;
  await assert.rejects(rolledBack, /this write fails/);
  assert.deepEqual(ran, ['kept']);
  assert.equal(syncs.length, 2, 'the waiting batch got its own fdatasync when the first returned');
  syncs[1]!(Object.assign(new Error('EIO'), { code: 'EIO' }));
  await assert.rejects(second, { code: 'STORE_SYNC_FAILED' });
  assert.deepEqual(ran, ['kept'], 'a batch whose sync failed runs no hook');
  assert.throws(() => writer.afterDurable(() => undefined), /inside a write/);
  writer.close();
  sqlite.close();
  fs.rmSync(dir, { recursive: true });
});

test('batches committed while an fdatasync runs share the next one, and none settles before it returns', async () => {
  const { file, dir } = tempDb();
  const { sqlite } = openServiceDb(file);
  sqlite.exec('create table t (v integer)');
  const syncs: Array<(err: NodeJS.ErrnoException | null) => void> = [];
  const writer = createWriter(sqlite, { walFile: `${file}-wal`, datasync: (_fd, cb) => syncs.push(cb) });
  const tick = () => new Promise((r) => setImmediate(r));
  const settled: number[] = [];
  const write = (v: number) =>
    writer.write(() => sqlite.prepare('insert into t values (?)').run(v)).then(() => settled.push(v));
  const first = write(1);
  await tick();
  // Three more batches, each committed in its own turn while the first fdatasync runs.
  const later = [write(2)];
  await tick();
  later.push(write(3));
  await tick();
  later.push(write(4));
  await tick();
  assert.equal(syncs.length, 1);
  assert.equal((sqlite.prepare('select count(*) as n from t').get() as { n: number }).n, 4, 'all four committed');
  assert.deepEqual(settled, [], 'committed is not durable: nothing settles before its fdatasync');
  syncs[0]!(null);
  await first;
  await tick();
  assert.deepEqual(settled, [1]);
  assert.equal(syncs.length, 2, 'one fdatasync for the three batches that waited');
  syncs[1]!(null);
  await Promise.all(later);
  assert.deepEqual(settled, [1, 2, 3, 4]);
  assert.equal(syncs.length, 2);
  writer.close();
  sqlite.close();
  fs.rmSync(dir, { recursive: true });
});
