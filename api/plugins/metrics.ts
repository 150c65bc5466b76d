import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

/** The service's Prometheus registry and the metrics other parts update. */
export function createMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return {
    registry,
    httpRequests: new Counter({
      name: 'http_requests_total',
      help: 'HTTP requests answered, by method, route and status',
      labelNames: ['method', 'route', 'status'] as const,
      registers: [registry],
    }),
    httpErrors: new Counter({
      name: 'http_error_answers_total',
      help: "Error answers by method, route, status and the body's code (the error catalogue's)",
      labelNames: ['method', 'route', 'status', 'code'] as const,
      registers: [registry],
    }),
    httpDuration: new Histogram({
      name: 'http_request_duration_seconds',
      help: 'HTTP request duration, by method and route',
      labelNames: ['method', 'route'] as const,
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers: [registry],
    }),
    httpRefused: new Counter({
      name: 'http_refused_total',
      help: 'Requests refused by the HTTP layer before routing (timeouts, oversized headers, malformed HTTP), by listener and status',
      labelNames: ['listener', 'status'] as const,
      registers: [registry],
    }),
    httpEvicted: new Counter({
      name: 'http_connections_evicted_total',
      help: 'Connections closed at the connection cap to admit a new one: the longest without progress, still sending its request or idle, by listener',
      labelNames: ['listener'] as const,
      registers: [registry],
    }),
    httpDropped: new Counter({
      name: 'http_connections_dropped_total',
      help: 'New connections closed at the connection cap because every open one was being answered, by listener',
      labelNames: ['listener'] as const,
      registers: [registry],
    }),
    adminAuthFailures: new Counter({
      name: 'admin_auth_failures_total',
      help: 'Admin API requests refused for a missing or wrong admin token',
      registers: [registry],
    }),
    chainSteps: new Counter({
      name: 'chain_steps_total',
      help: "Chain steps of signing requests, by step and where they ran: 'inline' on the event loop, 'worker' on the API's chain pool",
      labelNames: ['step', 'where'] as const,
      registers: [registry],
    }),
    actorWakeLag: new Histogram({
      name: 'actor_wake_lag_seconds',
      help: 'How late each WAKE was applied after the wake time an actor stored',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    }),
    actorRestore: new Gauge({
      name: 'actor_restore_seconds',
      help: 'How long the start took to recover the actors a previous run left with effects under way',
      registers: [registry],
    }),
    chainPollWatched: new Gauge({
      name: 'chain_poll_watched',
      help: "Unresolved payments with a hash that the chain's last polling round looked up, by chain",
      labelNames: ['chain'] as const,
      registers: [registry],
    }),
    chainPollRoundTrips: new Gauge({
      name: 'chain_poll_round_trips',
      help: "HTTP round trips the chain's last polling round made (bounded whatever the number watched), by chain",
      labelNames: ['chain'] as const,
      registers: [registry],
    }),
    chainPollObserve: new Gauge({
      name: 'chain_poll_lookup_seconds',
      help: "How long the chain's last polling round took to look its payments up (the RPC part of the round), by chain",
      labelNames: ['chain'] as const,
      registers: [registry],
    }),
    chainPollDuration: new Histogram({
      name: 'chain_poll_round_seconds',
      help: 'How long a polling round took (lookups and deliveries), by chain',
      labelNames: ['chain'] as const,
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    }),
    webhookAttempts: new Counter({
      name: 'webhook_attempts_total',
      help: 'Webhook delivery attempts by outcome: delivered, retry (failed, tried again later) or dead',
      labelNames: ['outcome'] as const,
      registers: [registry],
    }),
    webhookAttemptDuration: new Histogram({
      name: 'webhook_attempt_seconds',
      help: 'How long a webhook delivery attempt took, from sending to the answer (or the failure)',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    }),
    /** Records one chain polling round. */
    observePollRound(r: {
      chainKey: string;
      watched: number;
      roundTrips: number;
      observeMs: number;
      ms: number;
    }): void {
      this.chainPollObserve.set({ chain: r.chainKey }, r.observeMs / 1000);
      this.chainPollWatched.set({ chain: r.chainKey }, r.watched);
      this.chainPollRoundTrips.set({ chain: r.chainKey }, r.roundTrips);
      this.chainPollDuration.observe({ chain: r.chainKey }, r.ms / 1000);
    },
    /** Sets how the actor counts are read when /metrics is scraped. */
    watchActors(read: { live: () => number; counts: () => { waiting: number; faulted: number } }): void {
      new Gauge({
        name: 'actors_live',
        help: 'Actors in memory (working: effects under way or events being applied)',
        registers: [registry],
        collect() {
          this.set(read.live());
        },
      });
      new Gauge({
        name: 'actors_stored',
        help: 'Actors not finished, by condition: active (in memory, or stored until an event or their wake time comes) or faulted (held for the operator)',
        labelNames: ['condition'] as const,
        registers: [registry],
        collect() {
          const c = read.counts();
          this.set({ condition: 'active' }, c.waiting);
          this.set({ condition: 'faulted' }, c.faulted);
        },
      });
    },
    /** Sets how the webhook engine's holdings are read when /metrics is scraped. */
    watchWebhooks(read: { timersArmed: () => number; held: () => { inFlight: number; buffered: number } }): void {
      new Gauge({
        name: 'webhook_timers_armed',
        help: 'Timers the webhook engine holds (at most one per endpoint, whatever its queue)',
        registers: [registry],
        collect() {
          this.set(read.timersArmed());
        },
      });
      new Gauge({
        name: 'webhook_deliveries_held',
        help: 'Webhook deliveries held in memory: in flight, or read ahead of sending (bounded per endpoint)',
        labelNames: ['where'] as const,
        registers: [registry],
        collect() {
          const h = read.held();
          this.set({ where: 'in_flight' }, h.inFlight);
          this.set({ where: 'read_ahead' }, h.buffered);
        },
      });
    },
    /** Sets how the chain pool's queue is read when /metrics is scraped. */
    watchChainPoolQueue(read: () => number): void {
      new Gauge({
        name: 'chain_pool_queue_size',
        help: "Large-input chain steps waiting for a thread of the API's chain pool",
        registers: [registry],
        collect() {
          this.set(read());
        },
      });
    },
  };
}

export type Metrics = ReturnType<typeof createMetrics>;

/**
 * Counts and times every answer of the listener it is registered on; with `serve`, also answers
 * `GET /metrics` in the Prometheus text format (the admin listener only: see docs/operations.md, Processes).
 */
export const metricsPlugin = fp(async (app: FastifyInstance, opts: { metrics: Metrics; serve?: boolean }) => {
  const { metrics } = opts;
  app.addHook('onResponse', (req, reply, done) => {
    const route = req.routeOptions.url ?? 'unmatched';
    metrics.httpRequests.inc({ method: req.method, route, status: String(reply.statusCode) });
    metrics.httpDuration.observe({ method: req.method, route }, reply.elapsedTime / 1000);
    done();
  });
  if (!opts.serve) return;
  app.get('/metrics', { schema: { hide: true } }, async (_req, reply) => {
    reply.header('content-type', metrics.registry.contentType);
    return metrics.registry.metrics();
  });
});
