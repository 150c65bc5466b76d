import type Database from 'better-sqlite3';
import type { SignatureFormat } from '../chains/domain/events.ts';

export interface WebhookEndpointRow {
  apiKeyId: string;
  projectId: string;
  url: string;
  events: string[];
  enabled: boolean;
  signatureFormat: SignatureFormat;
  secret: string;
  previousSecret: string | null;
  previousSecretExpiresAt: number | null;
  failures: number;
  retryAt: number | null;
  createdAt: string;
  updatedAt: string;
}

export type DeliveryStatus = 'pending' | 'delivered' | 'dead';

/** A due delivery with what its request is built from (the event is null once retention removed it). */
export interface DueDelivery {
  id: number;
  eventId: string;
  attempts: number;
  createdAt: number;
  type: string | null;
  data: string | null;
  eventCreatedAt: string | null;
}

/** A delivery as the operator reads it. */
export interface DeliveryRow {
  id: number;
  eventId: string;
  type: string | null;
  status: DeliveryStatus;
  attempts: number;
  nextAttemptAt: number;
  createdAt: number;
  lastAttemptAt: number | null;
  lastStatusCode: number | null;
  lastLatencyMs: number | null;
  lastError: string | null;
  finishedAt: number | null;
}

type RawEndpoint = Omit<WebhookEndpointRow, 'events' | 'enabled'> & { events: string; enabled: number };

const ENDPOINT_COLUMNS = `api_key_id as apiKeyId, project_id as projectId, url, events, enabled,
  signature_format as signatureFormat, secret, previous_secret as previousSecret,
  previous_secret_expires_at as previousSecretExpiresAt, failures, retry_at as retryAt,
  created_at as createdAt, updated_at as updatedAt`;

const DELIVERY_COLUMNS = `d.id, d.event_id as eventId, o.type, d.status, d.attempts, d.next_attempt_at as nextAttemptAt,
  d.created_at as createdAt, d.last_attempt_at as lastAttemptAt, d.last_status_code as lastStatusCode,
  d.last_latency_ms as lastLatencyMs, d.last_error as lastError, d.finished_at as finishedAt`;

const toEndpoint = (r: RawEndpoint | undefined): WebhookEndpointRow | undefined =>
  r && { ...r, events: JSON.parse(r.events) as string[], enabled: r.enabled === 1 };

/**
 * Webhook endpoints and their deliveries. Writes run inside the writer's transactions; the delivery engine's reads
 * are prepared statements on indexes (`webhook_deliveries_due`), so a queue of any length costs one page per read.
 */
