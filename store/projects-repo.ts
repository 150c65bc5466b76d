import { and, eq, getTableColumns, gt, isNotNull, isNull, type SQL, sql } from 'drizzle-orm';
import type { Db } from './db.ts';
import { projects } from './schema.ts';

export type ProjectRow = typeof projects.$inferSelect;
export type Plan = ProjectRow['plan'];

/** A project as the operator's list reads it: its row, its position in the list and how many keys it has. */
export type ListedProject = ProjectRow & { seq: number; apiKeyCount: number };

/** The table's rowid: insertion order, so a page boundary stays put while projects are created. */
const seq = sql<number>`${projects}.rowid`;

/** Projects (partners). */
export function createProjectsRepo(db: Db) {
  return {
    insert(row: typeof projects.$inferInsert): ProjectRow {
      return db.insert(projects).values(row).returning().get();
    },
    /** A live (not deleted) project, or undefined. */
    get(id: string): ProjectRow | undefined {
      return db
        .select()
        .from(projects)
        .where(and(eq(projects.id, id), isNull(projects.deletedAt)))
        .get();
    },
    /**
     * Every project, deleted ones too unless `deleted` says which, oldest first, from after position `after`.
     */
    list(opts: { after?: number; limit: number; deleted?: boolean }): ListedProject[] {
      const where: SQL[] = [gt(seq, opts.after ?? 0)];
      if (opts.deleted !== undefined)
        where.push(opts.deleted ? isNotNull(projects.deletedAt) : isNull(projects.deletedAt));
      return db
        .select({
          ...getTableColumns(projects),
          seq,
          // Qualified by hand: drizzle writes a column of a one-table select without its table's name.
          apiKeyCount: sql<number>`(select count(*) from "api_keys" "k" where "k"."project_id" = "projects"."id")`,
        })
        .from(projects)
        .where(and(...where))
        .orderBy(seq)
        .limit(opts.limit)
        .all();
    },
    markDeleted(id: string, at: string): boolean {
      const r = db
        .update(projects)
        .set({ deletedAt: at })
        .where(and(eq(projects.id, id), isNull(projects.deletedAt)))
        .run();
      return r.changes > 0;
    },
    setIpAllowlist(id: string, cidrs: string[]): boolean {
      const r = db
        .update(projects)
        .set({ ipAllowlist: JSON.stringify(cidrs) })
        .where(and(eq(projects.id, id), isNull(projects.deletedAt)))
        .run();
      return r.changes > 0;
    },
  };
}

export type ProjectsRepo = ReturnType<typeof createProjectsRepo>;
