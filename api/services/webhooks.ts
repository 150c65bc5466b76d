import { invalidRequest, ServiceError } from '../../chains/domain/errors.ts';
import {
  type SignatureFormat,
  SPEC_EVENT_TYPES,
  UNSENT_EVENT_REASONS,
  UNSENT_EVENT_TYPES,
  type UnsentEventType,
} from '../../chains/domain/events.ts';
import type { Store } from '../../store/index.ts';
import type { DeliveryRow, DeliveryStatus, WebhookEndpointRow } from '../../store/webhooks-repo.ts';
import { decodeCursor, encodeCursor } from '../cursor.ts';
import type { DeliveryEngine } from '../webhooks/delivery-engine.ts';
import { newWebhookSecret } from '../webhooks/sign-delivery.ts';
import { assertPublicTarget, type ResolveAll, TargetRefusedError } from '../webhooks/target-guard.ts';

/** How long the secret before a rotation keeps signing deliveries (spec: 24 hours). */
export const PREVIOUS_SECRET_VALID_MS = 24 * 3600_000;

const keyNotFound = () => new ServiceError('API_KEY_NOT_FOUND', 404, 'API key not found');
const notConfigured = () =>
  new ServiceError('WEBHOOK_NOT_CONFIGURED', 404, 'this API key has no webhook endpoint; PUT one first');

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

const cursorOf = (id: number) => encodeCursor('d', id);
const idOfCursor = (cursor: string) => decodeCursor('d', cursor);

/** Validates a webhook URL: HTTPS, no credentials in it, and (unless private targets are allowed) a public host. */
async function checkUrl(raw: string, allowPrivate: boolean, resolveAll?: ResolveAll): Promise<string> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw invalidRequest('url is not a valid URL', { field: 'body.url' });
  }
  if (url.protocol !== 'https:') {
    throw invalidRequest('url must be an HTTPS URL (HTTP is refused)', { field: 'body.url' });
  }
  if (url.username || url.password) {
    throw invalidRequest('url may not carry credentials; put them in the path or verify the signature instead', {
      field: 'body.url',
    });
  }
  if (url.hash) throw invalidRequest('url may not have a fragment', { field: 'body.url' });
  if (!allowPrivate) {
    try {
      await assertPublicTarget(url, resolveAll);
    } catch (err) {
      if (!(err instanceof TargetRefusedError)) throw err;
      throw new ServiceError(
        'WEBHOOK_TARGET_NOT_ALLOWED',
        400,
        `${err.message}: webhook targets must be public (WEBHOOK_ALLOW_PRIVATE_TARGETS is off)`,
        { details: { field: 'body.url' } },
      );
    }
  }
  return url.toString();
}

/** A selected event type this service never sends: the selection is kept, the answer says so. */
export interface EventWarning {
  code: 'EVENT_NEVER_SENT';
  event: UnsentEventType;
  message: string;
}

const isUnsent = (e: string): e is UnsentEventType => (UNSENT_EVENT_TYPES as readonly string[]).includes(e);

/** One warning per selected type that is never sent, in the order of the selection. */
export function eventWarnings(events: readonly string[]): EventWarning[] {
  return events.filter(isUnsent).map((event) => ({
    code: 'EVENT_NEVER_SENT' as const,
    event,
    message: `${event} is accepted but this service never sends it: ${UNSENT_EVENT_REASONS[event]}.`,
  }));
}

/**
 * The selection as it will be stored (duplicates dropped, order kept). Every type the spec names is accepted, so a
 * configuration written for the spec is taken as it is; anything else is a 400 naming the field and the allowed types.
 */
function checkEvents(events: string[], enabled: boolean): string[] {
  const allowed = new Set<string>(SPEC_EVENT_TYPES);
  for (const e of events) {
    if (!allowed.has(e)) {
      throw invalidRequest(`unknown event type "${e}"; allowed: ${SPEC_EVENT_TYPES.join(', ')}`, {
        field: 'body.events',
      });
    }
  }
  if (enabled && events.length === 0) {
    throw invalidRequest('an enabled webhook needs at least one event type', { field: 'body.events' });
  }
  return [...new Set(events)];
}

