import { randomUUID } from 'node:crypto';
import type Database from 'better-sqlite3';
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
export function createOutboxRepo(db: Db, sqlite: Database.Database) {
  // Prepared once, on the driver itself: every state change partners hear about appends here, and a payment's
  // confirmation appends two events (the ORM's run path costs about as much again as the insert).
  const insert = sqlite.prepare(
    'insert into outbox (id, project_id, api_key_id, type, data, created_at) values (?, ?, ?, ?, ?, ?)',
  );

  return {
    append(e: OutboxEvent): string {
      const id = `evt_${randomUUID()}`;
      insert.run(id, e.projectId, e.apiKeyId ?? null, e.type, JSON.stringify(e.data), e.createdAt);
      return id;
    },
    /** Undelivered events, oldest first. */
    pending(limit: number): OutboxRow[] {
      return db.select().from(outbox).where(isNull(outbox.deliveredAt)).orderBy(asc(outbox.seq)).limit(limit).all();
    },
  };
}

export type OutboxRepo = ReturnType<typeof createOutboxRepo>;
