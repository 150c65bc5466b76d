/**
 * Piscina worker (a pool of exactly one thread): owns the write connection to the key store and commits each
 * batch it receives in one transaction. SQLite commits (fsync) block, so they happen here rather than on the
 * enclave's main thread, which keeps serving the socket and feeding the crypto workers meanwhile.
 * Sealed rows only: no secret comes here.
 */
import { workerData } from 'node:worker_threads';
import { createKeyStore, type KeyStore, type WriteBatch, type WriteOutcomes } from './key-store.ts';

export interface KeyWriterWorkerData {
  path: string;
}

export type KeyWriterTask = ({ type: 'write' } & WriteBatch) | { type: 'close' };

let store: KeyStore | undefined;

/** Runs one task: commits a batch (returning one outcome per item, in order), or closes the connection. */
export default function runKeyWriterTask(task: KeyWriterTask): WriteOutcomes {
  if (task.type === 'close') {
    store?.close();
    store = undefined;
    return { keys: [], userShares: [] };
  }
  store ??= createKeyStore({ path: (workerData as KeyWriterWorkerData).path });
  return store.write(task);
}
