/**
 * Group commit of new keys, migrated user shares and the effect records of keyed signatures, from the enclave's
 * main thread to the key writer thread (key-writer.worker.ts).
 *
 * Inserts requested while no commit is under way are collected for one event-loop turn (setImmediate) and sent
 * as one batch; inserts requested while a commit is under way wait and all go in the next one. Each caller's
 * promise settles only after its batch committed (WAL + `synchronous = FULL`: fsynced), so a public key never
 * leaves the enclave before the shares it came from are on disk, and a keyed signature is made only once its
 * record is. One batch is in flight at a time, so batches commit in request order: of two requests with one effect
 * key, the one queued first is recorded, whichever batches they fall in.
 */
import { Piscina } from 'piscina';
import type {
  EffectOutcome,
  EffectRecord,
  InsertOutcome,
  NewKey,
  NewUserShare,
  RewrapUpdate,
  UserShareOutcome,
} from './key-store.ts';
import type { KeyWriterResults, KeyWriterTask, KeyWriterWorkerData } from './key-writer.worker.ts';

/** `.ts` when run from source (tsx), `.js` when run from the `npm run build` bundle in dist/. */
const SOURCE_EXT = import.meta.url.endsWith('.ts') ? '.ts' : '.js';

interface Queued<T, O> {
  item: T;
  resolve(outcome: O): void;
  reject(error: unknown): void;
}

function settle<T, O>(queued: Queued<T, O>[], outcomes: readonly O[]): void {
  for (let i = 0; i < queued.length; i++) queued[i]!.resolve(outcomes[i]!);
}

/** Starts the writer thread on the key store at `path` (created and migrated beforehand). */
export function createKeyWriter(options: { path: string }) {
  const workerData: KeyWriterWorkerData = { path: options.path };
  // A pool of one thread: piscina also takes care of loading a .ts worker under tsx.
  const pool = new Piscina({
    filename: new URL(`./key-writer.worker${SOURCE_EXT}`, import.meta.url).href,
    workerData,
    minThreads: 1,
    maxThreads: 1,
    atomics: 'disabled', // see crypto-pool.ts
  });
  let keys: Queued<NewKey, InsertOutcome>[] = [];
  let userShares: Queued<NewUserShare, UserShareOutcome>[] = [];
  let effects: Queued<EffectRecord, EffectOutcome>[] = [];
  let committing: Promise<void> | undefined;
  let scheduled: NodeJS.Immediate | undefined;
  let closing: Promise<void> | undefined;

  function run<T extends KeyWriterTask['type']>(
    task: Extract<KeyWriterTask, { type: T }>,
  ): Promise<KeyWriterResults[T]> {
    return pool.run(task) as Promise<KeyWriterResults[T]>;
  }

  /**
   * Runs a task other than the group commit on the writer thread (one task at a time there, so it commits
   * between two batches), refused once closing.
   */
  function runOther<T extends KeyWriterTask['type']>(
    task: Extract<KeyWriterTask, { type: T }>,
  ): Promise<KeyWriterResults[T]> {
    if (closing) return Promise.reject(new Error('the key writer is closed'));
    return run(task);
  }

  function commitQueued(): void {
    scheduled = undefined;
    if (committing || keys.length + userShares.length + effects.length === 0) return;
    const batch = { keys, userShares, effects };
    keys = [];
    userShares = [];
    effects = [];
    committing = run({
      type: 'write',
      keys: batch.keys.map((queued) => queued.item),
      userShares: batch.userShares.map((queued) => queued.item),
      effects: batch.effects.map((queued) => queued.item),
    }).then(
      (outcomes) => {
        settle(batch.keys, outcomes.keys);
        settle(batch.userShares, outcomes.userShares);
        settle(batch.effects, outcomes.effects);
      },
      (error: unknown) => {
        for (const queued of [...batch.keys, ...batch.userShares, ...batch.effects]) queued.reject(error);
      },
    );
    committing.then(() => {
      committing = undefined;
      commitQueued();
    });
  }

  function enqueue<T, O>(queue: Queued<T, O>[], item: T): Promise<O> {
    if (closing) return Promise.reject(new Error('the key writer is closed'));
    return new Promise<O>((resolve, reject) => {
      queue.push({ item, resolve, reject });
      if (!committing) scheduled ??= setImmediate(commitQueued);
    });
  }

  return {
    /** Queues a new key for the next group commit; resolves once committed (see key-store `insertKeys`). */
    insertKey(key: NewKey): Promise<InsertOutcome> {
      return enqueue(keys, key);
    },
    /**
     * Queues a migrated user share for the next group commit; resolves once committed with `created`, or
     * `exists` when the wallet already held a user share (nothing written), see key-store `write`.
     */
    insertUserShare(share: NewUserShare): Promise<UserShareOutcome> {
      return enqueue(userShares, share);
    },
    /**
     * Queues the effect record of a keyed signature for the next group commit; resolves once committed with
     * `recorded`, or, for a key recorded before, `replayed` (same wallet and message) or `conflict` (nothing
     * written), see key-store `write`.
     */
    recordEffect(record: EffectRecord): Promise<EffectOutcome> {
      return enqueue(effects, record);
    },
    /**
     * Deletes up to `limit` effect records older than `before` (ISO time) in one transaction between two group
     * commits; resolves with the number deleted (see key-store `pruneEffectRecords`).
     */
    pruneEffectRecords(before: string, limit: number): Promise<number> {
      return runOther({ type: 'pruneEffectRecords', before, limit });
    },
    /**
     * Master-key rotation: replaces the wrap layer of a page of rows in one transaction (see key-store
     * `applyRewrap`); resolves with the number of rows changed, once committed.
     */
    applyRewrap(updates: RewrapUpdate[]): Promise<number> {
      return runOther({ type: 'rewrap', updates });
    },
    /** Records the id of the master key that seals new rows; resolves once committed. */
    async setSealKeyId(keyId: string): Promise<void> {
      await runOther({ type: 'setSealKeyId', keyId });
    },
    /** Sealed rows per key id, counted on the writer thread. */
    countRowsByKeyId(): Promise<Record<string, number>> {
      return runOther({ type: 'countRowsByKeyId' });
    },
    /**
     * Commits what is queued, closes the writer's connection and stops its thread. Gives up waiting after
     * `timeoutMs` (a commit that has not returned by then is not acknowledged to anyone) and stops the thread.
     */
    close(timeoutMs = 10_000): Promise<void> {
      closing ??= (async () => {
        if (scheduled) clearImmediate(scheduled);
        const drained = (async () => {
          commitQueued();
          while (committing) await committing;
          await run({ type: 'close' });
        })();
        let timer: NodeJS.Timeout | undefined;
        const timedOut = new Promise<void>((resolve) => {
          timer = setTimeout(resolve, timeoutMs);
        });
        await Promise.race([drained.catch(() => undefined), timedOut]);
        clearTimeout(timer);
        await pool.destroy();
      })();
      return closing;
    },
  };
}

export type KeyWriter = ReturnType<typeof createKeyWriter>;
