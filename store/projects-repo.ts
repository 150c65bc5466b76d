import { and, eq, isNull } from 'drizzle-orm';
import type { Db } from './db.ts';
import { projects } from './schema.ts';

export type ProjectRow = typeof projects.$inferSelect;
export type Plan = ProjectRow['plan'];

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
