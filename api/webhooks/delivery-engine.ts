import tls from 'node:tls';
import { Agent, request } from 'undici';
import type { OutboxRepo } from '../../store/outbox-repo.ts';
import type { DueDelivery, WebhookEndpointRow, WebhooksRepo } from '../../store/webhooks-repo.ts';
import type { Writer } from '../../store/writer.ts';
import { MAX_ATTEMPTS, probeDelayMs, retryDelayMs, scheduleSpanMs } from './retry-schedule.ts';
import { envelopeBody, signDelivery } from './sign-delivery.ts';
import { assertPublicTarget, guardedLookup, type ResolveAll, systemResolveAll } from './target-guard.ts';

/** Deliveries in flight to one healthy endpoint (and connections kept to it). */
export const MAX_IN_FLIGHT_PER_ENDPOINT = 32;
/** Failed attempts in a row, with no success between, that trip an endpoint's breaker. */
export const BREAKER_TRIP = 5;
/** Due deliveries read at once. */
const PAGE = 256;
/** Most response body bytes read (and discarded): only the status matters. */
const RESPONSE_BODY_CAP = 4_096;
/** Retention: delivered rows three days, dead ones and events thirty. */
export const DELIVERED_RETENTION_MS = 3 * 86_400_000;
export const DEAD_RETENTION_MS = 30 * 86_400_000;
const SWEEP_EVERY_MS = 3_600_000;

export type AttemptOutcome = 'delivered' | 'retry' | 'dead';

export interface DeliveryEngineDeps {
  webhooks: WebhooksRepo;
  outbox: Pick<OutboxRepo, 'onDeliveriesDurable'>;
  writer: Pick<Writer, 'write'>;
  retryBaseMs: number;
  /** Bound on one attempt: connecting, sending and the answer's headers. */
  timeoutMs: number;
  allowPrivateTargets: boolean;
  resolveAll?: ResolveAll;
  /**
   * Certificates trusted beside the system's, as PEM. The service itself leaves this out: operators add CAs the Node
   * way (NODE_EXTRA_CA_CERTS), which a running process cannot take; in-process tests pass their CA here.
   */
  extraCa?: string;
  now?: () => number;
  random?: () => number;
  log?: (msg: string, err?: unknown) => void;
  onAttempt?: (outcome: AttemptOutcome, latencyMs: number) => void;
}

interface Runner {
  keyId: string;
  cfg: WebhookEndpointRow;
  url: URL;
  inFlight: Set<number>;
  buffer: DueDelivery[];
  timer: NodeJS.Timeout | undefined;
  timerAt: number;
  /** Failed attempts since the last success (trips the breaker at BREAKER_TRIP). */
  failedInARow: number;
}

/**
 * Delivers the outbox's webhook deliveries: at least once, each endpoint on its own schedule.
 *
 * - A delivery starts only after the transaction that wrote it is on disk: the engine reads rows up to the highest
 *   delivery id known durable (`durableUpTo`, raised by the writer's `afterDurable` through the outbox; at start,
 *   every row there is), since a read can see a batch that is committed but not yet synced. Its outcome
 *   is written back before it can be picked again, so one process never sends one delivery twice at once; a crash
 *   between the receiver's 2xx and that write sends it again (at least once: receivers deduplicate on `webhook-id`).
 * - Every attempt sends the same `webhook-id` and body; the timestamp and signatures are fresh.
 * - An endpoint has its own runner: up to MAX_IN_FLIGHT_PER_ENDPOINT deliveries at once, one timer at most, and
 *   reads of at most PAGE due rows, so a slow or dead endpoint holds nothing of another's and a queue of any length
 *   costs bounded memory.
 * - A failed attempt is retried on the schedule of `retry-schedule.ts`, or is dead after MAX_ATTEMPTS. After
 *   BREAKER_TRIP failures in a row the endpoint's breaker trips: it is then probed with one delivery at a time on
 *   the same schedule capped at PROBE_MAX_UNITS (persisted, so a restart keeps it), and its first success drains the
 *   queue at the full rate.
 *   A delivery still pending after the whole schedule's span while the endpoint fails is dead.
 */
