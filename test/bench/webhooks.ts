/**
 * Webhook delivery benchmarks against the running appliance (supervisor, enclave and API processes) and real HTTPS
 * receivers on loopback. Prints figures; asserts nothing. Run: `npm run bench:webhooks`.
 *
 *   BENCH_QUEUED     deliveries queued while the endpoint is down (default 10000)
 *   BENCH_RATE       offered event rate of the steady phase (default 2000/s), for BENCH_SECONDS (default 10)
 *   BENCH_PINGS      sequential pings of the latency phase (default 300)
 *
 * Events are `test.ping`s queued through the admin API (`POST /admin/v1/api-keys/{keyId}/webhook/test`): each is an
 * outbox event and a delivery row written in one transaction, as every state change's event is.
 *
 * latency: the queue empty, one ping at a time: from the ping request (before its commit) and from its 202 (after its
 *   commit and fsync) to the receiver holding the whole request (target: p50 < 50 ms). Beside it, the bare HTTPS
 *   round trip to the same receiver on a warm connection.
 * down: BENCH_QUEUED deliveries queued to an endpoint that refuses connections: the engine's timers, held deliveries
 *   and the API's RSS (target: one timer, bounded memory); then the receiver comes back on the same port and the
 *   queue drains: its rate (target: the full rate).
 * steady: events offered at BENCH_RATE; deliveries per second received (target: ≥ 1,000/s). Beside it, the machine's
 *   limit for the same work: a plain undici client posting to the same receiver process, 32 in flight.
 */
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import autocannon from 'autocannon';
import { Agent, request } from 'undici';
import { startWebhookReceiver, webhookCaFile } from '../../fixtures/webhook-receiver.ts';
import { startWebhookReceiverProcess, type WebhookReceiverProcess } from '../../fixtures/webhook-receiver-process.ts';
import { createPartnerKey } from '../helpers/http.ts';
import { BENCH_ADMIN_TOKEN, ROOT, startAppliance, stopAppliance } from './appliance.ts';

const QUEUED = Number(process.env['BENCH_QUEUED'] ?? 10_000);
const RATE = Number(process.env['BENCH_RATE'] ?? 2000);
const SECONDS = Number(process.env['BENCH_SECONDS'] ?? 10);
const PINGS = Number(process.env['BENCH_PINGS'] ?? 300);

const auth = { authorization: `Bearer ${BENCH_ADMIN_TOKEN}`, 'content-type': 'application/json' };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? Number.NaN;
};
const ms = (x: number) => `${x.toFixed(1)} ms`;

async function admin(adminUrl: string, method: string, route: string, body?: unknown) {
  const r = await fetch(`${adminUrl}/admin/v1${route}`, {
    method,
    ...(body === undefined
      ? { headers: { authorization: auth.authorization } }
      : { headers: auth, body: JSON.stringify(body) }),
  });
  const text = await r.text();
  if (r.status >= 300) throw new Error(`${method} ${route} answered ${r.status}: ${text}`);
  return text ? JSON.parse(text) : undefined;
}

/** Samples of the API's /metrics that this benchmark reads. */
async function metrics(adminUrl: string) {
  const text = await (await fetch(`${adminUrl}/metrics`, { headers: auth })).text();
  const one = (re: RegExp) => Number(re.exec(text)?.[1] ?? Number.NaN);
  return {
    timers: one(/^webhook_timers_armed (\d+)/m),
    inFlight: one(/^webhook_deliveries_held\{where="in_flight"\} (\d+)/m),
    readAhead: one(/^webhook_deliveries_held\{where="read_ahead"\} (\d+)/m),
    rssMb: one(/^process_resident_memory_bytes (\d+)/m) / 2 ** 20,
    heapMb: one(/^nodejs_heap_size_used_bytes (\d+)/m) / 2 ** 20,
  };
}

