import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { InternalError } from '../chains/domain/errors.ts';

/** Name of the lock file in the data directory. */
export const LOCK_FILE = 'api.lock';

/** Another API process holds the data directory: the start must stop before it touches the database. */
export class DataDirInUseError extends InternalError {
  constructor(readonly dataDir: string) {
    super(
      'DATA_DIR_IN_USE',
      `another instance is running on this data directory (${dataDir}): stop it first, or give this one another DATA_DIR`,
    );
    this.name = 'DataDirInUseError';
  }
}

/**
 * Takes the data directory for this API process, so that two processes never restore the same actors or
 * write the same database. The lock is SQLite's exclusive lock on `api.lock` (an `fcntl` lock underneath):
 * the kernel releases it when the process ends however it ends, so a crash never leaves a stale lock and
 * no pid file has to be guessed about. Throws DataDirInUseError when another process holds it.
 */
export function lockDataDir(dataDir: string): { release(): void } {
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const file = path.join(dataDir, LOCK_FILE);
  fs.closeSync(fs.openSync(file, 'a', 0o600));
  const db = new Database(file, { timeout: 0 });
  try {
    // In exclusive locking mode the lock taken by the first write is kept until the connection closes.
    db.pragma('locking_mode = EXCLUSIVE');
    db.exec('CREATE TABLE IF NOT EXISTS holder (id INTEGER PRIMARY KEY CHECK (id = 1), pid INTEGER NOT NULL)');
    db.prepare('INSERT OR REPLACE INTO holder (id, pid) VALUES (1, ?)').run(process.pid);
  } catch (err) {
    db.close();
    if ((err as { code?: string }).code === 'SQLITE_BUSY') throw new DataDirInUseError(dataDir);
    throw err;
  }
  return { release: () => db.close() };
}
