/**
 * The enclave's piscina pool of crypto workers (crypto.worker.ts), sized to the machine's parallelism.
 * Key generation requests arriving in one event-loop turn are dispatched as a few multi-key tasks rather than
 * one task each, which keeps the per-task messaging cost off the main thread under load.
 */
import { availableParallelism } from 'node:os';
import { Piscina } from 'piscina';
import type { CryptoResults, CryptoTask, CryptoWorkerData, GenerateItem } from './crypto.worker.ts';
import type { GeneratedEciesKey, GeneratedKey } from './keygen.ts';

/** Upper bound on keys per worker task: bigger batches save little and delay the first answers. */
const MAX_KEYS_PER_TASK = 8;

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
    filename: new URL('./crypto.worker.ts', import.meta.url).href,
    workerData,
    minThreads: threads,
    maxThreads: threads,
  });

  function run<K extends CryptoTask['kind']>(task: Extract<CryptoTask, { kind: K }>): Promise<CryptoResults[K]> {
    return pool.run(task) as Promise<CryptoResults[K]>;
  }

  let queue: QueuedItem[] = [];
  let scheduled: NodeJS.Immediate | undefined;

  function dispatch(): void {
    scheduled = undefined;
    const batch = queue;
    queue = [];
    const perTask = Math.min(MAX_KEYS_PER_TASK, Math.ceil(batch.length / threads));
    for (let start = 0; start < batch.length; start += perTask) {
      const chunk = batch.slice(start, start + perTask);
      run({ kind: 'generate', items: chunk.map((queued) => queued.item) }).then(
        (keys) => {
          for (let i = 0; i < chunk.length; i++) chunk[i]!.resolve(keys[i]!);
        },
        (error: unknown) => {
          for (const queued of chunk) queued.reject(error);
        },
      );
    }
  }

  return {
    threads,
    /** Generates one wallet key in a worker (batched with the other requests of this turn). */
    generate(item: GenerateItem): Promise<GeneratedKey> {
      return new Promise<GeneratedKey>((resolve, reject) => {
        queue.push({ item, resolve, reject });
        scheduled ??= setImmediate(dispatch);
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
    /** Stops the workers (queued generate calls are dispatched first). */
    async destroy(): Promise<void> {
      if (scheduled) {
        clearImmediate(scheduled);
        dispatch();
      }
      await pool.close();
      await pool.destroy();
    },
  };
}

export type CryptoPool = ReturnType<typeof createCryptoPool>;