/** Queues `n` pings for `keyId` with autocannon, 32 at a time; answers the time it took. */
async function queuePings(adminUrl: string, keyId: string, n: number, rate?: number): Promise<number> {
  const t0 = performance.now();
  const r = await autocannon({
    url: `${adminUrl}/admin/v1/api-keys/${keyId}/webhook/test`,
    method: 'POST',
    headers: { authorization: auth.authorization },
    connections: 32,
    amount: n,
    ...(rate ? { overallRate: rate } : {}),
  });
  if (r.non2xx > 0 || r.errors > 0) throw new Error(`queueing pings: ${r.non2xx} non-2xx, ${r.errors} errors`);
  return performance.now() - t0;
}

/** Polls the receiver's count until it reaches `target`; answers [time of first increase, time it was reached]. */
async function drain(rcv: WebhookReceiverProcess, from: number, target: number, timeoutMs: number) {
  const t0 = performance.now();
  let first: number | undefined;
  for (;;) {
    const c = await rcv.count();
    if (first === undefined && c > from) first = performance.now();
    if (c >= target) return { first: first ?? performance.now(), done: performance.now(), waitedFrom: t0 };
    if (performance.now() - t0 > timeoutMs) throw new Error(`only ${c - from} of ${target - from} delivered`);
    await sleep(20);
  }
}

/** The machine's limit: a plain undici client posting signed-size JSON to the receiver, 32 in flight, for `n`. */
async function rawHttpsRate(url: string, n: number): Promise<number> {
  const { readFileSync } = await import('node:fs');
  const agent = new Agent({ connections: 32, connect: { ca: readFileSync(webhookCaFile, 'utf8') } });
  const body = JSON.stringify({ id: 'evt_00000000-0000-0000-0000-000000000000', type: 'test.ping', data: {} });
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (next < n) {
        next += 1;
        const r = await request(url, {
          method: 'POST',
          dispatcher: agent,
          body,
          headers: { 'content-type': 'application/json' },
        });
        await r.body.dump();
      }
    }),
  );
  const rate = n / ((performance.now() - t0) / 1000);
  await agent.close();
  return rate;
}

