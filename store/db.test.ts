import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { drizzle } from 'drizzle-orm/better-sqlite3';
import { migrate } from 'drizzle-orm/better-sqlite3/migrator';
import { openServiceDb } from './db.ts';

const MIGRATIONS = path.join(import.meta.dirname, 'migrations');

test('upgrade: a database made by the first migration only is brought forward at boot, rows kept', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wcs-migrate-'));
  // The migrations of the first release only.
  const old = path.join(dir, 'migrations-v1');
  fs.cpSync(MIGRATIONS, old, { recursive: true });
  const journal = JSON.parse(fs.readFileSync(path.join(old, 'meta/_journal.json'), 'utf8'));
  const [first, ...later] = journal.entries as Array<{ tag: string }>;
  assert.ok(first && later.length > 0, 'there is at least one migration after the first');
  for (const e of later) fs.rmSync(path.join(old, `${e.tag}.sql`));
  fs.writeFileSync(path.join(old, 'meta/_journal.json'), JSON.stringify({ ...journal, entries: [first] }));

  const file = path.join(dir, 'service.db');
  const v1 = new Database(file);
  migrate(drizzle(v1), { migrationsFolder: old });
  v1.prepare("insert into projects (id, name, plan, created_at) values ('p', 'p', 'free', 'now')").run();
  v1.close();

  const { sqlite } = openServiceDb(file);
  const indexes = sqlite
    .prepare("select name from sqlite_master where type = 'index' and tbl_name = 'wallets'")
    .all()
    .map((r) => (r as { name: string }).name);
  assert.ok(indexes.includes('wallets_project_user'));
  assert.ok(!indexes.includes('wallets_status'));
  assert.equal((sqlite.prepare('select count(*) as n from projects').get() as { n: number }).n, 1);
  const applied = sqlite.prepare('select count(*) as n from __drizzle_migrations').get() as { n: number };
  assert.equal(applied.n, journal.entries.length);
  sqlite.close();
  fs.rmSync(dir, { recursive: true });
});

/** A database migrated up to (and including) the migration tagged `lastTag`, as an older release left it. */
function databaseUpTo(dir: string, lastTag: string): Database.Database {
  const old = path.join(dir, `migrations-${lastTag}`);
  fs.cpSync(MIGRATIONS, old, { recursive: true });
  const journal = JSON.parse(fs.readFileSync(path.join(old, 'meta/_journal.json'), 'utf8'));
  const entries = journal.entries as Array<{ tag: string }>;
  const keep = entries.slice(0, entries.findIndex((e) => e.tag === lastTag) + 1);
  assert.ok(keep.length > 0 && keep.length < entries.length, `${lastTag} is a migration with later ones`);
  for (const e of entries.slice(keep.length)) fs.rmSync(path.join(old, `${e.tag}.sql`));
  fs.writeFileSync(path.join(old, 'meta/_journal.json'), JSON.stringify({ ...journal, entries: keep }));
  const db = new Database(path.join(dir, 'service.db'));
  migrate(drizzle(db), { migrationsFolder: old });
  return db;
}

test('upgrade to the holds table: every unresolved record keeps holding its wallet and chain, resolved ones do not', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wcs-migrate-holds-'));
  const before = databaseUpTo(dir, '0007_idempotency_keys');
  const insert = before.prepare(
    `insert into transactions (id, project_id, wallet_id, intent_kind, type, chain_key, status, unresolved, watched,
       created_at, updated_at, seq, nonce)
     values (?, 'p', ?, 'transfer', 'EVM', 'evm:1', ?, ?, ?, 'then', 'then', ?, ?)`,
  );
  insert.run('held', 'w1', 'submitted', 1, 1, 1, 4);
  insert.run('done', 'w1', 'confirmed', 0, 0, 2, 3);
  insert.run('other', 'w2', 'failed', 0, 1, 3, 0);
  before.close();

  const { sqlite } = openServiceDb(path.join(dir, 'service.db'));
  const holds = sqlite.prepare('select wallet_id as w, chain_key as c, holder_id as h from holds').all();
  assert.deepEqual(holds, [{ w: 'w1', c: 'evm:1', h: 'held' }]);
  // The key of the table is what refuses a second holder (the old unique index is gone).
  assert.throws(
    () =>
      sqlite
        .prepare("insert into holds (wallet_id, chain_key, holder_id, created_at) values ('w1', 'evm:1', 'new', 'now')")
        .run(),
    /UNIQUE constraint failed: holds\.wallet_id, holds\.chain_key/,
  );
  const index = sqlite.prepare("select name from sqlite_master where name = 'transactions_hold'").get();
  assert.equal(index, undefined);
  sqlite.close();
  fs.rmSync(dir, { recursive: true });
});
