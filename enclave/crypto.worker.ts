/**
 * Piscina worker: every operation that touches a secret runs here, never on the enclave's main thread.
 * The master key arrives through `workerData.masterKey`. Tasks are a `kind` switch; results carry public keys
 * and sealed records only.
 */
import { workerData } from 'node:worker_threads';
import {
  checkEciesKey,
  type GeneratedEciesKey,
  type GeneratedKey,
  generateEciesKey,
  generateWalletKey,
} from './keygen.ts';
import type { Scheme } from './protocol.ts';

/** What the pool is created with. */
export interface CryptoWorkerData {
  masterKey: Uint8Array;
}

export interface GenerateItem {
  walletId: string;
  scheme: Scheme;
}

export type CryptoTask =
  | { kind: 'generate'; items: GenerateItem[] }
  | { kind: 'eciesGenerate' }
  | { kind: 'eciesCheck'; record: GeneratedEciesKey };

/** Result type of each task kind. */
export interface CryptoResults {
  /** One generated key per item, in order. */
  generate: GeneratedKey[];
  eciesGenerate: GeneratedEciesKey;
  eciesCheck: boolean;
}

function masterKey(): Uint8Array {
  const key = (workerData as CryptoWorkerData | null)?.masterKey;
  if (!(key instanceof Uint8Array) || key.length !== 32) throw new Error('crypto worker started without a master key');
  return key;
}

/** Runs one task. */
export default function runCryptoTask(task: CryptoTask): CryptoResults[CryptoTask['kind']] {
  switch (task.kind) {
    case 'generate': {
      const key = masterKey();
      return task.items.map((item) => generateWalletKey(key, item.walletId, item.scheme));
    }
    case 'eciesGenerate':
      return generateEciesKey(masterKey());
    case 'eciesCheck':
      return checkEciesKey(masterKey(), task.record);
    default: {
      const unknownTask: never = task;
      throw new Error(`unknown crypto task ${String((unknownTask as { kind?: unknown }).kind)}`);
    }
  }
}
