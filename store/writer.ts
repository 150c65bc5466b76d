import fs from 'node:fs';
import type Database from 'better-sqlite3';
import { StoreError, wrapDriverError } from './errors.ts';

/**
 * Group commit for the service database.
 *
 * Writes queued during one turn of the event loop run in a single SQLite transaction, each inside its
 * own savepoint so one failing write rolls back only itself. The database runs in WAL mode with
 * `synchronous = NORMAL`, so COMMIT appends the transaction to the WAL without waiting for the disk; the
 * writer then `fdatasync`s the WAL file on libuv's thread pool and settles the batch's promises only when
 * an fdatasync started after that COMMIT returns. A resolved write is therefore on disk (as with
 * `synchronous = FULL`), while the event loop never blocks on the fsync and the next batches commit while
 * the previous one is being synced (one fdatasync at a time covers all of them: `syncCommitted`).
 *
 * What follows for callers: act on the outside world (answer a partner, sign, broadcast) only after the
 * write's promise resolved. A read in the same process may see a committed batch a moment before its
 * fsync returns; a power cut in that moment loses that batch whole (WAL frames are replayed in order, so
 * nothing later survives without it).
 */
/** Default bound on writes in flight: far above what group commit meets in practice (a few hundred per batch). */
export const DEFAULT_MAX_PENDING = 20_000;

