/**
 * The enclave's own SQLite store (`$DATA_DIR/enclave/keys.db`): public keys, sealed key shares and the sealed
 * ECIES and identity keys. It never sees a plaintext share: workers seal before rows get here (see envelope.ts).
 *
 * WAL with `synchronous = FULL`: when a write transaction returns, it has been fsynced. New keys are written in
 * batches (`insertKeys`), which key-writer.ts feeds with group commits from its own thread.
 */
import { chmodSync, closeSync, existsSync, openSync } from 'node:fs';
import Database from 'better-sqlite3';
import {
  ECIES_CONTEXT,
  IDENTITY_CONTEXT,
  rewrap,
  type SealedBlob,
  type SealedShare,
  type ShareKind,
  shareContext,
} from './envelope.ts';
import type { Scheme } from './protocol.ts';

export const SCHEMA_VERSION = 1;

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

/** What one group commit writes, and its outcomes (one per item, in order). */
export interface WriteBatch {
  keys: readonly NewKey[];
  userShares: readonly NewUserShare[];
}
export interface WriteOutcomes {
  keys: InsertOutcome[];
  userShares: UserShareOutcome[];
}

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

const ECIES_NAME = 'ecies-p256';
/** A row of the existing `sealed_keys` table (a store without it gains it at its next start): no schema step. */
const IDENTITY_NAME = 'identity-ed25519';
const REWRAP_PAGE = 1000;

interface KeyRow {
  wallet_id: string;
  scheme: Scheme;
  public_key: string;
  created_at: string;
}

interface ShareRow {
  wallet_id: string;
  kind: ShareKind;
  dek_iv: Buffer;
  wrapped_key: Buffer;
  iv: Buffer;
  ciphertext: Buffer;
}

/** keys LEFT JOIN shares (service) LEFT JOIN shares (user): one row per wallet. */
interface StoredKeyRow {
  scheme: Scheme;
  public_key: string;
  s_dek_iv: Buffer | null;
  s_wrapped_key: Buffer | null;
  s_iv: Buffer | null;
  s_ciphertext: Buffer | null;
  u_dek_iv: Buffer | null;
  u_wrapped_key: Buffer | null;
  u_iv: Buffer | null;
  u_ciphertext: Buffer | null;
}

interface SealedKeyRow {
  name: string;
  public_key: Buffer;
  dek_iv: Buffer;
  wrapped_key: Buffer;
  iv: Buffer;
  ciphertext: Buffer;
  created_at: string;
}

function toKeyRecord(row: KeyRow): KeyRecord {
  return { walletId: row.wallet_id, scheme: row.scheme, publicKey: row.public_key, createdAt: row.created_at };
}