async function main() {
  console.log(`machine: ${os.cpus().length} cores, ${os.cpus()[0]?.model}, node ${process.version}`);
  execFileSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' });
  const latencyReceiver = await startWebhookReceiver();
  let rcv = await startWebhookReceiverProcess();
  const svc = await startAppliance({
    env: {
      WEBHOOK_ALLOW_PRIVATE_TARGETS: '1',
      NODE_EXTRA_CA_CERTS: webhookCaFile,
      // A short schedule, so that the endpoint that was down is probed again within seconds of coming back.
      WEBHOOK_RETRY_BASE_MS: '100',
      ADMIN_RATE_LIMIT_PER_MINUTE: '10000000',
    },
  });
  try {
    const key = (name: string) =>
      createPartnerKey(svc.adminUrl, BENCH_ADMIN_TOKEN, { name, plan: 'enterprise', rateLimitPerMinute: 1_000_000 });

    // --- latency: empty queue, one at a time
    const L = await key('latency');
    await admin(svc.adminUrl, 'PUT', `/api-keys/${L.keyId}/webhook`, {
      url: latencyReceiver.url,
      events: ['test.ping'],
    });
    const fromRequest: number[] = [];
    const fromCommit: number[] = [];
    for (let i = 0; i < PINGS + 20; i += 1) {
      const sent = Date.now();
      const { eventId } = await admin(svc.adminUrl, 'POST', `/api-keys/${L.keyId}/webhook/test`);
      const committed = Date.now();
      await latencyReceiver.waitFor((r) => r.some((d) => d.id === eventId), eventId);
      const got = latencyReceiver.received.find((d) => d.id === eventId)!.receivedAt;
      if (i >= 20) {
        fromRequest.push(got - sent);
        fromCommit.push(got - committed);
      }
      latencyReceiver.received.length = 0;
      await sleep(10);
    }
    const bare: number[] = [];
    {
      const agent = new Agent({ connect: { ca: latencyReceiver.caPem } });
      for (let i = 0; i < 220; i += 1) {
        const t0 = performance.now();
        const r = await request(latencyReceiver.url, { method: 'POST', dispatcher: agent, body: '{}' });
        await r.body.dump();
        if (i >= 20) bare.push(performance.now() - t0);
      }
      await agent.close();
    }
    console.log(
      `latency (queue empty, ${PINGS} pings one at a time): from the ping request p50 ${ms(pct(fromRequest, 50))} p99 ${ms(pct(fromRequest, 99))}; from its 202 (committed, fsynced) p50 ${ms(pct(fromCommit, 50))} p99 ${ms(pct(fromCommit, 99))}; bare HTTPS POST round trip p50 ${ms(pct(bare, 50))} p99 ${ms(pct(bare, 99))}`,
    );

    // --- down: a queue builds to an endpoint that refuses connections
    const D = await key('down');
    const port = rcv.port;
    await admin(svc.adminUrl, 'PUT', `/api-keys/${D.keyId}/webhook`, { url: rcv.url, events: ['test.ping'] });
    await rcv.stop();
    const idle = await metrics(svc.adminUrl);
    const queueMs = await queuePings(svc.adminUrl, D.keyId, QUEUED);
    await sleep(2_000);
    const down = await metrics(svc.adminUrl);
    const state = await admin(svc.adminUrl, 'GET', `/api-keys/${D.keyId}/webhook`);
    console.log(
      `down: ${QUEUED} deliveries queued in ${(queueMs / 1000).toFixed(1)} s to a refusing endpoint: state ${state.state}, ${state.consecutiveFailures} probes failed, pending ${state.deliveries.pending}; engine timers ${down.timers}, in flight ${down.inFlight}, read ahead ${down.readAhead}; API RSS ${idle.rssMb.toFixed(0)} → ${down.rssMb.toFixed(0)} MB, heap ${idle.heapMb.toFixed(0)} → ${down.heapMb.toFixed(0)} MB`,
    );
    rcv = await startWebhookReceiverProcess({ port });
    const back = performance.now();
    const d = await drain(rcv, 0, QUEUED, 120_000);
    const drainRate = QUEUED / ((d.done - d.first) / 1000);
    console.log(
      `back: first delivery ${((d.first - back) / 1000).toFixed(1)} s after the receiver returned (the breaker's next probe); ${QUEUED} drained at ${drainRate.toFixed(0)}/s`,
    );

    // --- steady: events offered at RATE
    const S = await key('steady');
    await admin(svc.adminUrl, 'PUT', `/api-keys/${S.keyId}/webhook`, { url: rcv.url, events: ['test.ping'] });
    const before = await rcv.count();
    const n = RATE * SECONDS;
    const t0 = performance.now();
    const offerMs = await queuePings(svc.adminUrl, S.keyId, n, RATE);
    const atEnd = (await rcv.count()) - before;
    const s = await drain(rcv, before, before + n, 120_000);
    const total = (s.done - t0) / 1000;
    console.log(
      `steady: ${n} events offered at ${RATE}/s over ${(offerMs / 1000).toFixed(1)} s: ${atEnd} delivered by the end of the offer (${(atEnd / (offerMs / 1000)).toFixed(0)}/s), the last ${((s.done - t0 - offerMs) / 1000).toFixed(2)} s after it; ${(n / total).toFixed(0)} deliveries/s from first offer to last delivery`,
    );
    const limit = await rawHttpsRate(rcv.url, 20_000);
    console.log(
      `machine limit, same run: a plain undici client posts ${limit.toFixed(0)}/s to the same receiver (32 in flight); drain ${((drainRate / limit) * 100).toFixed(0)} % of it`,
    );
  } finally {
    await stopAppliance(svc);
    await rcv.stop();
    await latencyReceiver.close();
  }
}

await main();
