import { createHash } from 'node:crypto';
import path from 'node:path';
import Database from 'better-sqlite3';

/** The tables whose contents a refused request must leave untouched. */
export const WATCHED_TABLES = [
  'wallets',
  'projects',
  'api_keys',
  'actor_snapshots',
  'actor_inbox',
  'actor_effects',
  'outbox',
  'idempotency_keys',
] as const;

/** Row count and a digest of every row of each table of the service database. */
export type DbSnapshot = Record<string, { rows: number; digest: string }>;

/**
 * Reads the service database file through a separate read-only connection (what is committed, as an
 * operator would see it) and records, per table, the row count and a SHA-256 of all its rows.
 */
export function snapshotDb(dataDir: string): DbSnapshot {
  const db = new Database(path.join(dataDir, 'service.db'), { readonly: true, fileMustExist: true });
  try {
    const tables = db
      .prepare("select name from sqlite_master where type = 'table' and name not like 'sqlite_%' order by name")
      .all() as Array<{ name: string }>;
    const out: DbSnapshot = {};
    for (const { name } of tables) {
      const rows = db.prepare(`select * from "${name}" order by rowid`).all();
      out[name] = {
        rows: rows.length,
        digest: createHash('sha256')
          .update(JSON.stringify(rows, (_k, v) => (typeof v === 'bigint' ? v.toString() : v)))
          .digest('hex'),
      };
    }
    return out;
  } finally {
    db.close();
  }
}

/** Human-readable differences between two snapshots; empty when nothing was written. */
export function snapshotChanges(before: DbSnapshot, after: DbSnapshot): string[] {
  const changes: string[] = [];
  for (const t of WATCHED_TABLES) {
    if (!before[t] || !after[t]) changes.push(`table ${t} is missing from the service database`);
  }
  for (const t of new Set([...Object.keys(before), ...Object.keys(after)])) {
    const a = before[t];
    const b = after[t];
    if (!a || !b) continue;
    if (a.rows !== b.rows) changes.push(`${t}: ${a.rows} rows before, ${b.rows} after`);
    else if (a.digest !== b.digest) changes.push(`${t}: same ${a.rows} rows but their contents changed`);
  }
  return changes;
}
