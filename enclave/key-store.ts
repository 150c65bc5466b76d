/**
 * The enclave's own SQLite store (`$DATA_DIR/enclave/keys.db`): public keys, sealed key shares and the sealed
 * ECIES and identity keys. It never sees a plaintext share: workers seal before rows get here (see envelope.ts).
 *
 * WAL with `synchronous = FULL`: when a write transaction returns, it has been fsynced. New keys are written in
 * batches (`insertKeys`), which key-writer.ts feeds with group commits from its own thread.
 *
 * Every sealed row records which master key wrapped it (`key_id`) and the cipher of each layer (`wrap_cipher`,
 * `data_cipher`; see envelope.ts). Master-key rotation (key-rotation.ts) reads rows not yet under the new key page
 * by page (`rewrapPage`) and replaces their wrap layer only (`applyRewrap`), one committed page at a time.
 *
 * `effect_signatures` (schema 3) holds what a keyed `sign` signed: effect key, wallet id, SHA-256 of the message
 * (never the message, never a signature), written in the same group commits before the signature leaves
 * (protocol.ts, `sign`), pruned after 30 days (effect-records.ts).
 */
import { chmodSync, closeSync, existsSync, openSync } from 'node:fs';
import Database from 'better-sqlite3';
import {
  type Cipher,
  ECIES_CONTEXT,
  IDENTITY_CONTEXT,
  type SealContext,
  type SealedBlob,
  type SealedShare,
  type ShareKind,
  shareContext,
  UNLABELED_KEY_ID,
  type WrappedDataKey,
} from './envelope.ts';
import type { Scheme } from './protocol.ts';

export const SCHEMA_VERSION = 3;

/**
 * The seal context of each `sealed_keys` row, by name: rotation re-wraps a row only if it knows its context, and
 * refuses to start while a row's name is missing here. A new enclave-held key registers its context here.
 */
export const SEALED_KEY_CONTEXTS: Readonly<Record<string, SealContext>> = {
  'ecies-p256': ECIES_CONTEXT,
  'identity-ed25519': IDENTITY_CONTEXT,
};

export interface KeyRecord {
  walletId: string;
  scheme: Scheme;
  /** Hex without 0x (see protocol.ts for the format per scheme). */
  publicKey: string;
  createdAt: string;
}

export interface NewKey {
  walletId: string;
  scheme: Scheme;
  publicKey: string;
  shares: SealedShare[];
}

/** `created: false` means another key already held the wallet id: `record` is that key, which won. */
export interface InsertOutcome {
  created: boolean;
  record: KeyRecord;
}

/** A migrated user share, sealed for (walletId, scheme, 'user'). */
export interface NewUserShare {
  walletId: string;
  share: SealedBlob;
}

/** `exists`: the wallet already held a user share (nothing written). `no-key`: the wallet has no key. */
export type UserShareOutcome = 'created' | 'exists' | 'no-key';

/** A keyed signature about to be made: the effect that asks, the wallet, the SHA-256 of the message (32 bytes). */
export interface EffectRecord {
  effectKey: string;
  walletId: string;
  messageSha256: Uint8Array;
}

/**
 * `recorded`: the key is new, now recorded. `replayed`: the key was recorded with this wallet and message (sign the
 * same bytes again). `conflict`: the key was recorded with another wallet or message (nothing written).
 */
export type EffectOutcome = 'recorded' | 'replayed' | 'conflict';

/** A stored effect record (for tests and the operator: signing needs only the outcome). */
export interface StoredEffectRecord extends EffectRecord {
  createdAt: string;
}

/** What one group commit writes, and its outcomes (one per item, in order). */
export interface WriteBatch {
  keys: readonly NewKey[];
  userShares: readonly NewUserShare[];
  effects: readonly EffectRecord[];
}
export interface WriteOutcomes {
  keys: InsertOutcome[];
  userShares: UserShareOutcome[];
  effects: EffectOutcome[];
}

/** One row whose wrap layer a rotation moves: a share (by wallet id and kind) or a sealed key (by name). */
export type RewrapRow =
  | { table: 'shares'; walletId: string; kind: ShareKind; context: SealContext; wrapped: WrappedDataKey }
  | { table: 'sealed_keys'; name: string; context: SealContext | undefined; wrapped: WrappedDataKey };

