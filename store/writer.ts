import type Database from 'better-sqlite3';
import { wrapDriverError } from './errors.ts';

/**
 * Group commit for the service database. Writes queued during one turn of the event loop run in a
 * single SQLite transaction (one fsync), each inside its own savepoint so one failing write rolls back
 * only itself. A write's promise settles after the transaction committed: a resolved write is durable.
 */
export function createWriter(sqlite: Database.Database) {
  type Job = { fn: () => unknown; resolve: (v: unknown) => void; reject: (e: unknown) => void };
  let queue: Job[] = [];
  let scheduled = false;
  const begin = sqlite.prepare('BEGIN IMMEDIATE');
  const commit = sqlite.prepare('COMMIT');
  const rollback = sqlite.prepare('ROLLBACK');
  const savepoint = sqlite.prepare('SAVEPOINT w');
  const release = sqlite.prepare('RELEASE w');
  const rollbackTo = sqlite.prepare('ROLLBACK TO w');

  function flush(): void {
    scheduled = false;
    const jobs = queue;
    queue = [];
    if (jobs.length === 0) return;
    const outcomes: Array<{ ok: boolean; value: unknown }> = [];
    try {
      begin.run();
    } catch (err) {
      for (const j of jobs) j.reject(wrapDriverError(err));
      return;
    }
    for (const job of jobs) {
      savepoint.run();
      try {
        const value = job.fn();
        release.run();
        outcomes.push({ ok: true, value });
      } catch (err) {
        rollbackTo.run();
        release.run();
        outcomes.push({ ok: false, value: err });
      }
    }
    try {
      commit.run();
    } catch (err) {
      try {
        rollback.run();
      } catch {
        // the transaction is already gone
      }
      for (const j of jobs) j.reject(wrapDriverError(err));
      return;
    }
    jobs.forEach((job, i) => {
      const o = outcomes[i]!;
      if (o.ok) job.resolve(o.value);
      else job.reject(o.value);
    });
  }

  return {
    /** Runs `fn` inside the next group transaction; resolves with its result once committed. */
    write<T>(fn: () => T): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        queue.push({ fn, resolve: resolve as (v: unknown) => void, reject });
        if (!scheduled) {
          scheduled = true;
          setImmediate(flush);
        }
      });
    },
    /** Commits whatever is queued now (used at shutdown). */
    flush,
  };
}

export type Writer = ReturnType<typeof createWriter>;