export function createWriter(
  sqlite: Database.Database,
  opts: {
    /** The WAL file to fsync; without one (an in-memory database) a commit is all there is. */
    walFile?: string;
    /** How to fsync a file descriptor off the event loop (node's `fs.fdatasync`). */
    datasync?: (fd: number, cb: (err: NodeJS.ErrnoException | null) => void) => void;
    /**
     * Most writes admitted at once (queued, or committed and waiting for their sync). Past it, a bounded
     * write rejects at once with the transient STORE_OVERLOADED (503) instead of queueing without end.
     */
    maxPending?: number;
  } = {},
) {
  const datasync = opts.datasync ?? fs.fdatasync;
  const maxPending = opts.maxPending ?? DEFAULT_MAX_PENDING;
  /** Writes admitted and not yet settled. */
  let pending = 0;
  type Job = { fn: () => unknown; resolve: (v: unknown) => void; reject: (e: unknown) => void };
  let queue: Job[] = [];
  let scheduled = false;
  let walFd: number | undefined;
  /** Hooks registered by the write running now (see `afterDurable`); null outside a write. */
  let jobHooks: Array<() => void> | null = null;
  const begin = sqlite.prepare('BEGIN IMMEDIATE');
  const commit = sqlite.prepare('COMMIT');
  const rollback = sqlite.prepare('ROLLBACK');
  const savepoint = sqlite.prepare('SAVEPOINT w');
  const release = sqlite.prepare('RELEASE w');
  const rollbackTo = sqlite.prepare('ROLLBACK TO w');

  /** An fdatasync is running on the thread pool. */
  let syncing = false;
  /** Batches committed while it runs: the next fdatasync, started when it returns, covers them all. */
  let waitingForSync: Array<(err: Error | null) => void> = [];

  /** Makes what was committed so far durable, then calls `done` (at once, synchronously, when `now`). */
  function sync(now: boolean, done: (err: Error | null) => void): void {
    if (!opts.walFile) {
      done(null);
      return;
    }
    try {
      walFd ??= fs.openSync(opts.walFile, 'r');
      if (now) fs.fdatasyncSync(walFd);
    } catch (err) {
      done(err as Error);
      return;
    }
    if (now) done(null);
    else datasync(walFd, done);
  }

  /**
   * Group sync: at most one fdatasync at a time. A batch committed while one runs waits for the next, which
   * starts when the running one returns and covers every batch committed meanwhile (an fdatasync started after a
   * COMMIT returned makes that commit durable). Under load this is one fsync per round of batches instead of one
   * per batch, each running on its own thread-pool thread.
   */
  function syncCommitted(done: (err: Error | null) => void): void {
    waitingForSync.push(done);
    if (!syncing) startSync();
  }

  function startSync(): void {
    const waiters = waitingForSync;
    waitingForSync = [];
    syncing = true;
    sync(false, (err) => {
      syncing = false;
      for (const waiter of waiters) waiter(err);
      if (waitingForSync.length > 0) startSync();
    });
  }

  const settle = (job: Job, ok: boolean, value: unknown): void => {
    pending -= 1;
    if (ok) job.resolve(value);
    else job.reject(value);
  };

  function flush(now = false): void {
    scheduled = false;
    const jobs = queue;
    queue = [];
    if (jobs.length === 0) return;
    const outcomes: Array<{ ok: boolean; value: unknown }> = [];
    /** `afterDurable` hooks of the writes that succeeded, run once this batch is on disk. */
    const batchHooks: Array<() => void> = [];
    try {
      begin.run();
    } catch (err) {
      for (const j of jobs) settle(j, false, wrapDriverError(err));
      return;
    }
    for (const job of jobs) {
      savepoint.run();
      jobHooks = [];
      try {
        const value = job.fn();
        release.run();
        outcomes.push({ ok: true, value });
        batchHooks.push(...jobHooks);
      } catch (err) {
        // Rolled back: what it wrote is gone, and so are its hooks.
        rollbackTo.run();
        release.run();
        outcomes.push({ ok: false, value: err });
      } finally {
        jobHooks = null;
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
      for (const j of jobs) settle(j, false, wrapDriverError(err));
      return;
    }
    const durable = (err: Error | null): void => {
      if (err) {
        // Committed but not known to be on disk: no caller may act on it.
        const e = new StoreError('STORE_SYNC_FAILED', 'the database could not be synced to disk', {
          httpStatus: 503,
          cause: err,
        });
        for (const j of jobs) settle(j, false, e);
        return;
      }
      jobs.forEach((job, i) => {
        const o = outcomes[i]!;
        settle(job, o.ok, o.value);
      });
      for (const hook of batchHooks) hook();
    };
    if (now) sync(true, durable);
    else syncCommitted(durable);
  }

  return {
    /**
     * Runs `fn` inside the next group transaction; resolves with its result once committed and on disk.
     * New work is bounded (see `maxPending`); `{ bounded: false }` is for writes that finish work already
     * admitted (an actor applying its effect's outcome), which must not be refused for the load others bring.
     */
    write<T>(fn: () => T, { bounded = true }: { bounded?: boolean } = {}): Promise<T> {
      if (bounded && pending >= maxPending) {
        return Promise.reject(
          new StoreError('STORE_OVERLOADED', 'the service is saving more than it can take; retry shortly', {
            httpStatus: 503,
            transient: true,
          }),
        );
      }
      pending += 1;
      return new Promise<T>((resolve, reject) => {
        queue.push({ fn, resolve: resolve as (v: unknown) => void, reject });
        if (!scheduled) {
          scheduled = true;
          setImmediate(() => flush());
        }
      });
    },
    /**
     * Called inside a write: runs `hook` once the batch holding that write is committed and on disk (after the
     * batch's writes have settled), and never if the write rolls back or the batch fails to commit or sync. Work
     * that may start only once its row is durable (webhook deliveries) starts from here: a read may see a committed
     * batch before its fsync returns. The hook must not throw.
     */
    afterDurable(hook: () => void): void {
      if (!jobHooks) throw new Error('afterDurable is called inside a write');
      jobHooks.push(hook);
    },
    /** Writes admitted and not yet settled (queued, or committed and waiting for their sync). */
    get pending(): number {
      return pending;
    },
    /** Commits whatever is queued now and syncs it before returning; then closes the WAL handle (shutdown). */
    close(): void {
      flush(true);
      // The synchronous fdatasync above covered the batches still waiting for a group sync.
      const waiters = waitingForSync;
      waitingForSync = [];
      for (const waiter of waiters) waiter(null);
      if (walFd !== undefined) fs.closeSync(walFd);
      walFd = undefined;
    },
  };
}

export type Writer = ReturnType<typeof createWriter>;
