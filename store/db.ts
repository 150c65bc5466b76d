import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { type BetterSQLite3Database, drizzle } from 'drizzle-orm/better-sqlite3';
import { migrate } from 'drizzle-orm/better-sqlite3/migrator';
import * as schema from './schema.ts';

export type Db = BetterSQLite3Database<typeof schema>;

/** The committed migrations folder: beside this file in the sources, found by walking up from a dist/ bundle. */
function migrationsFolder(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    for (const candidate of [path.join(dir, 'migrations'), path.join(dir, 'store', 'migrations')]) {
      if (fs.existsSync(path.join(candidate, 'meta', '_journal.json'))) return candidate;
    }
    const up = path.dirname(dir);
    if (up === dir) throw new Error('store/migrations not found');
    dir = up;
  }
}
const MIGRATIONS = migrationsFolder();

/**
 * Opens (creating if needed) the service database: WAL, foreign keys on, a busy timeout. Commits do not
 * wait for the disk (`synchronous = NORMAL`): the group-commit writer fsyncs the WAL off the event loop
 * and acknowledges a write only after that (see writer.ts). Applies the committed migrations.
 */
export function openServiceDb(file: string): { db: Db; sqlite: Database.Database } {
  if (file !== ':memory:') {
    fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    // Created 0600 before SQLite opens it: its -wal and -shm files take the same mode.
    fs.closeSync(fs.openSync(file, 'a', 0o600));
  }
  const sqlite = new Database(file);
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('foreign_keys = ON');
  sqlite.pragma('busy_timeout = 5000');
  const db = drizzle(sqlite, { schema });
  migrate(db, { migrationsFolder: MIGRATIONS });
  return { db, sqlite };
}
