import { randomUUID } from 'node:crypto';
import { asc, isNull } from 'drizzle-orm';
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
  return {
    append(e: OutboxEvent): string {
      const id = `evt_${randomUUID()}`;
      db.insert(outbox)
        .values({
          id,
          projectId: e.projectId,
          apiKeyId: e.apiKeyId ?? null,
          type: e.type,
          data: JSON.stringify(e.data),
          createdAt: e.createdAt,
        })
        .run();
      return id;
    },
    /** Undelivered events, oldest first. */
    pending(limit: number): OutboxRow[] {
      return db.select().from(outbox).where(isNull(outbox.deliveredAt)).orderBy(asc(outbox.seq)).limit(limit).all();
    },
  };
}

export type OutboxRepo = ReturnType<typeof createOutboxRepo>;
