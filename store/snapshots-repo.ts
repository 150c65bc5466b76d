import { eq, sql } from 'drizzle-orm';
import type { Db } from './db.ts';
import { actorSnapshots } from './schema.ts';

export type SnapshotRow = typeof actorSnapshots.$inferSelect;

/** Persisted actor snapshots. */
export function createSnapshotsRepo(db: Db) {
  const upsert = db
    .insert(actorSnapshots)
    .values({
      actorId: sql.placeholder('actorId'),
      machine: sql.placeholder('machine'),
      machineVersion: sql.placeholder('machineVersion'),
      snapshot: sql.placeholder('snapshot'),
      done: sql.placeholder('done'),
      wakeAt: sql.placeholder('wakeAt'),
      updatedAt: sql.placeholder('updatedAt'),
    })
    .onConflictDoUpdate({
      target: actorSnapshots.actorId,
      set: {
        machineVersion: sql`excluded.machine_version`,
        snapshot: sql`excluded.snapshot`,
        done: sql`excluded.done`,
        wakeAt: sql`excluded.wake_at`,
        updatedAt: sql`excluded.updated_at`,
      },
    })
    .prepare();

  return {
    save(row: SnapshotRow): void {
      upsert.run(row);
    },
    get(actorId: string): SnapshotRow | undefined {
      return db.select().from(actorSnapshots).where(eq(actorSnapshots.actorId, actorId)).get();
    },
    /** Every actor not in a final state: the host restores these at boot. */
    listLive(): SnapshotRow[] {
      return db.select().from(actorSnapshots).where(eq(actorSnapshots.done, 0)).all();
    },
  };
}

export type SnapshotsRepo = ReturnType<typeof createSnapshotsRepo>;
