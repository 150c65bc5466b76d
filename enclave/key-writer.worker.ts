/**
 * Piscina worker (a pool of exactly one thread): owns the write connection to the key store and commits each
 * batch it receives in one transaction (new keys, user shares and effect records; pages of a master-key rotation;
 * pages of old effect records to delete). SQLite commits (fsync) block, so they happen here rather than on the
 * enclave's main thread, which keeps serving the socket and feeding the crypto workers meanwhile.
 * Sealed rows only: no secret comes here.
 */
import { workerData } from 'node:worker_threads';
import { createKeyStore, type KeyStore, type RewrapUpdate, type WriteBatch, type WriteOutcomes } from './key-store.ts';

export interface KeyWriterWorkerData {
  path: string;
}

export type KeyWriterTask =
  | ({ type: 'write' } & WriteBatch)
  | { type: 'rewrap'; updates: RewrapUpdate[] }
  | { type: 'setSealKeyId'; keyId: string }
  | { type: 'countRowsByKeyId' }
  | { type: 'pruneEffectRecords'; before: string; limit: number }
  | { type: 'close' };

/** Result type of each task type. */
export interface KeyWriterResults {
  write: WriteOutcomes;
  /** Rows changed. */
  rewrap: number;
  setSealKeyId: true;
  countRowsByKeyId: Record<string, number>;
  /** Records deleted. */
  pruneEffectRecords: number;
  close: true;
}

let store: KeyStore | undefined;

/**
 * Runs one task: commits a batch (returning one outcome per item, in order), applies a page of re-wrapped rows,
 * records the sealing key id, counts rows per key id (off the main thread: an index scan), deletes a page of old
 * effect records, or closes.
 */
export default function runKeyWriterTask(task: KeyWriterTask): KeyWriterResults[KeyWriterTask['type']] {
  if (task.type === 'close') {
    store?.close();
    store = undefined;
    return true;
  }
  store ??= createKeyStore({ path: (workerData as KeyWriterWorkerData).path });
  switch (task.type) {
    case 'write':
      return store.write(task);
    case 'rewrap':
      return store.applyRewrap(task.updates);
    case 'setSealKeyId':
      store.setSealKeyId(task.keyId);
      return true;
    case 'countRowsByKeyId':
      return store.countRowsByKeyId();
    case 'pruneEffectRecords':
      return store.pruneEffectRecords(task.before, task.limit);
    default: {
      const unknownTask: never = task;
      throw new Error(`unknown key writer task ${String((unknownTask as { type?: unknown }).type)}`);
    }
  }
}
