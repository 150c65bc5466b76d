import { randomUUID } from 'node:crypto';
import type Database from 'better-sqlite3';
import { asc } from 'drizzle-orm';
import type { EventType } from '../chains/domain/events.ts';
import type { Db } from './db.ts';
import { outbox } from './schema.ts';
import type { Writer } from './writer.ts';

export type OutboxRow = typeof outbox.$inferSelect;

export interface OutboxEvent {
  projectId: string;
  /** The key whose request caused the event: only its endpoint hears it. Null: every endpoint of the project. */
  apiKeyId?: string | null;
  type: EventType;
  data: Record<string, unknown>;
  createdAt: string;
}

/**
 * The transactional outbox. `append` must run inside the transaction of the state change it describes (through
 * the writer), so a change, its event and its webhook deliveries are never separated.
 *
 * Fan-out: a keyed event gets a delivery row for its key's endpoint, an unkeyed one (an operator's act, such as a
 * claim) for every endpoint of the project; in both cases only endpoints that are enabled and selected the type.
 * `test.ping` goes to its key's endpoint whatever it selected (it is asked for by name).
 */
export function createOutboxRepo(
  db: Db,
  sqlite: Database.Database,
  writer: Pick<Writer, 'afterDurable'>,
  now: () => number = Date.now,
) {
  // Prepared once, on the driver itself: every state change partners hear about appends here, and a payment's
  // confirmation appends two events (the ORM's run path costs about as much again as the insert).
  const insert = sqlite.prepare(
    'insert into outbox (id, project_id, api_key_id, type, data, created_at) values (?, ?, ?, ?, ?, ?)',
  );
  const fanOutKeyed = sqlite.prepare(
    `insert into webhook_deliveries (event_id, api_key_id, status, next_attempt_at, created_at)
     select @eventId, api_key_id, 'pending', @at, @at from webhook_endpoints
     where api_key_id = @apiKeyId and enabled = 1
       and (@type = 'test.ping' or exists (select 1 from json_each(events) where value = @type))
     returning id, api_key_id`,
  );
  const fanOutProject = sqlite.prepare(
    `insert into webhook_deliveries (event_id, api_key_id, status, next_attempt_at, created_at)
     select @eventId, api_key_id, 'pending', @at, @at from webhook_endpoints
     where project_id = @projectId and enabled = 1
       and exists (select 1 from json_each(events) where value = @type)
     returning id, api_key_id`,
  );
  /** Told of new deliveries once the transaction that wrote them is on disk. */
  const durableListeners: Array<(rows: ReadonlyArray<{ id: number; apiKeyId: string }>) => void> = [];

  return {
    append(e: OutboxEvent): string {
      const id = `evt_${randomUUID()}`;
      insert.run(id, e.projectId, e.apiKeyId ?? null, e.type, JSON.stringify(e.data), e.createdAt);
      const at = now();
      const rows = (
        e.apiKeyId
          ? fanOutKeyed.all({ eventId: id, at, apiKeyId: e.apiKeyId, type: e.type })
          : fanOutProject.all({ eventId: id, at, projectId: e.projectId, type: e.type })
      ) as Array<{ id: number; api_key_id: string }>;
      if (rows.length > 0) {
        const durable = rows.map((r) => ({ id: r.id, apiKeyId: r.api_key_id }));
        writer.afterDurable(() => {
          for (const l of durableListeners) l(durable);
        });
      }
      return id;
    },
    /** Calls `listener` with the deliveries of every write once it is on disk (the delivery engine's wake-up). */
    onDeliveriesDurable(listener: (rows: ReadonlyArray<{ id: number; apiKeyId: string }>) => void): void {
      durableListeners.push(listener);
    },
    /** Events in the order they were written, oldest first. */
    oldest(limit: number): OutboxRow[] {
      return db.select().from(outbox).orderBy(asc(outbox.seq)).limit(limit).all();
    },
  };
}

export type OutboxRepo = ReturnType<typeof createOutboxRepo>;