/** A row's new wrap layer; applied only if the row still has the wrap layer it was read with (`from`). */
export interface RewrapUpdate {
  row: { table: 'shares'; walletId: string; kind: ShareKind } | { table: 'sealed_keys'; name: string };
  from: Pick<WrappedDataKey, 'keyId' | 'dekIv'>;
  to: WrappedDataKey;
}

/** Where a page of `rewrapPage` ends: pass it back to read the next page. */
export type RewrapCursor = { walletId: string; kind: string };

/** A wallet's key with its sealed shares, as signing and migration need it (never unsealed on this thread). */
export interface StoredKey {
  walletId: string;
  scheme: Scheme;
  publicKey: string;
  /** Absent only if the store is damaged: every key is stored with its service share. */
  service?: SealedBlob;
  /** Absent for a pre-generated wallet whose user share was not migrated. */
  user?: SealedBlob;
}

export interface EciesKeyRecord {
  /** Uncompressed P-256 point, 65 bytes. */
  publicKey: Uint8Array;
  sealed: SealedBlob;
  generatedAt: string;
}

/** The enclave's identity key (identity-key.ts): a row of `sealed_keys`, like the ECIES key. */
export interface IdentityKeyRecord {
  /** Raw Ed25519 public key, 32 bytes. */
  publicKey: Uint8Array;
  /** The sealed 32-byte seed. */
  sealed: SealedBlob;
  generatedAt: string;
}

const SCHEMA_V1 = `
CREATE TABLE IF NOT EXISTS keys (
  wallet_id  TEXT PRIMARY KEY,
  scheme     TEXT NOT NULL CHECK (scheme IN ('DKLS', 'ED25519')),
  public_key TEXT NOT NULL,
  created_at TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS shares (
  wallet_id   TEXT NOT NULL REFERENCES keys (wallet_id),
  kind        TEXT NOT NULL CHECK (kind IN ('service', 'user')),
  dek_iv      BLOB NOT NULL,
  wrapped_key BLOB NOT NULL,
  iv          BLOB NOT NULL,
  ciphertext  BLOB NOT NULL,
  created_at  TEXT NOT NULL,
  PRIMARY KEY (wallet_id, kind)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS sealed_keys (
  name        TEXT PRIMARY KEY,
  public_key  BLOB NOT NULL,
  dek_iv      BLOB NOT NULL,
  wrapped_key BLOB NOT NULL,
  iv          BLOB NOT NULL,
  ciphertext  BLOB NOT NULL,
  created_at  TEXT NOT NULL
) WITHOUT ROWID;
`;

/** Schema 2: key ids and ciphers per row (rows of schema 1 are AES-256-GCM in both layers, unlabeled), meta. */
const SCHEMA_V2 = `
ALTER TABLE shares ADD COLUMN key_id TEXT NOT NULL DEFAULT '';
ALTER TABLE shares ADD COLUMN wrap_cipher INTEGER NOT NULL DEFAULT 1 CHECK (wrap_cipher IN (1, 2));
ALTER TABLE shares ADD COLUMN data_cipher INTEGER NOT NULL DEFAULT 1 CHECK (data_cipher IN (1, 2));
ALTER TABLE sealed_keys ADD COLUMN key_id TEXT NOT NULL DEFAULT '';
ALTER TABLE sealed_keys ADD COLUMN wrap_cipher INTEGER NOT NULL DEFAULT 1 CHECK (wrap_cipher IN (1, 2));
ALTER TABLE sealed_keys ADD COLUMN data_cipher INTEGER NOT NULL DEFAULT 1 CHECK (data_cipher IN (1, 2));
CREATE INDEX shares_by_key_id ON shares (key_id);
CREATE TABLE meta (
  name  TEXT PRIMARY KEY,
  value TEXT NOT NULL
) WITHOUT ROWID;
`;

/**
 * Schema 3: one row per effect key a `sign` was given (protocol.ts). No foreign key to `keys`: the request handler
 * has found the key before, keys are never deleted, and a failed check would fail the whole group commit. The index
 * serves the pruning of old rows (effect-records.ts).
 */