function toSealedBlob(
  dekIv: Buffer | null,
  wrappedKey: Buffer | null,
  iv: Buffer | null,
  ciphertext: Buffer | null,
): SealedBlob | undefined {
  return dekIv && wrappedKey && iv && ciphertext ? { dekIv, wrappedKey, iv, ciphertext } : undefined;
}

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
  const insertShareRow = db.prepare<[string, string, Uint8Array, Uint8Array, Uint8Array, Uint8Array, string]>(
    'INSERT INTO shares (wallet_id, kind, dek_iv, wrapped_key, iv, ciphertext, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
  );
  const insertUserShareRow = db.prepare<[string, Uint8Array, Uint8Array, Uint8Array, Uint8Array, string]>(
    "INSERT INTO shares (wallet_id, kind, dek_iv, wrapped_key, iv, ciphertext, created_at) VALUES (?, 'user', ?, ?, ?, ?, ?) " +
      'ON CONFLICT (wallet_id, kind) DO NOTHING',
  );
  const selectStoredKey = db.prepare<[string], StoredKeyRow>(
    'SELECT k.scheme, k.public_key, ' +
      's.dek_iv AS s_dek_iv, s.wrapped_key AS s_wrapped_key, s.iv AS s_iv, s.ciphertext AS s_ciphertext, ' +
      'u.dek_iv AS u_dek_iv, u.wrapped_key AS u_wrapped_key, u.iv AS u_iv, u.ciphertext AS u_ciphertext ' +
      'FROM keys k ' +
      "LEFT JOIN shares s ON s.wallet_id = k.wallet_id AND s.kind = 'service' " +
      "LEFT JOIN shares u ON u.wallet_id = k.wallet_id AND u.kind = 'user' " +
      'WHERE k.wallet_id = ?',
  );
  const selectShares = db.prepare<[string], ShareRow>(
    'SELECT wallet_id, kind, dek_iv, wrapped_key, iv, ciphertext FROM shares WHERE wallet_id = ? ORDER BY kind',
  );
  const selectSealedKey = db.prepare<[string], SealedKeyRow>(
    'SELECT name, public_key, dek_iv, wrapped_key, iv, ciphertext, created_at FROM sealed_keys WHERE name = ?',
  );
  const insertSealedKey = db.prepare<[string, Uint8Array, Uint8Array, Uint8Array, Uint8Array, Uint8Array, string]>(
    'INSERT INTO sealed_keys (name, public_key, dek_iv, wrapped_key, iv, ciphertext, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
  );

  const writeBatch = db.transaction((batch: WriteBatch): WriteOutcomes => {
    const now = new Date().toISOString();
    const keys = batch.keys.map((key): InsertOutcome => {
      if (insertKeyRow.run(key.walletId, key.scheme, key.publicKey, now).changes === 0) {
        // Another key holds this wallet id (earlier, or earlier in this very batch): it wins.
        return { created: false, record: toKeyRecord(selectKey.get(key.walletId)!) };
      }
      for (const share of key.shares) {
        insertShareRow.run(key.walletId, share.kind, share.dekIv, share.wrappedKey, share.iv, share.ciphertext, now);
      }
      return {
        created: true,
        record: { walletId: key.walletId, scheme: key.scheme, publicKey: key.publicKey, createdAt: now },
      };
    });
    const userShares = batch.userShares.map(({ walletId, share }): UserShareOutcome => {
      // The key row is checked first: a share for a missing key would break the foreign key and fail the batch.
      if (!selectKey.get(walletId)) return 'no-key';
      const { changes } = insertUserShareRow.run(
        walletId,
        share.dekIv,
        share.wrappedKey,
        share.iv,
        share.ciphertext,
        now,
      );
      return changes === 1 ? 'created' : 'exists';
    });
    return { keys, userShares };
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
      return writeBatch.immediate({ keys, userShares: [] }).keys;
    },

    /**
     * One group commit (`BEGIN IMMEDIATE … COMMIT`, fsynced when this returns): new keys as `insertKeys` does,
     * then migrated user shares (`ON CONFLICT DO NOTHING`: a wallet that already holds one keeps it).
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
        service: toSealedBlob(row.s_dek_iv, row.s_wrapped_key, row.s_iv, row.s_ciphertext),
        user: toSealedBlob(row.u_dek_iv, row.u_wrapped_key, row.u_iv, row.u_ciphertext),
      };
    },

    /** The sealed shares of a wallet (for signing workers; never unsealed here). */
    getShares(walletId: string): SealedShare[] {
      return selectShares.all(walletId).map((row) => ({
        kind: row.kind,
        dekIv: row.dek_iv,
        wrappedKey: row.wrapped_key,
        iv: row.iv,
        ciphertext: row.ciphertext,
      }));
    },

    /** The sealed ECIES key, if generated. */
    getEciesKey(): EciesKeyRecord | undefined {
      const row = selectSealedKey.get(ECIES_NAME);
      if (!row) return undefined;
      return {
        publicKey: row.public_key,
        sealed: { dekIv: row.dek_iv, wrappedKey: row.wrapped_key, iv: row.iv, ciphertext: row.ciphertext },
        generatedAt: row.created_at,
      };
    },

    /** Stores the sealed ECIES key (once; a second call throws on the primary key). */
    insertEciesKey(record: EciesKeyRecord): void {
      const { sealed } = record;
      insertSealedKey.run(
        ECIES_NAME,
        record.publicKey,
        sealed.dekIv,
        sealed.wrappedKey,
        sealed.iv,
        sealed.ciphertext,
        record.generatedAt,
      );
    },

    /** The sealed identity key, if generated. */
    getIdentityKey(): IdentityKeyRecord | undefined {
      const row = selectSealedKey.get(IDENTITY_NAME);
      if (!row) return undefined;
      return {
        publicKey: row.public_key,
        sealed: { dekIv: row.dek_iv, wrappedKey: row.wrapped_key, iv: row.iv, ciphertext: row.ciphertext },
        generatedAt: row.created_at,
      };
    },

    /** Stores the sealed identity key (once; a second call throws on the primary key). */
    insertIdentityKey(record: IdentityKeyRecord): void {
      const { sealed } = record;
      insertSealedKey.run(
        IDENTITY_NAME,
        record.publicKey,
        sealed.dekIv,
        sealed.wrappedKey,
        sealed.iv,
        sealed.ciphertext,
        record.generatedAt,
      );
    },

    /**
     * Master-key rotation: re-wraps every data key (shares, ECIES and identity keys) from `oldKey` to `newKey` in one
     * transaction; the sealed secrets themselves are untouched. All or nothing: if `oldKey` fails to open any
     * record, nothing changes and this throws. Run it while no enclave process is using the store.
     * Returns the number of records re-wrapped.
     */
    rewrapAll(oldKey: Uint8Array, newKey: Uint8Array): number {
      const page = db.prepare<[string, string, number], ShareRow>(
        'SELECT wallet_id, kind, dek_iv, wrapped_key, iv, ciphertext FROM shares ' +
          'WHERE (wallet_id, kind) > (?, ?) ORDER BY wallet_id, kind LIMIT ?',
      );
      const updateShare = db.prepare<[Uint8Array, Uint8Array, string, string]>(
        'UPDATE shares SET dek_iv = ?, wrapped_key = ? WHERE wallet_id = ? AND kind = ?',
      );
      const updateSealedKey = db.prepare<[Uint8Array, Uint8Array, string]>(
        'UPDATE sealed_keys SET dek_iv = ?, wrapped_key = ? WHERE name = ?',
      );
      const run = db.transaction((): number => {
        let count = 0;
        let after: [string, string] = ['', ''];
        for (;;) {
          const rows = page.all(after[0], after[1], REWRAP_PAGE);
          for (const row of rows) {
            const scheme = selectKey.get(row.wallet_id)!.scheme;
            const wrapped = rewrap(oldKey, newKey, shareContext(row.wallet_id, scheme, row.kind), {
              dekIv: row.dek_iv,
              wrappedKey: row.wrapped_key,
            });
            updateShare.run(wrapped.dekIv, wrapped.wrappedKey, row.wallet_id, row.kind);
            count++;
          }
          if (rows.length < REWRAP_PAGE) break;
          const last = rows[rows.length - 1]!;
          after = [last.wallet_id, last.kind];
        }
        for (const [name, context] of [
          [ECIES_NAME, ECIES_CONTEXT],
          [IDENTITY_NAME, IDENTITY_CONTEXT],
        ] as const) {
          const row = selectSealedKey.get(name);
          if (!row) continue;
          const wrapped = rewrap(oldKey, newKey, context, { dekIv: row.dek_iv, wrappedKey: row.wrapped_key });
          updateSealedKey.run(wrapped.dekIv, wrapped.wrappedKey, name);
          count++;
        }
        return count;
      });
      return run.immediate();
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

/** Creates the schema on a new database and checks the version of an existing one. Idempotent. */
function migrate(db: Database.Database): void {
  const version = db.pragma('user_version', { simple: true }) as number;
  if (version > SCHEMA_VERSION) {
    throw new Error(
      `enclave key store schema version ${version} is newer than this build understands (${SCHEMA_VERSION})`,
    );
  }
  db.transaction(() => {
    db.exec(SCHEMA_V1);
    db.pragma(`user_version = ${SCHEMA_VERSION}`);
  }).immediate();
}
