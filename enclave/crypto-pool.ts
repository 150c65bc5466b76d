/**
 * The enclave's piscina pool of crypto workers (crypto.worker.ts), sized to the machine's parallelism.
 *
 * Key generation, signing and share migration are batched into worker tasks by one shared batcher
 * (batcher.ts): at most two tasks per thread are in flight (so a worker finishing one finds the next already
 * queued); requests arriving meanwhile wait and leave together as one multi-item task when a slot frees. Light
 * load gets one-item tasks with no added delay; heavy load gets bigger tasks, which keeps piscina's per-task
 * messaging cost (measured: the largest main-thread cost with one task per item) low. Each item settles on
 * its own: a bad item fails only itself.
 */
import { availableParallelism } from 'node:os';
import { Piscina } from 'piscina';
import { createBatcher } from './batcher.ts';
import type { CryptoResults, CryptoTask, CryptoWorkerData, GenerateItem } from './crypto.worker.ts';
import type { SealedBlob } from './envelope.ts';
import type { GeneratedIdentityKey, IdentitySignItem } from './identity-sign.ts';
import type { GeneratedEciesKey, GeneratedKey } from './keygen.ts';
import type { MigrateItem } from './share-migration.ts';
import type { SignItem, SignResult } from './sign.ts';

/** `.ts` when run from source (tsx), `.js` when run from the `npm run build` bundle in dist/. */
const SOURCE_EXT = import.meta.url.endsWith('.ts') ? '.ts' : '.js';

/** Upper bounds on items per worker task: bigger batches save little and delay the first answers. */
const MAX_KEYS_PER_TASK = 16;
const MAX_SIGNATURES_PER_TASK = 32;
const MAX_MIGRATIONS_PER_TASK = 4;
const MAX_HANDSHAKES_PER_TASK = 16;
/** Tasks in flight per worker thread. */
const TASKS_PER_THREAD = 2;

/** Starts the worker pool. The master key is copied into each worker's `workerData`. */
export function createCryptoPool(options: { masterKey: Uint8Array; threads?: number }) {
  const threads = Math.max(1, options.threads ?? availableParallelism());
  const workerData: CryptoWorkerData = { masterKey: options.masterKey };
  const pool = new Piscina({
    filename: new URL(`./crypto.worker${SOURCE_EXT}`, import.meta.url).href,
    workerData,
    minThreads: threads,
    maxThreads: threads,
    // Post up to TASKS_PER_THREAD tasks to each worker: the next one then waits in the worker's own message queue.
    // With piscina's default of 1 the second task waited on this thread, and each worker idled for a main-thread
    // round trip between tasks (measured: the enclave used ~1 of 2 cores under a full signing load).
    concurrentTasksPerWorker: TASKS_PER_THREAD,
    // With piscina's default Atomics hand-off, both pools stalled under sustained load here (Node 20.20,
    // piscina 5.3.2): tasks in flight never completed while the event loop ran on. Plain message events did not
    // stall in repeated runs, at no measurable cost for tasks of this size.
    atomics: 'disabled',
  });

  function run<K extends CryptoTask['kind']>(task: Extract<CryptoTask, { kind: K }>): Promise<CryptoResults[K]> {
    return pool.run(task) as Promise<CryptoResults[K]>;
  }

  const batcher = createBatcher({ maxTasksInFlight: threads * TASKS_PER_THREAD });
  const generate = batcher.lane<GenerateItem, GeneratedKey>({
    maxItemsPerTask: MAX_KEYS_PER_TASK,
    run: (items) => run({ kind: 'generate', items }),
  });
  const sign = batcher.lane<SignItem, SignResult>({
    maxItemsPerTask: MAX_SIGNATURES_PER_TASK,
    run: (items) => run({ kind: 'sign', items }),
  });
  const migrate = batcher.lane<MigrateItem, SealedBlob>({
    maxItemsPerTask: MAX_MIGRATIONS_PER_TASK,
    run: (items) => run({ kind: 'migrate', items }),
  });
  const signIdentity = batcher.lane<IdentitySignItem, Uint8Array>({
    maxItemsPerTask: MAX_HANDSHAKES_PER_TASK,
    run: (items) => run({ kind: 'identitySign', items }),
  });

  return {
    threads,
    /** Generates one wallet key in a worker (batched with the requests waiting for a free slot). */
    generate,
    /**
     * Signs one request in a worker (batched likewise): opens and combines the shares, signs, verifies against
     * the stored public key. Rejects with an EnclaveRequestError for an expected failure, else a plain Error.
     */
    sign,
    /** Decrypts a migration payload and returns the user share sealed for storage (see share-migration.ts). */
    migrate,
    /** Signs one identity handshake message (identity.ts) with the sealed identity key, batched likewise. */
    signIdentity,
    /** Generates and seals the identity key pair. */
    generateIdentityKey(): Promise<GeneratedIdentityKey> {
      return run({ kind: 'identityGenerate' });
    },
    /** True when the master key opens the sealed identity seed and it derives its public key. */
    checkIdentityKey(record: GeneratedIdentityKey): Promise<boolean> {
      return run({ kind: 'identityCheck', record });
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
     * Stops the workers at once: items not yet dispatched and tasks under way fail. (The server lets requests
     * under way finish before calling this.)
     */
    async destroy(): Promise<void> {
      batcher.close();
      await pool.destroy();
    },
  };
}

export type CryptoPool = ReturnType<typeof createCryptoPool>;
