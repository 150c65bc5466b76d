import { and, eq, gt, isNull, sql } from 'drizzle-orm';
import type { Db } from './db.ts';
import { apiKeys, projects } from './schema.ts';

export type ApiKeyRow = typeof apiKeys.$inferSelect;

/** A key as the operator's list reads it: never its secret hash. */
export type ListedApiKey = Omit<ApiKeyRow, 'secretHash'> & { seq: number };

/** The table's rowid: insertion order, so a page boundary stays put while keys are created. */
const seq = sql<number>`${apiKeys}.rowid`;

/** What authentication needs to know about a key: the key and its live project. */
export interface KeyPrincipal {
  keyId: string;
  environment: ApiKeyRow['environment'];
  secretHash: string;
  projectId: string;
  plan: (typeof projects.$inferSelect)['plan'];
  rateLimitPerMinute: number | null;
  ipAllowlist: string[];
}

/** API keys, stored as SHA-256 hashes of their secrets. */
export function createApiKeysRepo(db: Db) {
  const byHash = db
    .select({
      keyId: apiKeys.id,
      environment: apiKeys.environment,
      secretHash: apiKeys.secretHash,
      projectId: projects.id,
      plan: projects.plan,
      rateLimitPerMinute: projects.rateLimitPerMinute,
      ipAllowlist: projects.ipAllowlist,
    })
    .from(apiKeys)
    .innerJoin(projects, eq(projects.id, apiKeys.projectId))
    .where(and(eq(apiKeys.secretHash, sql.placeholder('hash')), isNull(projects.deletedAt)))
    .prepare();
  // Prepared once: every auto-retry replacement reads its key (has it rotated since admission?), and building the
  // query each time cost more than the rest of the replacement's authority check (`npm run bench:auto-retry`, profiled).
  const byId = db
    .select({
      id: apiKeys.id,
      projectId: apiKeys.projectId,
      environment: apiKeys.environment,
      secretHash: apiKeys.secretHash,
      createdAt: apiKeys.createdAt,
      rotatedAt: apiKeys.rotatedAt,
    })
    .from(apiKeys)
    .innerJoin(projects, eq(projects.id, apiKeys.projectId))
    .where(and(eq(apiKeys.id, sql.placeholder('id')), isNull(projects.deletedAt)))
    .prepare();

  return {
    insert(row: typeof apiKeys.$inferInsert): ApiKeyRow {
      return db.insert(apiKeys).values(row).returning().get();
    },
    /** The key whose secret hashes to `hash`, with its project, if the project is live. */
    findPrincipalByHash(hash: string): KeyPrincipal | undefined {
      const r = byHash.get({ hash });
      if (!r) return undefined;
      return { ...r, ipAllowlist: JSON.parse(r.ipAllowlist) as string[] };
    },
    /** A key of a live project. */
    get(id: string): ApiKeyRow | undefined {
      return byId.get({ id });
    },
    /** The keys of a project, oldest first, from after position `after`; the secret hashes are not read. */
    listByProject(projectId: string, opts: { after?: number; limit: number }): ListedApiKey[] {
      return db
        .select({
          id: apiKeys.id,
          projectId: apiKeys.projectId,
          environment: apiKeys.environment,
          createdAt: apiKeys.createdAt,
          rotatedAt: apiKeys.rotatedAt,
          seq,
        })
        .from(apiKeys)
        .where(and(eq(apiKeys.projectId, projectId), gt(seq, opts.after ?? 0)))
        .orderBy(seq)
        .limit(opts.limit)
        .all();
    },
    /** Replaces the secret hash; the old secret stops matching at once. */
    rotate(id: string, secretHash: string, at: string): boolean {
      return db.update(apiKeys).set({ secretHash, rotatedAt: at }).where(eq(apiKeys.id, id)).run().changes > 0;
    },
  };
}

export type ApiKeysRepo = ReturnType<typeof createApiKeysRepo>;
