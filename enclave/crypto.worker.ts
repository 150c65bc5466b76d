/**
 * Piscina worker: every operation that touches a secret runs here, never on the enclave's main thread.
 * The master key arrives through `workerData.masterKey`. Tasks are a `kind` switch; results carry public keys,
 * signatures and sealed records only (and, for a pregen key, its user share string, answered once).
 * Batched kinds answer one ItemResult per item, so a bad item fails only itself.
 */
import { workerData } from 'node:worker_threads';
import type { SealedBlob } from './envelope.ts';
import { eachItem, type ItemResult } from './errors.ts';
import {
  checkIdentityKey,
  type GeneratedIdentityKey,
  generateIdentityKey,
  type IdentitySignItem,
  signWithIdentityKey,
} from './identity-sign.ts';
import {
  checkEciesKey,
  type GeneratedEciesKey,
  type GeneratedKey,
  generateEciesKey,
  generateWalletKey,
} from './keygen.ts';
import type { Custody, Scheme } from './protocol.ts';
import { type MigrateItem, migrateUserShare } from './share-migration.ts';
import { type SignItem, type SignResult, signWithShares } from './sign.ts';

/** What the pool is created with. */
export interface CryptoWorkerData {
  masterKey: Uint8Array;
}

export interface GenerateItem {
  walletId: string;
  scheme: Scheme;
  custody: Custody;
}

export type CryptoTask =
  | { kind: 'generate'; items: GenerateItem[] }
  | { kind: 'sign'; items: SignItem[] }
  | { kind: 'migrate'; items: MigrateItem[] }
  | { kind: 'eciesGenerate' }
  | { kind: 'eciesCheck'; record: GeneratedEciesKey }
  | { kind: 'identityGenerate' }
  | { kind: 'identityCheck'; record: GeneratedIdentityKey }
  | { kind: 'identitySign'; items: IdentitySignItem[] };

/** Result type of each task kind. */
export interface CryptoResults {
  /** One outcome per item, in order. */
  generate: ItemResult<GeneratedKey>[];
  sign: ItemResult<SignResult>[];
  /** The user share sealed for storage. */
  migrate: ItemResult<SealedBlob>[];
  eciesGenerate: GeneratedEciesKey;
  eciesCheck: boolean;
  identityGenerate: GeneratedIdentityKey;
  identityCheck: boolean;
  /** One handshake signature per item. */
  identitySign: ItemResult<Uint8Array>[];
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
      return eachItem(task.items, (item) => generateWalletKey(key, item.walletId, item.scheme, item.custody));
    }
    case 'sign': {
      const key = masterKey();
      return eachItem(task.items, (item) => signWithShares(key, item));
    }
    case 'migrate': {
      const key = masterKey();
      return eachItem(task.items, (item) => migrateUserShare(key, item));
    }
    case 'eciesGenerate':
      return generateEciesKey(masterKey());
    case 'eciesCheck':
      return checkEciesKey(masterKey(), task.record);
    case 'identityGenerate':
      return generateIdentityKey(masterKey());
    case 'identityCheck':
      return checkIdentityKey(masterKey(), task.record);
    case 'identitySign': {
      const key = masterKey();
      return eachItem(task.items, (item) => signWithIdentityKey(key, item));
    }
    default: {
      const unknownTask: never = task;
      throw new Error(`unknown crypto task ${String((unknownTask as { kind?: unknown }).kind)}`);
    }
  }
}