const SCHEMA_V3 = `
CREATE TABLE effect_signatures (
  effect_key     TEXT PRIMARY KEY,
  wallet_id      TEXT NOT NULL,
  message_sha256 BLOB NOT NULL CHECK (length(message_sha256) = 32),
  created_at     TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX effect_signatures_by_created_at ON effect_signatures (created_at);
`;

const ECIES_NAME = 'ecies-p256';
/** The enclave's identity key: a row of `sealed_keys` like the ECIES key (a store without it gains it at start). */
const IDENTITY_NAME = 'identity-ed25519';
/** The meta row naming the master key that seals new rows (and, outside a rotation, wraps every row). */
const SEAL_KEY_META = 'seal_key_id';

interface KeyRow {
  wallet_id: string;
  scheme: Scheme;
  public_key: string;
  created_at: string;
}

/** The sealed columns of a row, as stored. */
interface SealedColumns {
  key_id: string;
  wrap_cipher: Cipher;
  dek_iv: Buffer;
  wrapped_key: Buffer;
  data_cipher: Cipher;
  iv: Buffer;
  ciphertext: Buffer;
}

interface ShareRow extends SealedColumns {
  wallet_id: string;
  kind: ShareKind;
}

interface RewrapShareRow {
  wallet_id: string;
  kind: ShareKind;
  scheme: Scheme;
  key_id: string;
  wrap_cipher: Cipher;
  dek_iv: Buffer;
  wrapped_key: Buffer;
}

/** keys LEFT JOIN shares (service) LEFT JOIN shares (user): one row per wallet. */
interface StoredKeyRow {
  scheme: Scheme;
  public_key: string;
  s_key_id: string | null;
  s_wrap_cipher: Cipher | null;
  s_dek_iv: Buffer | null;
  s_wrapped_key: Buffer | null;
  s_data_cipher: Cipher | null;
  s_iv: Buffer | null;
  s_ciphertext: Buffer | null;
  u_key_id: string | null;
  u_wrap_cipher: Cipher | null;
  u_dek_iv: Buffer | null;
  u_wrapped_key: Buffer | null;
  u_data_cipher: Cipher | null;
  u_iv: Buffer | null;
  u_ciphertext: Buffer | null;
}

interface EffectRow {
  effect_key: string;
  wallet_id: string;
  message_sha256: Buffer;
  created_at: string;
}

interface SealedKeyRow extends SealedColumns {
  name: string;
  public_key: Buffer;
  created_at: string;
}

function toKeyRecord(row: KeyRow): KeyRecord {
  return { walletId: row.wallet_id, scheme: row.scheme, publicKey: row.public_key, createdAt: row.created_at };
}

function toSealedBlob(row: SealedColumns): SealedBlob {
  return {
    keyId: row.key_id,
    wrapCipher: row.wrap_cipher,
    dekIv: row.dek_iv,
    wrappedKey: row.wrapped_key,
    dataCipher: row.data_cipher,
    iv: row.iv,
    ciphertext: row.ciphertext,
  };
}

/** The service (`s_`) or user (`u_`) share of a StoredKeyRow, if the wallet has it. */
function joinedShare(row: StoredKeyRow, prefix: 's' | 'u'): SealedBlob | undefined {
  const keyId = row[`${prefix}_key_id`];
  if (keyId === null) return undefined;
  return {
    keyId,
    wrapCipher: row[`${prefix}_wrap_cipher`]!,
    dekIv: row[`${prefix}_dek_iv`]!,
    wrappedKey: row[`${prefix}_wrapped_key`]!,
    dataCipher: row[`${prefix}_data_cipher`]!,
    iv: row[`${prefix}_iv`]!,
    ciphertext: row[`${prefix}_ciphertext`]!,
  };
}

const SHARE_COLUMNS = 'key_id, wrap_cipher, dek_iv, wrapped_key, data_cipher, iv, ciphertext';

