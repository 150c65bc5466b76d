import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/**
 * Checkpoints the service database's WAL on a thread of its own. SQLite's automatic checkpoint runs inside the
 * COMMIT that crosses the threshold, on the connection that commits: the API's event loop, which then copies pages
 * into the database file and fsyncs it for 10–25 ms while no request is answered (measured under transfer load).
 * The main connection turns it off (`wal_autocheckpoint = 0`) and this worker's own connection runs a PASSIVE
 * checkpoint every `everyMs`: it copies what is committed without blocking the writer or readers, and the next
 * write starts the WAL over once everything in it is in the database file. Litestream's own checkpoints work the same
 * way beside it.
 *
 * The worker is plain JavaScript evaluated from a string: tsx's hooks do not reach worker threads on Node 20.
 */
const WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file);
db.pragma('busy_timeout = 5000');
setInterval(() => {
  try {
    const [row] = db.pragma('wal_checkpoint(PASSIVE)');
    parentPort.postMessage({ ok: true, busy: row.busy, log: row.log, checkpointed: row.checkpointed });
  } catch (err) {
    parentPort.postMessage({ ok: false, message: String(err && err.message) });
  }
}, workerData.everyMs);
`;

export interface CheckpointReport {
  ok: boolean;
  /** WAL frames, and those copied into the database file, after the checkpoint. */
  log?: number;
  checkpointed?: number;
  message?: string;
}

/**
 * Starts the worker. `onFailure` runs if it cannot start or stops by itself: the caller then turns SQLite's automatic
 * checkpoint back on, so the WAL never grows without bound.
 */
export function startCheckpointer(opts: {
  file: string;
  everyMs?: number;
  onReport?: (r: CheckpointReport) => void;
  onFailure: (err: unknown) => void;
}) {
  // The driver by absolute path: an evaluated worker resolves modules from the working directory, which a service
  // manager may set anywhere.
  const driver = createRequire(import.meta.url).resolve('better-sqlite3');
  const worker = new Worker(WORKER, {
    eval: true,
    workerData: { file: opts.file, everyMs: opts.everyMs ?? 1_000, driver },
  });
  worker.unref();
  let ending = false;
  worker.on('message', (m: CheckpointReport) => opts.onReport?.(m));
  worker.on('error', (err) => {
    if (!ending) opts.onFailure(err);
  });
  worker.on('exit', (code) => {
    if (!ending) opts.onFailure(new Error(`the checkpoint worker exited with ${code}`));
    ending = true;
  });
  return {
    /**
     * Ends the worker at once (the store is closing). A checkpoint cut short is harmless: the WAL keeps every
     * committed frame until one completes, and the next start's connection finishes the work.
     */
    terminate(): void {
      ending = true;
      void worker.terminate();
    },
  };
}