export function createDeliveryEngine(deps: DeliveryEngineDeps) {
  const { webhooks, writer } = deps;
  const now = deps.now ?? Date.now;
  const random = deps.random ?? Math.random;
  const log = deps.log ?? (() => undefined);
  const resolveAll = deps.resolveAll ?? systemResolveAll;
  const agent = new Agent({
    connections: MAX_IN_FLIGHT_PER_ENDPOINT,
    pipelining: 1,
    keepAliveTimeout: 30_000,
    connect: {
      timeout: deps.timeoutMs,
      ...(deps.allowPrivateTargets ? {} : { lookup: guardedLookup(resolveAll) }),
      ...(deps.extraCa ? { ca: [...tls.rootCertificates, deps.extraCa] } : {}),
    },
  });
  const runners = new Map<string, Runner>();
  let stopped = false;
  /** Deliveries up to this id are on disk; newer ones wait for their batch's sync. */
  let durableUpTo = 0;
  let sweepTimer: NodeJS.Timeout | undefined;

  const persist = (fn: () => void) =>
    writer.write(fn, { bounded: false }).catch((err) => log('a webhook delivery outcome could not be saved', err));

  function arm(r: Runner, at: number): void {
    if (r.timer && r.timerAt <= at) return;
    if (r.timer) clearTimeout(r.timer);
    r.timerAt = at;
    r.timer = setTimeout(
      () => {
        r.timer = undefined;
        pump(r);
      },
      Math.max(0, at - now()),
    );
  }

  function disarm(r: Runner): void {
    if (r.timer) clearTimeout(r.timer);
    r.timer = undefined;
  }

  function pump(r: Runner): void {
    if (stopped || runners.get(r.keyId) !== r || !r.cfg.enabled) {
      disarm(r);
      return;
    }
    const t = now();
    const retryAt = r.cfg.retryAt;
    if (retryAt !== null && t < retryAt) {
      arm(r, retryAt);
      return;
    }
    const limit = retryAt === null ? MAX_IN_FLIGHT_PER_ENDPOINT : 1;
    while (r.inFlight.size < limit) {
      if (r.buffer.length === 0) {
        r.buffer = webhooks.due(r.keyId, t, PAGE + r.inFlight.size, durableUpTo).filter((d) => !r.inFlight.has(d.id));
        if (r.buffer.length === 0) break;
      }
      const d = r.buffer.shift()!;
      if (r.inFlight.has(d.id)) continue;
      r.inFlight.add(d.id);
      void attempt(r, d);
    }
    if (r.inFlight.size === 0) {
      const next = webhooks.nextDueAt(r.keyId, durableUpTo);
      if (next !== undefined) arm(r, Math.max(next, t + 1));
    }
  }

  async function attempt(r: Runner, d: DueDelivery): Promise<void> {
    const cfg = r.cfg;
    const started = now();
    let statusCode: number | null = null;
    let error: string | undefined;
    if (d.type === null || d.data === null || d.eventCreatedAt === null) {
      error = 'the event is no longer retained';
    } else {
      const body = envelopeBody({ id: d.eventId, type: d.type, createdAt: d.eventCreatedAt, data: d.data });
      const timestamp = Math.floor(started / 1000);
      const secrets = [cfg.secret];
      if (cfg.previousSecret && (cfg.previousSecretExpiresAt ?? 0) > started) secrets.push(cfg.previousSecret);
      try {
        if (!deps.allowPrivateTargets) await assertPublicTarget(r.url, resolveAll);
        const res = await request(r.url, {
          method: 'POST',
          dispatcher: agent,
          headers: {
            'content-type': 'application/json',
            'user-agent': 'wallet-custody-service-webhooks',
            'webhook-id': d.eventId,
            'webhook-timestamp': String(timestamp),
            'webhook-signature': signDelivery(cfg.signatureFormat, secrets, { id: d.eventId, timestamp, body }),
          },
          body,
          signal: AbortSignal.timeout(deps.timeoutMs),
        });
        statusCode = res.statusCode;
        await res.body.dump({ limit: RESPONSE_BODY_CAP }).catch(() => undefined);
        if (statusCode < 200 || statusCode > 299) error = `the endpoint answered ${statusCode}`;
      } catch (err) {
        error = describeFailure(err, deps.timeoutMs);
      }
    }
    const at = now();
    const latencyMs = at - started;
    if (error === undefined) {
      deps.onAttempt?.('delivered', latencyMs);
      r.failedInARow = 0;
      const healed = r.cfg.retryAt !== null;
      if (healed) r.cfg = { ...r.cfg, failures: 0, retryAt: null };
      await persist(() => {
        webhooks.markDelivered(d.id, { at, statusCode: statusCode!, latencyMs });
        if (healed) webhooks.setBreaker(r.keyId, 0, null);
      });
      if (healed) log(`webhook endpoint of key ${r.keyId} answers again; its queue drains`);
    } else {
      const attempts = d.attempts + 1;
      const delay = attempts >= MAX_ATTEMPTS ? null : retryDelayMs(deps.retryBaseMs, attempts, random());
      const nextAt = delay === null ? null : at + delay;
      deps.onAttempt?.(nextAt === null ? 'dead' : 'retry', latencyMs);
      r.failedInARow += 1;
      const breaker = tripBreaker(r, at);
      await persist(() => {
        webhooks.markFailed(d.id, { at, nextAt, statusCode, latencyMs, error: error! });
        if (breaker) {
          webhooks.setBreaker(r.keyId, breaker.failures, breaker.retryAt);
          webhooks.expire(r.keyId, at - scheduleSpanMs(deps.retryBaseMs), at);
        }
      });
    }
    r.inFlight.delete(d.id);
    // The operator may have changed the endpoint meanwhile: its current runner goes on.
    const current = runners.get(r.keyId);
    if (current) pump(current);
  }

  /** After a failure: the breaker's new state when it trips or stays tripped, else undefined. */
  function tripBreaker(r: Runner, at: number): { failures: number; retryAt: number } | undefined {
    const tripped = r.cfg.retryAt !== null;
    if (!tripped && r.failedInARow < BREAKER_TRIP) return undefined;
    const failures = r.cfg.failures + 1;
    const retryAt = at + probeDelayMs(deps.retryBaseMs, failures, random());
    r.cfg = { ...r.cfg, failures, retryAt };
    if (!tripped) log(`webhook endpoint of key ${r.keyId} (${r.url.host}) keeps failing; probing it on the schedule`);
    return { failures, retryAt };
  }

  function runnerFor(cfg: WebhookEndpointRow): Runner {
    return {
      keyId: cfg.apiKeyId,
      cfg,
      url: new URL(cfg.url),
      inFlight: new Set(),
      buffer: [],
      timer: undefined,
      timerAt: 0,
      failedInARow: 0,
    };
  }

  /** Deletes what retention allows, a bounded amount per write. */
  async function sweep(): Promise<void> {
    const t = now();
    const BATCH = 5_000;
    const steps: Array<() => number> = [
      () => webhooks.purgeFinished('delivered', t - DELIVERED_RETENTION_MS, BATCH),
      () => webhooks.purgeFinished('dead', t - DEAD_RETENTION_MS, BATCH),
      () => webhooks.purgeEvents(new Date(t - DEAD_RETENTION_MS).toISOString(), BATCH),
    ];
    for (const step of steps) {
      while (!stopped && (await writer.write(step, { bounded: false })) === BATCH) {
        // another batch: the writer interleaves other work between them
      }
    }
  }

  return {
    /** Loads every endpoint and starts what is due (deliveries due before a restart go out now). */
    start(): void {
      // Rows already in the database at start are as durable as anything is.
      durableUpTo = webhooks.maxDeliveryId();
      deps.outbox.onDeliveriesDurable((rows) => {
        const keys = new Set<string>();
        for (const row of rows) {
          durableUpTo = Math.max(durableUpTo, row.id);
          keys.add(row.apiKeyId);
        }
        for (const keyId of keys) {
          const r = runners.get(keyId);
          if (r) pump(r);
        }
      });
      for (const cfg of webhooks.all()) {
        const r = runnerFor(cfg);
        runners.set(cfg.apiKeyId, r);
        pump(r);
      }
      const runSweep = () => {
        sweep().catch((err) => log('webhook retention sweep failed', err));
      };
      runSweep();
      sweepTimer = setInterval(runSweep, SWEEP_EVERY_MS);
      sweepTimer.unref();
    },
    /** Reads an endpoint's configuration again after the operator changed it (or deleted it), and pumps it. */
    reload(keyId: string): void {
      const old = runners.get(keyId);
      if (old) disarm(old);
      const cfg = webhooks.get(keyId);
      if (!cfg) {
        runners.delete(keyId);
        return;
      }
      const r = runnerFor(cfg);
      // Deliveries already under way finish on the old runner; the new one must not start them again.
      if (old) r.inFlight = old.inFlight;
      runners.set(keyId, r);
      pump(r);
    },
    /** Whether the key has an enabled endpoint that selected `type` (as configured when last loaded). */
    selects(apiKeyId: string, type: string): boolean {
      const cfg = runners.get(apiKeyId)?.cfg;
      return cfg?.enabled === true && cfg.events.includes(type);
    },
    /** Timers armed (at most one per endpoint), for the benchmark and tests. */
    timersArmed(): number {
      let n = 0;
      for (const r of runners.values()) if (r.timer) n += 1;
      return n;
    },
    /** Deliveries in flight and rows read ahead, over all endpoints. */
    held(): { inFlight: number; buffered: number } {
      let inFlight = 0;
      let buffered = 0;
      for (const r of runners.values()) {
        inFlight += r.inFlight.size;
        buffered += r.buffer.length;
      }
      return { inFlight, buffered };
    },
    async stop(): Promise<void> {
      stopped = true;
      if (sweepTimer) clearInterval(sweepTimer);
      for (const r of runners.values()) disarm(r);
      await agent.destroy().catch(() => undefined);
    },
  };
}

export type DeliveryEngine = ReturnType<typeof createDeliveryEngine>;

/** What an operator reads of a failed attempt: the cause's kind, never a header or a body. */
function describeFailure(err: unknown, timeoutMs: number): string {
  const e = err as { name?: string; code?: string; message?: string; cause?: { code?: string } };
  if (e?.name === 'TimeoutError' || e?.code === 'UND_ERR_HEADERS_TIMEOUT' || e?.code === 'UND_ERR_CONNECT_TIMEOUT') {
    return `no answer within ${timeoutMs} ms`;
  }
  if (e?.code === 'WEBHOOK_TARGET_NOT_ALLOWED') return String(e.message);
  const code = e?.code ?? e?.cause?.code;
  if (code === 'WEBHOOK_TARGET_NOT_ALLOWED') return String((e.cause as { message?: string }).message);
  return code ? `request failed: ${code}` : `request failed: ${e?.message ?? String(err)}`;
}