/** The operator's webhook verbs (admin API and CLI): configure, rotate, test, delete, deliveries, redeliver. */
export function createWebhookService(deps: {
  store: Pick<Store, 'apiKeys' | 'projects' | 'webhooks' | 'outbox' | 'writer'>;
  engine: Pick<DeliveryEngine, 'reload'>;
  allowPrivateTargets: boolean;
  resolveAll?: ResolveAll;
  now?: () => number;
}) {
  const { store, engine } = deps;
  const now = deps.now ?? Date.now;

  /** The key, which must exist and belong to a project that was not deleted. */
  function liveKey(keyId: string) {
    const key = store.apiKeys.get(keyId);
    if (!key || !store.projects.get(key.projectId)) throw keyNotFound();
    return key;
  }

  function endpointOf(keyId: string): WebhookEndpointRow {
    liveKey(keyId);
    const cfg = store.webhooks.get(keyId);
    if (!cfg) throw notConfigured();
    return cfg;
  }

  function describe(cfg: WebhookEndpointRow, secret?: string) {
    const t = now();
    const previousValid = cfg.previousSecret !== null && (cfg.previousSecretExpiresAt ?? 0) > t;
    return {
      apiKeyId: cfg.apiKeyId,
      url: cfg.url,
      events: cfg.events,
      warnings: eventWarnings(cfg.events),
      enabled: cfg.enabled,
      signatureFormat: cfg.signatureFormat,
      ...(secret === undefined ? {} : { secret }),
      previousSecretExpiresAt: previousValid ? iso(cfg.previousSecretExpiresAt) : null,
      state: cfg.retryAt === null ? ('healthy' as const) : ('failing' as const),
      consecutiveFailures: cfg.failures,
      nextProbeAt: iso(cfg.retryAt),
      deliveries: store.webhooks.counts(cfg.apiKeyId),
      createdAt: cfg.createdAt,
      updatedAt: cfg.updatedAt,
    };
  }

  const toDelivery = (d: DeliveryRow) => ({
    eventId: d.eventId,
    type: d.type,
    status: d.status,
    attempts: d.attempts,
    nextAttemptAt: d.status === 'pending' ? iso(d.nextAttemptAt) : null,
    lastAttemptAt: iso(d.lastAttemptAt),
    lastStatusCode: d.lastStatusCode,
    lastLatencyMs: d.lastLatencyMs,
    lastError: d.lastError,
    createdAt: iso(d.createdAt)!,
    finishedAt: iso(d.finishedAt),
  });

  return {
    /**
     * Creates or changes a key's endpoint. `events`, `enabled` and `signatureFormat` left out keep their values (so
     * `{url, enabled: false}` disables it and keeps the rest). The secret is in the answer only when this call created it.
     */
    async put(
      keyId: string,
      body: { url: string; events?: string[]; enabled?: boolean; signatureFormat?: SignatureFormat },
    ) {
      const key = liveKey(keyId);
      const existing = store.webhooks.get(keyId);
      const enabled = body.enabled ?? existing?.enabled ?? true;
      if (body.events === undefined && !existing) {
        throw invalidRequest('events is required when the endpoint is created', { field: 'body.events' });
      }
      const events = checkEvents(body.events ?? existing!.events, enabled);
      const url = await checkUrl(body.url, deps.allowPrivateTargets, deps.resolveAll);
      // Used only when this call creates the endpoint.
      const secret = existing ? existing.secret : newWebhookSecret();
      const at = new Date(now()).toISOString();
      const { created } = await store.writer.write(() => {
        const done = store.webhooks.upsert({
          apiKeyId: keyId,
          projectId: key.projectId,
          url,
          events,
          enabled,
          signatureFormat: body.signatureFormat ?? existing?.signatureFormat ?? 'timestamp-body',
          secret,
          at,
        });
        // A new URL is a new receiver: whatever the old one's failures, it is tried at once.
        if (existing && existing.url !== url) store.webhooks.setBreaker(keyId, 0, null);
        return done;
      });
      engine.reload(keyId);
      return describe(store.webhooks.get(keyId)!, created ? secret : undefined);
    },

    get(keyId: string) {
      return describe(endpointOf(keyId));
    },

    /** What `get` answers for a key of a live project, or null when it has no endpoint (for the operator's lists). */
    summaryOf(keyId: string) {
      const cfg = store.webhooks.get(keyId);
      return cfg ? describe(cfg) : null;
    },

    /** A new secret; the current one keeps signing (as a second signature) for PREVIOUS_SECRET_VALID_MS. */
    async rotateSecret(keyId: string) {
      endpointOf(keyId);
      const secret = newWebhookSecret();
      const expiresAt = now() + PREVIOUS_SECRET_VALID_MS;
      await store.writer.write(() =>
        store.webhooks.rotateSecret(keyId, secret, expiresAt, new Date(now()).toISOString()),
      );
      engine.reload(keyId);
      return { secret, previousSecretExpiresAt: iso(expiresAt)! };
    },

    /** Queues a `test.ping` for the key's endpoint (whatever events it selected); answers its event id. */
    async test(keyId: string) {
      const key = liveKey(keyId);
      const cfg = endpointOf(keyId);
      if (!cfg.enabled) {
        throw new ServiceError('WEBHOOK_DISABLED', 409, 'the webhook is disabled; enable it to send a test.ping');
      }
      const pingedAt = new Date(now()).toISOString();
      const eventId = await store.writer.write(() =>
        store.outbox.append({
          projectId: key.projectId,
          apiKeyId: keyId,
          type: 'test.ping',
          createdAt: pingedAt,
          data: { apiKeyId: keyId, pingedAt },
        }),
      );
      return { eventId };
    },

    /** Removes URL, events and secrets, and the endpoint's deliveries. */
    async delete(keyId: string): Promise<void> {
      liveKey(keyId);
      const removed = await store.writer.write(() => store.webhooks.delete(keyId));
      engine.reload(keyId);
      if (!removed) throw notConfigured();
    },

    deliveries(keyId: string, q: { status?: DeliveryStatus; cursor?: string; limit?: number }) {
      endpointOf(keyId);
      const limit = q.limit ?? 20;
      const rows = store.webhooks.listDeliveries(keyId, {
        limit: limit + 1,
        ...(q.status ? { status: q.status } : {}),
        ...(q.cursor !== undefined ? { before: idOfCursor(q.cursor) } : {}),
      });
      const hasMore = rows.length > limit;
      const page = rows.slice(0, limit);
      return {
        data: page.map(toDelivery),
        pagination: { cursor: hasMore ? cursorOf(page[page.length - 1]!.id) : null, hasMore, limit },
      };
    },

    /**
     * Queues one event again from its first attempt, or every dead one. A redelivery also lifts the endpoint's
     * breaker: the operator asking means the receiver is thought to be back.
     */
    async redeliver(keyId: string, eventId?: string) {
      endpointOf(keyId);
      const at = now();
      const n = await store.writer.write(() => {
        const count =
          eventId === undefined
            ? store.webhooks.redeliverDead(keyId, at)
            : store.webhooks.redeliver(keyId, eventId, at)
              ? 1
              : 0;
        if (count > 0) store.webhooks.setBreaker(keyId, 0, null);
        return count;
      });
      if (eventId !== undefined && n === 0) {
        throw new ServiceError('DELIVERY_NOT_FOUND', 404, 'this endpoint has no delivery of that event');
      }
      engine.reload(keyId);
      return { redelivered: n };
    },
  };
}

export type WebhookService = ReturnType<typeof createWebhookService>;
