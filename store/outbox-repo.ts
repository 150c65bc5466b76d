import { randomUUID } from 'node:crypto';
import { asc, isNull, sql } from 'drizzle-orm';
import type { Db } from './db.ts';
import { outbox } from './schema.ts';

export type OutboxRow = typeof outbox.$inferSelect;

export interface OutboxEvent {
  projectId: string;
  apiKeyId?: string | null;
  type: string;
  data: Record<string, unknown>;
  createdAt: string;
}

/**
 * The transactional outbox. `append` must run inside the transaction of the state change it
 * describes (through the writer), so a change and its event are never separated.
 */
export function createOutboxRepo(db: Db) {
  // Prepared once: every wallet creation (and later every state change partners hear about) appends here.
  const insert = db
    .insert(outbox)
    .values({
      id: sql.placeholder('id'),
      projectId: sql.placeholder('projectId'),
      apiKeyId: sql.placeholder('apiKeyId'),
      type: sql.placeholder('type'),
      data: sql.placeholder('data'),
      createdAt: sql.placeholder('createdAt'),
    })
    .prepare();

  return {
    append(e: OutboxEvent): string {
      const id = `evt_${randomUUID()}`;
      insert.run({
        id,
        projectId: e.projectId,
        apiKeyId: e.apiKeyId ?? null,
        type: e.type,
        data: JSON.stringify(e.data),
        createdAt: e.createdAt,
      });
      return id;
    },
    /** Undelivered events, oldest first. */
    pending(limit: number): OutboxRow[] {
      return db.select().from(outbox).where(isNull(outbox.deliveredAt)).orderBy(asc(outbox.seq)).limit(limit).all();
    },
  };
}

export type OutboxRepo = ReturnType<typeof createOutboxRepo>;
