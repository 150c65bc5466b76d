import type Database from 'better-sqlite3';
import { and, desc, eq, isNull, lt, type SQL, sql } from 'drizzle-orm';
import type { Db } from './db.ts';
import { wallets } from './schema.ts';

export type WalletRow = typeof wallets.$inferSelect;
export type WalletInsert = typeof wallets.$inferInsert;

export interface WalletListFilter {
  userIdentifier?: string;
  userIdentifierType?: WalletRow['userIdentifierType'];
  type?: WalletRow['type'];
  status?: WalletRow['status'];
  address?: string;
  /** Only rows with seq below this (newest-first paging). */
  beforeSeq?: number;
  limit: number;
}

/** Rows kept in memory by id: every signing request reads its wallet, and a cached read is ~100x cheaper. */
const CACHED_ROWS = 20_000;

/**
 * Wallet rows. Every read is scoped to a project: another project's wallet does not exist.
 *
 * Reads by id go through a cache of whole rows. This process is the database's only writer and every write
 * to `wallets` goes through this repository, which drops the row from the cache first; rows are cached only
 * from reads outside a transaction, so a write that is later rolled back never leaves its row cached.
 */
export function createWalletsRepo(db: Db, sqlite: Pick<Database.Database, 'inTransaction'>) {
  const byAnyId = db
    .select()
    .from(wallets)
    .where(eq(wallets.id, sql.placeholder('id')))
    .prepare();
  const byIdentity = db
    .select({ id: wallets.id })
    .from(wallets)
    .where(
      and(
        eq(wallets.projectId, sql.placeholder('projectId')),
        eq(wallets.userIdentifierType, sql.placeholder('userIdentifierType')),
        eq(wallets.userIdentifier, sql.placeholder('userIdentifier')),
        eq(wallets.type, sql.placeholder('type')),
        eq(wallets.scheme, sql.placeholder('scheme')),
      ),
    )
    .prepare();
  const insertStmt = db.insert(wallets).values({
    id: sql.placeholder('id'),
    projectId: sql.placeholder('projectId'),
    type: sql.placeholder('type'),
    scheme: sql.placeholder('scheme'),
    status: sql.placeholder('status'),
    address: sql.placeholder('address'),
    publicKey: sql.placeholder('publicKey'),
    userIdentifier: sql.placeholder('userIdentifier'),
    userIdentifierType: sql.placeholder('userIdentifierType'),
    cosmosPrefix: sql.placeholder('cosmosPrefix'),
    custody: sql.placeholder('custody'),
    claimedAt: sql.placeholder('claimedAt'),
    createdAt: sql.placeholder('createdAt'),
    updatedAt: sql.placeholder('updatedAt'),
    seq: sql.placeholder('seq'),
  });
  const insertPrepared = insertStmt.prepare();
  const markReadyStmt = db
    .update(wallets)
    .set({
      status: 'ready',
      address: sql`${sql.placeholder('address')}`,
      publicKey: sql`${sql.placeholder('publicKey')}`,
      updatedAt: sql`${sql.placeholder('updatedAt')}`,
    })
    .where(eq(wallets.id, sql.placeholder('id')))
    .prepare();
  const deleteStmt = db
    .delete(wallets)
    .where(eq(wallets.id, sql.placeholder('id')))
    .prepare();

  let lastSeq: number | undefined;
  const cache = new Map<string, WalletRow>();

  function cached(id: string): WalletRow | undefined {
    const hit = cache.get(id);
    if (hit) return hit;
    const row = byAnyId.get({ id });
    if (row && !sqlite.inTransaction) {
      if (cache.size >= CACHED_ROWS) cache.delete(cache.keys().next().value!);
      cache.set(id, row);
    }
    return row;
  }

  return {
    /** Next insertion sequence number (single writer process). */
    nextSeq(): number {
      if (lastSeq === undefined) {
        const r = db
          .select({ m: sql<number | null>`max(${wallets.seq})` })
          .from(wallets)
          .get();
        lastSeq = r?.m ?? 0;
      }
      lastSeq += 1;
      return lastSeq;
    },
    insert(row: WalletInsert): void {
      insertPrepared.run({
        address: null,
        publicKey: null,
        cosmosPrefix: null,
        custody: 'managed',
        claimedAt: null,
        ...row,
      });
    },
    /** Sets a wallet's key material; false when the row is not there. */
    markReady(id: string, v: { address: string; publicKey: string; updatedAt: string }): boolean {
      cache.delete(id);
      return markReadyStmt.run({ id, ...v }).changes === 1;
    },
    delete(id: string): void {
      cache.delete(id);
      deleteStmt.run({ id });
    },
    /**
     * Marks a wallet claimed by `claimedByUserId`. Only an unclaimed wallet changes: returns the updated row,
     * or undefined when the wallet is missing or was already claimed.
     */
    claim(id: string, v: { claimedAt: string; claimedByUserId: string }): WalletRow | undefined {
      cache.delete(id);
      return db
        .update(wallets)
        .set({ ...v, updatedAt: v.claimedAt })
        .where(and(eq(wallets.id, id), isNull(wallets.claimedAt)))
        .returning()
        .get();
    },
    /** Records that the user share of a pre-generated wallet is now in the enclave (first time only). */
    markShareMigrated(id: string, at: string): WalletRow | undefined {
      cache.delete(id);
      return db
        .update(wallets)
        .set({ shareMigratedAt: at, updatedAt: at })
        .where(and(eq(wallets.id, id), isNull(wallets.shareMigratedAt)))
        .returning()
        .get();
    },
    get(projectId: string, id: string): WalletRow | undefined {
      const row = cached(id);
      return row?.projectId === projectId ? row : undefined;
    },
    /** Any project's wallet: for the actor host and the operator only. */
    getAny(id: string): WalletRow | undefined {
      return cached(id);
    },
    findIdByIdentity(k: Pick<WalletRow, 'projectId' | 'userIdentifierType' | 'userIdentifier' | 'type' | 'scheme'>) {
      return byIdentity.get(k)?.id;
    },
    list(projectId: string, f: WalletListFilter): WalletRow[] {
      const where: SQL[] = [eq(wallets.projectId, projectId)];
      if (f.userIdentifier !== undefined) where.push(eq(wallets.userIdentifier, f.userIdentifier));
      if (f.userIdentifierType !== undefined) where.push(eq(wallets.userIdentifierType, f.userIdentifierType));
      if (f.type !== undefined) where.push(eq(wallets.type, f.type));
      if (f.status !== undefined) where.push(eq(wallets.status, f.status));
      if (f.address !== undefined) where.push(eq(wallets.address, f.address));
      if (f.beforeSeq !== undefined) where.push(lt(wallets.seq, f.beforeSeq));
      return db
        .select()
        .from(wallets)
        .where(and(...where))
        .orderBy(desc(wallets.seq))
        .limit(f.limit)
        .all();
    },
    updateIdentity(
      projectId: string,
      id: string,
      v: Partial<Pick<WalletRow, 'userIdentifier' | 'userIdentifierType'>> & { updatedAt: string },
    ): WalletRow | undefined {
      cache.delete(id);
      return db
        .update(wallets)
        .set(v)
        .where(and(eq(wallets.id, id), eq(wallets.projectId, projectId)))
        .returning()
        .get();
    },
  };
}

export type WalletsRepo = ReturnType<typeof createWalletsRepo>;
