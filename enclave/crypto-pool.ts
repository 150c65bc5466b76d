/**
 * The enclave's piscina pool of crypto workers (crypto.worker.ts), sized to the machine's parallelism.
 *
 * Key generation is dispatched adaptively: at most two tasks per thread are in flight (so a worker finishing
 * one finds the next already queued); requests arriving meanwhile wait and leave together as one multi-key task
 * when a slot frees. Light load gets one-key tasks with no added delay; heavy load gets bigger tasks, which keeps
 * piscina's per-task messaging cost (measured: the largest main-thread cost with one task per key) low.
 */
import { availableParallelism } from 'node:os';
import { Piscina } from 'piscina';
import type { CryptoResults, CryptoTask, CryptoWorkerData, GenerateItem } from './crypto.worker.ts';
import type { GeneratedEciesKey, GeneratedKey } from './keygen.ts';

/** `.ts` when run from source (tsx), `.js` when run from the `npm run build` bundle in dist/. */
const SOURCE_EXT = import.meta.url.endsWith('.ts') ? '.ts' : '.js';

/** Upper bound on keys per worker task: bigger batches save little and delay the first answers. */
const MAX_KEYS_PER_TASK = 16;
/** Tasks in flight per worker thread. */
const TASKS_PER_THREAD = 2;

interface QueuedItem {
  item: GenerateItem;
  resolve(key: GeneratedKey): void;
  reject(error: unknown): void;
}

/** Starts the worker pool. The master key is copied into each worker's `workerData`. */
export function createCryptoPool(options: { masterKey: Uint8Array; threads?: number }) {
  const threads = Math.max(1, options.threads ?? availableParallelism());
  const workerData: CryptoWorkerData = { masterKey: options.masterKey };
  const pool = new Piscina({
    filename: new URL(`./crypto.worker${SOURCE_EXT}`, import.meta.url).href,
    workerData,
    minThreads: threads,
    maxThreads: threads,
    // With piscina's default Atomics hand-off, both pools stalled under sustained load here (Node 20.20,
    // piscina 5.3.2): tasks in flight never completed while the event loop ran on. Plain message events did not
    // stall in repeated runs, at no measurable cost for tasks of this size.
    atomics: 'disabled',
  });

  function run<K extends CryptoTask['kind']>(task: Extract<CryptoTask, { kind: K }>): Promise<CryptoResults[K]> {
    return pool.run(task) as Promise<CryptoResults[K]>;
  }

  const maxTasksInFlight = threads * TASKS_PER_THREAD;
  let queue: QueuedItem[] = [];
  let queueHead = 0;
  let tasksInFlight = 0;
  let scheduled: NodeJS.Immediate | undefined;

  function onTaskSettled(): void {
    tasksInFlight--;
    dispatch();
  }

  function dispatch(): void {
    scheduled = undefined;
    while (tasksInFlight < maxTasksInFlight && queueHead < queue.length) {
      const waiting = queue.length - queueHead;
      const size = Math.min(MAX_KEYS_PER_TASK, Math.ceil(waiting / (maxTasksInFlight - tasksInFlight)));
      const chunk = queue.slice(queueHead, queueHead + size);
      queueHead += size;
      tasksInFlight++;
      run({ kind: 'generate', items: chunk.map((queued) => queued.item) })
        .then(
          (keys) => {
            for (let i = 0; i < chunk.length; i++) chunk[i]!.resolve(keys[i]!);
          },
          (error: unknown) => {
            for (const queued of chunk) queued.reject(error);
          },
        )
        .then(onTaskSettled);
    }
    if (queueHead === queue.length) {
      queue = [];
      queueHead = 0;
    }
  }

  return {
    threads,
    /** Generates one wallet key in a worker (batched with the requests waiting for a free slot). */
    generate(item: GenerateItem): Promise<GeneratedKey> {
      return new Promise<GeneratedKey>((resolve, reject) => {
        queue.push({ item, resolve, reject });
        if (tasksInFlight < maxTasksInFlight) scheduled ??= setImmediate(dispatch);
      });
    },
    /** Generates and seals the ECIES key pair. */
    generateEciesKey(): Promise<GeneratedEciesKey> {
      return run({ kind: 'eciesGenerate' });
    },
    /** True when the master key opens the sealed ECIES key and it matches its public key. */
    checkEciesKey(record: GeneratedEciesKey): Promise<boolean> {
      return run({ kind: 'eciesCheck', record });
    },
    /**
     * Stops the workers at once: generate calls not yet dispatched and tasks under way fail. (The server lets
     * requests under way finish before calling this.)
     */
    async destroy(): Promise<void> {
      if (scheduled) clearImmediate(scheduled);
      const refused = queue.slice(queueHead);
      queue = [];
      queueHead = 0;
      for (const queued of refused) queued.reject(new Error('the crypto pool is closed'));
      await pool.destroy();
    },
  };
}

export type CryptoPool = ReturnType<typeof createCryptoPool>;
