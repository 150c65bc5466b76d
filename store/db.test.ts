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
