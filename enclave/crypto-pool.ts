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
import type { CryptoResults, CryptoTask, CryptoWorkerData, GenerateItem, RewrapItem } from './crypto.worker.ts';
import {
  createKeyRing,
  type MasterKeyRing,
  type MasterKeys,
  type SealedBlob,
  type WrappedDataKey,
} from './envelope.ts';
import type { ItemResult } from './errors.ts';
import type { GeneratedIdentityKey, IdentitySignItem } from './identity-sign.ts';
import type { GeneratedEciesKey, GeneratedKey } from './keygen.ts';
import type { MigrateItem } from './share-migration.ts';
import type { SignItem, SignResult } from './sign.ts';
import { packSignItems } from './sign-batch.ts';

/** `.ts` when run from source (tsx), `.js` when run from the `npm run build` bundle in dist/. */
const SOURCE_EXT = import.meta.url.endsWith('.ts') ? '.ts' : '.js';

/** Upper bounds on items per worker task: bigger batches save little and delay the first answers. */
const MAX_KEYS_PER_TASK = 16;
const MAX_SIGNATURES_PER_TASK = 32;
const MAX_MIGRATIONS_PER_TASK = 4;
const MAX_HANDSHAKES_PER_TASK = 16;
/** Tasks in flight per worker thread. */
const TASKS_PER_THREAD = 2;

/** Starts the worker pool. Each worker gets a copy of the master keys in its `workerData`. */
export function createCryptoPool(options: { masterKey: MasterKeys; threads?: number }) {
  const threads = Math.max(1, options.threads ?? availableParallelism());
  const initial = options.masterKey instanceof Uint8Array ? createKeyRing([options.masterKey]) : options.masterKey;
  let keyIds = [...initial.keys.keys()];
  let sealWith = initial.sealWith;

  function startPool(masterKeys: ReadonlyMap<string, Uint8Array>): Piscina {
    const workerData: CryptoWorkerData = { masterKeys };
    return new Piscina({
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
  }
  let pool = startPool(initial.keys);
  /** A pool being retired by replaceKeys: its tasks under way finish on it. */
  let retiring: Promise<void> | undefined;

  function run<K extends CryptoTask['kind']>(task: Extract<CryptoTask, { kind: K }>): Promise<CryptoResults[K]> {
    return pool.run(task) as Promise<CryptoResults[K]>;
  }

  const batcher = createBatcher({ maxTasksInFlight: threads * TASKS_PER_THREAD });
  const generate = batcher.lane<GenerateItem, GeneratedKey>({
    maxItemsPerTask: MAX_KEYS_PER_TASK,
    run: (items) => run({ kind: 'generate', sealWith, items }),
  });
  const sign = batcher.lane<SignItem, SignResult>({
    maxItemsPerTask: MAX_SIGNATURES_PER_TASK,
    run: (items) => {
      const packed = packSignItems(items);
      return pool.run({ kind: 'sign', packed }, { transferList: [packed.buffer as ArrayBuffer] }) as Promise<
        CryptoResults['sign']
      >;
    },
  });
  const migrate = batcher.lane<MigrateItem, SealedBlob>({
    maxItemsPerTask: MAX_MIGRATIONS_PER_TASK,
    run: (items) => run({ kind: 'migrate', sealWith, items }),
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
      return run({ kind: 'identityGenerate', sealWith });
    },
    /** True when the master key opens the sealed identity seed and it derives its public key. */
    checkIdentityKey(record: GeneratedIdentityKey): Promise<boolean> {
      return run({ kind: 'identityCheck', record });
    },
    /**
     * Re-wraps records' data keys under the sealing key, one outcome per item (one task, outside the batcher:
     * rotation sends one page at a time).
     */
    rewrap(items: RewrapItem[]): Promise<ItemResult<WrappedDataKey>[]> {
      return run({ kind: 'rewrap', sealWith, items });
    },
    /** Generates and seals the ECIES key pair. */
    generateEciesKey(): Promise<GeneratedEciesKey> {
      return run({ kind: 'eciesGenerate', sealWith });
    },
    /** True when a held master key opens the sealed ECIES key and it matches its public key. */
    checkEciesKey(record: GeneratedEciesKey): Promise<boolean> {
      return run({ kind: 'eciesCheck', record });
    },
    /** The id of the held key that opens the ECIES key (also for a record of an earlier version), or null. */
    eciesKeyId(record: GeneratedEciesKey): Promise<string | null> {
      return run({ kind: 'eciesKeyId', record });
    },
    /** Ids of the master keys the workers hold. */
    get keyIds(): readonly string[] {
      return keyIds;
    },
    /** Id of the key new records are sealed with. */
    get sealWith(): string {
      return sealWith;
    },
    /**
     * Seals every record from now on (tasks dispatched after this call) with the held key `keyId`. Tasks already
     * dispatched seal with the key they were given.
     */
    setSealKey(keyId: string): void {
      if (!keyIds.includes(keyId)) throw new Error(`the crypto workers do not hold master key ${keyId}`);
      sealWith = keyId;
    },
    /**
     * Gives the workers another set of master keys: starts new threads with them, waits until they answer, then
     * sends every new task there while the old threads finish the tasks they hold and stop. Requests are served
     * throughout. Every key a record in flight may need must be in `ring` (rotation only ever adds keys).
     */
    async replaceKeys(ring: MasterKeyRing): Promise<void> {
      const fresh = startPool(ring.keys);
      try {
        // Load the worker module on every thread before switching, so that no request waits for threads to start.
        await Promise.all(Array.from({ length: threads * TASKS_PER_THREAD }, () => fresh.run({ kind: 'ping' })));
      } catch (error) {
        await fresh.destroy();
        throw error;
      }
      const old = pool;
      pool = fresh;
      keyIds = [...ring.keys.keys()];
      sealWith = ring.sealWith;
      old.on('error', () => undefined); // a close timeout is reported as an 'error' event; destroy follows
      const closing = old.close();
      retiring = closing;
      await closing;
      if (retiring === closing) retiring = undefined;
    },
    /**
     * Stops the workers at once: items not yet dispatched and tasks under way fail. (The server lets requests
     * under way finish before calling this.)
     */
    async destroy(): Promise<void> {
      batcher.close();
      await Promise.all([pool.destroy(), retiring?.catch(() => undefined)]);
    },
  };
}

export type CryptoPool = ReturnType<typeof createCryptoPool>;
