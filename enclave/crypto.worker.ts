/**
 * Piscina worker: every operation that touches a secret runs here, never on the enclave's main thread.
 * The master keys arrive through `workerData.masterKeys` (by key id); each task that seals names the key to seal
 * with (`sealWith`), so the main thread switches it for a rotation without restarting the workers. Tasks are a
 * `kind` switch; results carry public keys, signatures and sealed records only (and, for a pregen key, its user
 * share string, answered once). Batched kinds answer one ItemResult per item, so a bad item fails only itself.
 */
import { workerData } from 'node:worker_threads';
import { type MasterKeyRing, rewrap, type SealContext, type SealedBlob, type WrappedDataKey } from './envelope.ts';
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
  eciesKeyId,
  type GeneratedEciesKey,
  type GeneratedKey,
  generateEciesKey,
  generateWalletKey,
} from './keygen.ts';
import type { Custody, Scheme } from './protocol.ts';
import { type MigrateItem, migrateUserShare } from './share-migration.ts';
import { type SignResult, signWithShares } from './sign.ts';
import { unpackSignItems } from './sign-batch.ts';

/** What the pool is created with: every master key the enclave holds, by key id. */
export interface CryptoWorkerData {
  masterKeys: ReadonlyMap<string, Uint8Array>;
}

export interface GenerateItem {
  walletId: string;
  scheme: Scheme;
  custody: Custody;
}

/** One record's wrap layer to move under the sealing key (master-key rotation). */
export interface RewrapItem {
  context: SealContext;
  wrapped: WrappedDataKey;
}

export type CryptoTask =
  | { kind: 'generate'; sealWith: string; items: GenerateItem[] }
  /** `packSignItems` of the items (sign-batch.ts), its buffer transferred. */
  | { kind: 'sign'; packed: Uint8Array }
  | { kind: 'migrate'; sealWith: string; items: MigrateItem[] }
  | { kind: 'rewrap'; sealWith: string; items: RewrapItem[] }
  | { kind: 'eciesGenerate'; sealWith: string }
  | { kind: 'eciesCheck'; record: GeneratedEciesKey }
  | { kind: 'eciesKeyId'; record: GeneratedEciesKey }
  | { kind: 'identityGenerate'; sealWith: string }
  | { kind: 'identityCheck'; record: GeneratedIdentityKey }
  | { kind: 'identitySign'; items: IdentitySignItem[] }
  | { kind: 'ping' };

/** Result type of each task kind. */
export interface CryptoResults {
  /** One outcome per item, in order. */
  generate: ItemResult<GeneratedKey>[];
  sign: ItemResult<SignResult>[];
  /** The user share sealed for storage. */
  migrate: ItemResult<SealedBlob>[];
  /** The new wrap layer of each record. */
  rewrap: ItemResult<WrappedDataKey>[];
  eciesGenerate: GeneratedEciesKey;
  eciesCheck: boolean;
  /** The id of the held key that opens the ECIES key, or null. */
  eciesKeyId: string | null;
  identityGenerate: GeneratedIdentityKey;
  identityCheck: boolean;
  /** One handshake signature per item. */
  identitySign: ItemResult<Uint8Array>[];
  ping: true;
}

function masterKeys(): ReadonlyMap<string, Uint8Array> {
  const keys = (workerData as CryptoWorkerData | null)?.masterKeys;
  if (!(keys instanceof Map) || keys.size === 0) throw new Error('crypto worker started without a master key');
  return keys;
}

/**
 * The worker's key ring, sealing with `sealWith`. Tasks that only open records take the first key as the sealing
 * one: each record names the key that opens it.
 */
function ring(sealWith?: string): MasterKeyRing {
  const keys = masterKeys();
  const id = sealWith ?? keys.keys().next().value!;
  if (!keys.has(id)) throw new Error(`crypto worker does not hold the sealing key ${id}`);
  return { keys, sealWith: id };
}

/** Runs one task. */
export default function runCryptoTask(task: CryptoTask): CryptoResults[CryptoTask['kind']] {
  switch (task.kind) {
    case 'generate': {
      const keys = ring(task.sealWith);
      return eachItem(task.items, (item) => generateWalletKey(keys, item.walletId, item.scheme, item.custody));
    }
    case 'sign': {
      const keys = ring();
      return eachItem(unpackSignItems(task.packed), (item) => signWithShares(keys, item));
    }
    case 'migrate': {
      const keys = ring(task.sealWith);
      return eachItem(task.items, (item) => migrateUserShare(keys, item));
    }
    case 'rewrap': {
      const keys = ring(task.sealWith);
      return eachItem(task.items, (item) => rewrap(keys, item.context, item.wrapped));
    }
    case 'eciesGenerate':
      return generateEciesKey(ring(task.sealWith));
    case 'eciesCheck':
      return checkEciesKey(ring(), task.record);
    case 'eciesKeyId':
      return eciesKeyId(ring(), task.record) ?? null;
    case 'identityGenerate':
      return generateIdentityKey(ring(task.sealWith));
    case 'identityCheck':
      return checkIdentityKey(ring(), task.record);
    case 'identitySign': {
      const keys = ring();
      return eachItem(task.items, (item) => signWithIdentityKey(keys, item));
    }
    case 'ping':
      masterKeys();
      return true;
    default: {
      const unknownTask: never = task;
      throw new Error(`unknown crypto task ${String((unknownTask as { kind?: unknown }).kind)}`);
    }
  }
}