/** Opens (creating if needed) the enclave key store at `path`. */
export function createKeyStore(options: { path: string; busyTimeoutMs?: number }) {
  // Owner-only from the start: SQLite gives the -wal and -shm files the database file's mode.
  closeSync(openSync(options.path, 'a', 0o600));
  for (const suffix of ['', '-wal', '-shm']) {
    if (existsSync(options.path + suffix)) chmodSync(options.path + suffix, 0o600);
  }
  const db = new Database(options.path);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.pragma(`busy_timeout = ${Math.trunc(options.busyTimeoutMs ?? 5000)}`);
  db.pragma('foreign_keys = ON');
  migrate(db);

  const selectKey = db.prepare<[string], KeyRow>(
    'SELECT wallet_id, scheme, public_key, created_at FROM keys WHERE wallet_id = ?',
  );
  const insertKeyRow = db.prepare<[string, string, string, string]>(
    'INSERT INTO keys (wallet_id, scheme, public_key, created_at) VALUES (?, ?, ?, ?) ON CONFLICT (wallet_id) DO NOTHING',
  );
  const insertShareRow = db.prepare<[string, string, ...SealedValues, string]>(
    `INSERT INTO shares (wallet_id, kind, ${SHARE_COLUMNS}, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const insertUserShareRow = db.prepare<[string, ...SealedValues, string]>(
    `INSERT INTO shares (wallet_id, kind, ${SHARE_COLUMNS}, created_at) VALUES (?, 'user', ?, ?, ?, ?, ?, ?, ?, ?) ` +
      'ON CONFLICT (wallet_id, kind) DO NOTHING',
  );
  const shareColumns = (alias: string) =>
    SHARE_COLUMNS.split(', ')
      .map((column) => `${alias}.${column} AS ${alias}_${column}`)
      .join(', ');
  const selectStoredKey = db.prepare<[string], StoredKeyRow>(
    `SELECT k.scheme, k.public_key, ${shareColumns('s')}, ${shareColumns('u')} ` +
      'FROM keys k ' +
      "LEFT JOIN shares s ON s.wallet_id = k.wallet_id AND s.kind = 'service' " +
      "LEFT JOIN shares u ON u.wallet_id = k.wallet_id AND u.kind = 'user' " +
      'WHERE k.wallet_id = ?',
  );
  const selectShares = db.prepare<[string], ShareRow>(
    `SELECT wallet_id, kind, ${SHARE_COLUMNS} FROM shares WHERE wallet_id = ? ORDER BY kind`,
  );
  const selectSealedKey = db.prepare<[string], SealedKeyRow>(
    `SELECT name, public_key, ${SHARE_COLUMNS}, created_at FROM sealed_keys WHERE name = ?`,
  );
  const insertSealedKey = db.prepare<[string, Uint8Array, ...SealedValues, string]>(
    `INSERT INTO sealed_keys (name, public_key, ${SHARE_COLUMNS}, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const selectMeta = db.prepare<[string], { value: string }>('SELECT value FROM meta WHERE name = ?');
  const upsertMeta = db.prepare<[string, string]>(
    'INSERT INTO meta (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value',
  );
  const selectRewrapShares = db.prepare<[string, string, string, number], RewrapShareRow>(
    'SELECT s.wallet_id, s.kind, k.scheme, s.key_id, s.wrap_cipher, s.dek_iv, s.wrapped_key ' +
      'FROM shares s JOIN keys k ON k.wallet_id = s.wallet_id ' +
      'WHERE (s.wallet_id, s.kind) > (?, ?) AND s.key_id != ? ORDER BY s.wallet_id, s.kind LIMIT ?',
  );
  const selectRewrapSealedKeys = db.prepare<[string], SealedKeyRow>(
    `SELECT name, public_key, ${SHARE_COLUMNS}, created_at FROM sealed_keys WHERE key_id != ? ORDER BY name`,
  );
  const updateShareWrap = db.prepare<[string, Cipher, Uint8Array, Uint8Array, string, string, string, Uint8Array]>(
    'UPDATE shares SET key_id = ?, wrap_cipher = ?, dek_iv = ?, wrapped_key = ? ' +
      'WHERE wallet_id = ? AND kind = ? AND key_id = ? AND dek_iv = ?',
  );
  const updateSealedKeyWrap = db.prepare<[string, Cipher, Uint8Array, Uint8Array, string, string, Uint8Array]>(
    'UPDATE sealed_keys SET key_id = ?, wrap_cipher = ?, dek_iv = ?, wrapped_key = ? ' +
      'WHERE name = ? AND key_id = ? AND dek_iv = ?',
  );
  const nextShareKeyId = db.prepare<[string], { key_id: string | null }>(
    'SELECT min(key_id) AS key_id FROM shares WHERE key_id > ?',
  );
  const hasShareKeyId = db.prepare<[string], { found: number }>(
    'SELECT EXISTS (SELECT 1 FROM shares WHERE key_id = ?) AS found',
  );
  const sealedKeyIds = db.prepare<[], { key_id: string }>('SELECT DISTINCT key_id FROM sealed_keys');
  const countSharesByKeyId = db.prepare<[], { key_id: string; rows: number }>(
    'SELECT key_id, count(*) AS rows FROM shares GROUP BY key_id',
  );
  const countSealedKeysByKeyId = db.prepare<[], { key_id: string; rows: number }>(
    'SELECT key_id, count(*) AS rows FROM sealed_keys GROUP BY key_id',
  );
  const insertEffectRow = db.prepare<[string, string, Uint8Array, string]>(
    'INSERT INTO effect_signatures (effect_key, wallet_id, message_sha256, created_at) VALUES (?, ?, ?, ?) ' +
      'ON CONFLICT (effect_key) DO NOTHING',
  );
  const selectEffectRow = db.prepare<[string], EffectRow>(
    'SELECT effect_key, wallet_id, message_sha256, created_at FROM effect_signatures WHERE effect_key = ?',
  );
  const deleteOldEffectRows = db.prepare<[string, number]>(
    'DELETE FROM effect_signatures WHERE effect_key IN ' +
      '(SELECT effect_key FROM effect_signatures WHERE created_at < ? ORDER BY created_at LIMIT ?)',
  );

  const writeBatch = db.transaction((batch: WriteBatch): WriteOutcomes => {
    const now = new Date().toISOString();
    const keys = batch.keys.map((key): InsertOutcome => {
      if (insertKeyRow.run(key.walletId, key.scheme, key.publicKey, now).changes === 0) {
        // Another key holds this wallet id (earlier, or earlier in this very batch): it wins.
        return { created: false, record: toKeyRecord(selectKey.get(key.walletId)!) };
      }
      for (const share of key.shares) insertShareRow.run(key.walletId, share.kind, ...sealedValues(share), now);
      return {
        created: true,
        record: { walletId: key.walletId, scheme: key.scheme, publicKey: key.publicKey, createdAt: now },
      };
    });
    const userShares = batch.userShares.map(({ walletId, share }): UserShareOutcome => {
      // The key row is checked first: a share for a missing key would break the foreign key and fail the batch.
      if (!selectKey.get(walletId)) return 'no-key';
      const { changes } = insertUserShareRow.run(walletId, ...sealedValues(share), now);
      return changes === 1 ? 'created' : 'exists';
    });
    const effects = batch.effects.map(({ effectKey, walletId, messageSha256 }): EffectOutcome => {
      if (insertEffectRow.run(effectKey, walletId, messageSha256, now).changes === 1) return 'recorded';
      // Recorded earlier, or earlier in this very batch: the first record decides.
      const row = selectEffectRow.get(effectKey)!;
      return row.wallet_id === walletId && Buffer.from(messageSha256).equals(row.message_sha256)
        ? 'replayed'
        : 'conflict';
    });
    return { keys, userShares, effects };
  });
  const applyRewrapBatch = db.transaction((updates: readonly RewrapUpdate[]): number => {
    let changed = 0;
    for (const { row, from, to } of updates) {
      const values = [to.keyId, to.wrapCipher, to.dekIv, to.wrappedKey] as const;
      changed +=
        row.table === 'shares'
          ? updateShareWrap.run(...values, row.walletId, row.kind, from.keyId, from.dekIv).changes
          : updateSealedKeyWrap.run(...values, row.name, from.keyId, from.dekIv).changes;
    }
    return changed;
  });
  const labelRows = db.transaction((keyId: string): number => {
    let changed = 0;
    for (const table of ['shares', 'sealed_keys']) {
      changed += db.prepare(`UPDATE ${table} SET key_id = ? WHERE key_id = ?`).run(keyId, UNLABELED_KEY_ID).changes;
    }
    return changed;
  });
  let closed = false;

  return {
    /** The key of a wallet, if any. */
    getKey(walletId: string): KeyRecord | undefined {
      const row = selectKey.get(walletId);
      return row ? toKeyRecord(row) : undefined;
    },

    /**
     * Stores new keys and their sealed shares in one `BEGIN IMMEDIATE … COMMIT` (fsynced when this returns), in
     * order. A key whose wallet id is already taken (also by an earlier key of the same batch) is not written:
     * its outcome is the existing key with `created: false`.
     */
    insertKeys(keys: readonly NewKey[]): InsertOutcome[] {
      return writeBatch.immediate({ keys, userShares: [], effects: [] }).keys;
    },

    /**
     * One group commit (`BEGIN IMMEDIATE … COMMIT`, fsynced when this returns): new keys as `insertKeys` does,
     * then migrated user shares (`ON CONFLICT DO NOTHING`: a wallet that already holds one keeps it), then effect
     * records (a key already recorded is compared, never overwritten: see EffectOutcome).
     */
    write(batch: WriteBatch): WriteOutcomes {
      return writeBatch.immediate(batch);
    },

    /** A wallet's key and its sealed shares, in one indexed read. */
    getStoredKey(walletId: string): StoredKey | undefined {
      const row = selectStoredKey.get(walletId);
      if (!row) return undefined;
      return {
        walletId,
        scheme: row.scheme,
        publicKey: row.public_key,
        service: joinedShare(row, 's'),
        user: joinedShare(row, 'u'),
      };
    },

    /** The sealed shares of a wallet (for signing workers; never unsealed here). */
    getShares(walletId: string): SealedShare[] {
      return selectShares.all(walletId).map((row) => ({ kind: row.kind, ...toSealedBlob(row) }));
    },

    /** The sealed ECIES key, if generated. */
    getEciesKey(): EciesKeyRecord | undefined {
      const row = selectSealedKey.get(ECIES_NAME);
      if (!row) return undefined;
      return { publicKey: row.public_key, sealed: toSealedBlob(row), generatedAt: row.created_at };
    },

    /** Stores the sealed ECIES key (once; a second call throws on the primary key). */
    insertEciesKey(record: EciesKeyRecord): void {
      insertSealedKey.run(ECIES_NAME, record.publicKey, ...sealedValues(record.sealed), record.generatedAt);
    },

    /** The id of the master key that seals new rows (meta), once the enclave has recorded it. */
    getSealKeyId(): string | undefined {
      return selectMeta.get(SEAL_KEY_META)?.value;
    },

    /** Records the id of the master key that seals new rows (fsynced when this returns). */
    setSealKeyId(keyId: string): void {
      upsertMeta.run(SEAL_KEY_META, keyId);
    },

    /** The sealed identity key, if generated. */
    getIdentityKey(): IdentityKeyRecord | undefined {
      const row = selectSealedKey.get(IDENTITY_NAME);
      if (!row) return undefined;
      return { publicKey: row.public_key, sealed: toSealedBlob(row), generatedAt: row.created_at };
    },

    /** Stores the sealed identity key (once; a second call throws on the primary key). */
    insertIdentityKey(record: IdentityKeyRecord): void {
      insertSealedKey.run(IDENTITY_NAME, record.publicKey, ...sealedValues(record.sealed), record.generatedAt);
    },

    /**
     * Labels the rows of an earlier version (key id UNLABELED_KEY_ID) with the id of the master key that opens
     * them, in one transaction. Returns the number of rows labeled.
     */
    labelUnlabeledRows(keyId: string): number {
      return labelRows.immediate(keyId);
    },

    /**
     * The distinct key ids of all sealed rows (UNLABELED_KEY_ID included when such rows exist). One index seek per
     * distinct id, so this is cheap at every start whatever the number of rows.
     */
    keyIdsInUse(): string[] {
      const ids = new Set<string>(sealedKeyIds.all().map((row) => row.key_id));
      if (hasShareKeyId.get(UNLABELED_KEY_ID)!.found) ids.add(UNLABELED_KEY_ID);
      for (let id = nextShareKeyId.get(UNLABELED_KEY_ID)!.key_id; id !== null; ) {
        ids.add(id);
        id = nextShareKeyId.get(id)!.key_id;
      }
      return [...ids].sort();
    },

    /** Sealed rows per key id (an index scan: for status reads, not for every request). */
    countRowsByKeyId(): Record<string, number> {
      const counts: Record<string, number> = {};
      for (const row of [...countSharesByKeyId.all(), ...countSealedKeysByKeyId.all()]) {
        counts[row.key_id] = (counts[row.key_id] ?? 0) + row.rows;
      }
      return counts;
    },

    /**
     * Up to `limit` share rows not wrapped by `keyId`, in primary-key order after `after` (from the start when
     * undefined), with their seal contexts; `next` is where the following page starts (undefined after the last).
     */
    rewrapPage(
      keyId: string,
      after: RewrapCursor | undefined,
      limit: number,
    ): { rows: RewrapRow[]; next: RewrapCursor | undefined } {
      const rows = selectRewrapShares.all(after?.walletId ?? '', after?.kind ?? '', keyId, limit);
      const last = rows[rows.length - 1];
      return {
        rows: rows.map((row) => ({
          table: 'shares',
          walletId: row.wallet_id,
          kind: row.kind,
          context: shareContext(row.wallet_id, row.scheme, row.kind),
          wrapped: { keyId: row.key_id, wrapCipher: row.wrap_cipher, dekIv: row.dek_iv, wrappedKey: row.wrapped_key },
        })),
        next: rows.length === limit && last ? { walletId: last.wallet_id, kind: last.kind } : undefined,
      };
    },

    /** The sealed-key rows (ECIES key and the like) not wrapped by `keyId`; `context` is undefined if unknown. */
    sealedKeysNotUnder(keyId: string): RewrapRow[] {
      return selectRewrapSealedKeys.all(keyId).map((row) => ({
        table: 'sealed_keys',
        name: row.name,
        context: SEALED_KEY_CONTEXTS[row.name],
        wrapped: { keyId: row.key_id, wrapCipher: row.wrap_cipher, dekIv: row.dek_iv, wrappedKey: row.wrapped_key },
      }));
    },

    /**
     * Replaces the wrap layer of rows in one transaction (fsynced when this returns): each row only if it still
     * has the wrap layer it was read with, so a row changed since is left alone. The data layer is never touched.
     * Returns the number of rows changed.
     */
    applyRewrap(updates: readonly RewrapUpdate[]): number {
      return applyRewrapBatch.immediate(updates);
    },

    /** The effect record of `effectKey`, if any. */
    getEffectRecord(effectKey: string): StoredEffectRecord | undefined {
      const row = selectEffectRow.get(effectKey);
      if (!row) return undefined;
      return {
        effectKey: row.effect_key,
        walletId: row.wallet_id,
        messageSha256: row.message_sha256,
        createdAt: row.created_at,
      };
    },

    /**
     * Deletes up to `limit` effect records created before `before` (an ISO time), oldest first, in one transaction
     * (fsynced when this returns). Returns the number deleted: fewer than `limit` means none older is left.
     */
    pruneEffectRecords(before: string, limit: number): number {
      return deleteOldEffectRows.run(before, limit).changes;
    },

    /** Closes the database. */
    close(): void {
      if (closed) return;
      closed = true;
      db.close();
    },
  };
}

export type KeyStore = ReturnType<typeof createKeyStore>;

/** Creates the schema on a new database and brings an existing one to SCHEMA_VERSION. Idempotent. */
function migrate(db: Database.Database): void {
  const version = db.pragma('user_version', { simple: true }) as number;
  if (version > SCHEMA_VERSION) {
    throw new Error(
      `enclave key store schema version ${version} is newer than this build understands (${SCHEMA_VERSION})`,
    );
  }
  db.transaction(() => {
    // Read again inside the write transaction: another connection may have migrated meanwhile.
    const current = db.pragma('user_version', { simple: true }) as number;
    if (current < 1) db.exec(SCHEMA_V1);
    if (current < 2) db.exec(SCHEMA_V2);
    if (current < 3) db.exec(SCHEMA_V3);
    if (current < SCHEMA_VERSION) db.pragma(`user_version = ${SCHEMA_VERSION}`);
  }).immediate();
}

type SealedValues = [string, Cipher, Uint8Array, Uint8Array, Cipher, Uint8Array, Uint8Array];

/** A sealed record's values in SHARE_COLUMNS order. */
function sealedValues(blob: SealedBlob): SealedValues {
  return [blob.keyId, blob.wrapCipher, blob.dekIv, blob.wrappedKey, blob.dataCipher, blob.iv, blob.ciphertext];
}