export function createWebhooksRepo(sqlite: Database.Database) {
  const s = {
    get: sqlite.prepare(`select ${ENDPOINT_COLUMNS} from webhook_endpoints where api_key_id = ?`),
    all: sqlite.prepare(`select ${ENDPOINT_COLUMNS} from webhook_endpoints`),
    insert: sqlite.prepare(
      `insert into webhook_endpoints (api_key_id, project_id, url, events, enabled, signature_format, secret,
         created_at, updated_at)
       values (@apiKeyId, @projectId, @url, @events, @enabled, @signatureFormat, @secret, @at, @at)`,
    ),
    update: sqlite.prepare(
      `update webhook_endpoints set url = @url, events = @events, enabled = @enabled,
         signature_format = @signatureFormat, updated_at = @at
       where api_key_id = @apiKeyId`,
    ),
    rotate: sqlite.prepare(
      `update webhook_endpoints set previous_secret = secret, previous_secret_expires_at = @expiresAt,
         secret = @secret, updated_at = @at
       where api_key_id = @apiKeyId`,
    ),
    deleteEndpoint: sqlite.prepare('delete from webhook_endpoints where api_key_id = ?'),
    deleteDeliveries: sqlite.prepare('delete from webhook_deliveries where api_key_id = ?'),
    breaker: sqlite.prepare('update webhook_endpoints set failures = ?, retry_at = ? where api_key_id = ?'),
    due: sqlite.prepare(
      `select d.id, d.event_id as eventId, d.attempts, d.created_at as createdAt, o.type, o.data,
         o.created_at as eventCreatedAt
       from webhook_deliveries d left join outbox o on o.id = d.event_id
       where d.api_key_id = ? and d.status = 'pending' and d.next_attempt_at <= ? and d.id <= ?
       order by d.next_attempt_at, d.id limit ?`,
    ),
    nextDue: sqlite.prepare(
      `select min(next_attempt_at) as at from webhook_deliveries
       where api_key_id = ? and status = 'pending' and id <= ?`,
    ),
    maxId: sqlite.prepare('select max(id) as id from webhook_deliveries'),
    delivered: sqlite.prepare(
      `update webhook_deliveries set status = 'delivered', attempts = attempts + 1, last_attempt_at = @at,
         last_status_code = @statusCode, last_latency_ms = @latencyMs, last_error = null, finished_at = @at
       where id = @id and status = 'pending'`,
    ),
    failed: sqlite.prepare(
      `update webhook_deliveries set status = @status, attempts = attempts + 1, next_attempt_at = @nextAt,
         last_attempt_at = @at, last_status_code = @statusCode, last_latency_ms = @latencyMs, last_error = @error,
         finished_at = @finishedAt
       where id = @id and status = 'pending'`,
    ),
    expire: sqlite.prepare(
      `update webhook_deliveries set status = 'dead', finished_at = @at,
         last_error = coalesce(last_error, 'the endpoint failed for the whole retry schedule')
       where api_key_id = @apiKeyId and status = 'pending' and created_at < @before`,
    ),
    redeliver: sqlite.prepare(
      `update webhook_deliveries set status = 'pending', attempts = 0, next_attempt_at = @at, finished_at = null
       where api_key_id = @apiKeyId and event_id = @eventId`,
    ),
    redeliverDead: sqlite.prepare(
      `update webhook_deliveries set status = 'pending', attempts = 0, next_attempt_at = @at, finished_at = null
       where api_key_id = @apiKeyId and status = 'dead'`,
    ),
    counts: sqlite.prepare('select status, count(*) as n from webhook_deliveries where api_key_id = ? group by status'),
    getDelivery: sqlite.prepare(
      `select ${DELIVERY_COLUMNS} from webhook_deliveries d left join outbox o on o.id = d.event_id
       where d.api_key_id = ? and d.event_id = ?`,
    ),
    list: sqlite.prepare(
      `select ${DELIVERY_COLUMNS} from webhook_deliveries d left join outbox o on o.id = d.event_id
       where d.api_key_id = @apiKeyId and (@status is null or d.status = @status) and d.id < @before
       order by d.id desc limit @limit`,
    ),
    purgeFinished: sqlite.prepare(
      `delete from webhook_deliveries where id in (
         select id from webhook_deliveries where status = @status and finished_at < @before limit @limit)`,
    ),
    oldestEvents: sqlite.prepare('select seq, created_at as createdAt from outbox order by seq limit ?'),
    purgeEvents: sqlite.prepare('delete from outbox where seq <= ?'),
  };

  return {
    get(apiKeyId: string): WebhookEndpointRow | undefined {
      return toEndpoint(s.get.get(apiKeyId) as RawEndpoint | undefined);
    },
    all(): WebhookEndpointRow[] {
      return (s.all.all() as RawEndpoint[]).map((r) => toEndpoint(r)!);
    },
    /** Creates the endpoint of a key (with its first secret) or replaces its URL, events, switch and format. */
    upsert(
      e: Pick<WebhookEndpointRow, 'apiKeyId' | 'projectId' | 'url' | 'events' | 'enabled' | 'signatureFormat'> & {
        secret: string;
        at: string;
      },
    ): { created: boolean } {
      const params = {
        apiKeyId: e.apiKeyId,
        url: e.url,
        events: JSON.stringify(e.events),
        enabled: e.enabled ? 1 : 0,
        signatureFormat: e.signatureFormat,
        at: e.at,
      };
      if (s.update.run(params).changes > 0) return { created: false };
      s.insert.run({ ...params, projectId: e.projectId, secret: e.secret });
      return { created: true };
    },
    /** The current secret becomes the previous one (valid until `expiresAt`), `secret` the current one. */
    rotateSecret(apiKeyId: string, secret: string, expiresAt: number, at: string): boolean {
      return s.rotate.run({ apiKeyId, secret, expiresAt, at }).changes > 0;
    },
    /** Removes the endpoint (URL, events, secrets) and its deliveries. */
    delete(apiKeyId: string): boolean {
      s.deleteDeliveries.run(apiKeyId);
      return s.deleteEndpoint.run(apiKeyId).changes > 0;
    },
    setBreaker(apiKeyId: string, failures: number, retryAt: number | null): void {
      s.breaker.run(failures, retryAt, apiKeyId);
    },
    /**
     * Pending deliveries due at `now`, earliest first, among those up to id `durableUpTo` (rows known to be on disk;
     * default: all).
     */
    due(apiKeyId: string, now: number, limit: number, durableUpTo = Number.MAX_SAFE_INTEGER): DueDelivery[] {
      return s.due.all(apiKeyId, now, durableUpTo, limit) as DueDelivery[];
    },
    /** When the earliest pending delivery (up to id `durableUpTo`) of the endpoint is due; undefined when none. */
    nextDueAt(apiKeyId: string, durableUpTo = Number.MAX_SAFE_INTEGER): number | undefined {
      const r = s.nextDue.get(apiKeyId, durableUpTo) as { at: number | null };
      return r.at ?? undefined;
    },
    /** The highest delivery id (0 when there is none). */
    maxDeliveryId(): number {
      return (s.maxId.get() as { id: number | null }).id ?? 0;
    },
    markDelivered(id: number, r: { at: number; statusCode: number; latencyMs: number }): void {
      s.delivered.run({ id, ...r });
    },
    /** A failed attempt: retried at `nextAt`, or dead when `nextAt` is null. */
    markFailed(
      id: number,
      r: { at: number; nextAt: number | null; statusCode: number | null; latencyMs: number; error: string },
    ): void {
      s.failed.run({
        id,
        at: r.at,
        status: r.nextAt === null ? 'dead' : 'pending',
        nextAt: r.nextAt ?? r.at,
        finishedAt: r.nextAt === null ? r.at : null,
        statusCode: r.statusCode,
        latencyMs: r.latencyMs,
        error: r.error,
      });
    },
    /** Pending deliveries of the endpoint created before `before` become dead; answers how many. */
    expire(apiKeyId: string, before: number, at: number): number {
      return s.expire.run({ apiKeyId, before, at }).changes;
    },
    /** Queues one delivery again from its first attempt; false when the endpoint never had that event. */
    redeliver(apiKeyId: string, eventId: string, at: number): boolean {
      return s.redeliver.run({ apiKeyId, eventId, at }).changes > 0;
    },
    /** Queues every dead delivery of the endpoint again; answers how many. */
    redeliverDead(apiKeyId: string, at: number): number {
      return s.redeliverDead.run({ apiKeyId, at }).changes;
    },
    counts(apiKeyId: string): Record<DeliveryStatus, number> {
      const out: Record<DeliveryStatus, number> = { pending: 0, delivered: 0, dead: 0 };
      for (const r of s.counts.all(apiKeyId) as Array<{ status: DeliveryStatus; n: number }>) out[r.status] = r.n;
      return out;
    },
    getDelivery(apiKeyId: string, eventId: string): DeliveryRow | undefined {
      return s.getDelivery.get(apiKeyId, eventId) as DeliveryRow | undefined;
    },
    /** Newest first; `before` is the id to continue below (exclusive). */
    listDeliveries(apiKeyId: string, opts: { status?: DeliveryStatus; before?: number; limit: number }): DeliveryRow[] {
      return s.list.all({
        apiKeyId,
        status: opts.status ?? null,
        before: opts.before ?? Number.MAX_SAFE_INTEGER,
        limit: opts.limit,
      }) as DeliveryRow[];
    },
    /** Deletes up to `limit` finished deliveries of `status` finished before `before`; answers how many. */
    purgeFinished(status: 'delivered' | 'dead', before: number, limit: number): number {
      return s.purgeFinished.run({ status, before, limit }).changes;
    },
    /**
     * Deletes up to `limit` of the oldest outbox events written before `before` (ISO); answers how many. A delivery
     * still pending for a deleted event is found without it and ends dead.
     */
    purgeEvents(before: string, limit: number): number {
      const rows = s.oldestEvents.all(limit) as Array<{ seq: number; createdAt: string }>;
      let last: number | undefined;
      for (const r of rows) {
        if (r.createdAt >= before) break;
        last = r.seq;
      }
      return last === undefined ? 0 : s.purgeEvents.run(last).changes;
    },
  };
}

export type WebhooksRepo = ReturnType<typeof createWebhooksRepo>;
