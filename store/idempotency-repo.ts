import type Database from 'better-sqlite3';

/** What a key names: who sent it, for which route and wallet, with which body (store/schema.ts `idempotencyKeys`). */
export interface IdempotencyName {
  projectId: string;
  key: string;
  /** The route's OpenAPI operationId. */
  operation: string;
  walletId: string | null;
  /** SHA-256 (hex) of the body in canonical JSON. */
  fingerprint: string;
}

/** A key held by a request: what it names, its answer cache's span, and the record it wrote, once written. */
export interface IdempotencyClaim extends IdempotencyName {
  createdAt: number;
  /** When the answer cache ends (epoch ms); null: the key names its operation for good. */
  expiresAt: number | null;
  /** The payment record the key names, set once that record (and the key with it) is committed. */
  transactionId: string | null;
}

/** An answer as it is replayed: status, body as sent, and the headers worth replaying. */
export interface StoredAnswer {
  statusCode: number;
  body: string;
  headers: Record<string, string>;
}

export interface IdempotencyRow extends IdempotencyName {
  transactionId: string | null;
  answer: StoredAnswer | null;
  createdAt: number;
  expiresAt: number | null;
}

interface RawRow extends IdempotencyName {
  transactionId: string | null;
  statusCode: number | null;
  body: string | null;
  headers: string | null;
  createdAt: number;
  expiresAt: number | null;
}

const COLUMNS = `project_id as projectId, key, operation, wallet_id as walletId, fingerprint,
  transaction_id as transactionId, status_code as statusCode, body, headers, created_at as createdAt,
  expires_at as expiresAt`;

/**
 * Writes a key, or takes over the row of an expired one (its 24 hours are over: the key may name something new);
 * a live row is left alone, and `changes` says 0.
 */
const UPSERT = `insert into idempotency_keys
    (project_id, key, operation, wallet_id, fingerprint, transaction_id, status_code, body, headers, created_at, expires_at)
  values (@projectId, @key, @operation, @walletId, @fingerprint, @transactionId, @statusCode, @body, @headers,
    @createdAt, @expiresAt)
  on conflict (project_id, key) do update set operation = excluded.operation, wallet_id = excluded.wallet_id,
    fingerprint = excluded.fingerprint, transaction_id = excluded.transaction_id, status_code = excluded.status_code,
    body = excluded.body, headers = excluded.headers, created_at = excluded.created_at, expires_at = excluded.expires_at
  where idempotency_keys.expires_at is not null and idempotency_keys.expires_at <= @createdAt`;

function toRow(r: RawRow | undefined): IdempotencyRow | undefined {
  if (!r) return undefined;
  const { statusCode, body, headers, ...rest } = r;
  return {
    ...rest,
    answer:
      statusCode !== null && body !== null
        ? { statusCode, body, headers: headers ? (JSON.parse(headers) as Record<string, string>) : {} }
        : null,
  };
}

/**
 * The `idempotency_keys` table. Every write here is synchronous and meant to run inside a writer transaction: `bind`
 * in the one that writes the record the key names, the others through `store.writer.write`.
 */
export function createIdempotencyRepo(sqlite: Database.Database) {
  const find = sqlite.prepare(
    `select ${COLUMNS} from idempotency_keys where project_id = ? and key = ?
      and (expires_at is null or expires_at > ?)`,
  );
  const upsert = sqlite.prepare(UPSERT);
  const answerBound = sqlite.prepare(
    `update idempotency_keys set status_code = @statusCode, body = @body, headers = @headers
      where project_id = @projectId and key = @key and transaction_id = @transactionId and status_code is null`,
  );
  const purge = sqlite.prepare(
    `delete from idempotency_keys where rowid in (select rowid from idempotency_keys
      where expires_at is not null and expires_at <= ? limit ?)`,
  );

  return {
    /** The live row of a key (an expired one is as good as absent). */
    find(projectId: string, key: string, now: number): IdempotencyRow | undefined {
      return toRow(find.get(projectId, key, now) as RawRow | undefined);
    },

    /**
     * Writes the key as naming the record `transactionId`, in the transaction that writes the record: false when a
     * live row already holds the key (the caller must then undo the record, by throwing).
     */
    bind(claim: IdempotencyClaim, transactionId: string): boolean {
      const { projectId, key, operation, walletId, fingerprint, createdAt, expiresAt } = claim;
      const r = upsert.run({
        ...{ projectId, key, operation, walletId, fingerprint, createdAt, expiresAt },
        transactionId,
        statusCode: null,
        body: null,
        headers: null,
      });
      return r.changes === 1;
    },

    /**
     * Stores the answer of a key: on the row its record bound, or as a new row. False when a live row holds the key
     * otherwise (nothing written).
     */
    saveAnswer(claim: IdempotencyClaim, answer: StoredAnswer): boolean {
      const { projectId, key, operation, walletId, fingerprint, createdAt, expiresAt, transactionId } = claim;
      const fields = { statusCode: answer.statusCode, body: answer.body, headers: JSON.stringify(answer.headers) };
      if (transactionId !== null) return answerBound.run({ projectId, key, transactionId, ...fields }).changes === 1;
      const name = { projectId, key, operation, walletId, fingerprint };
      return upsert.run({ ...name, transactionId: null, ...fields, createdAt, expiresAt }).changes === 1;
    },

    /** Deletes up to `limit` keys whose answer cache ended at or before `now`; answers how many. */
    purgeExpired(now: number, limit: number): number {
      return purge.run(now, limit).changes;
    },
  };
}

export type IdempotencyRepo = ReturnType<typeof createIdempotencyRepo>;
