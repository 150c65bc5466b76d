import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { EventType } from '../chains/domain/events.ts';
import { createStore } from './index.ts';

const at = '2026-01-01T00:00:00.000Z';

/** A store with project P (keys A and B, each with an endpoint) and project Q (key C, with an endpoint). */
async function setup() {
  const store = createStore(':memory:');
  await store.writer.write(() => {
    for (const p of ['P', 'Q']) store.projects.insert({ id: p, name: p, plan: 'free', createdAt: at });
    for (const [k, p] of [
      ['A', 'P'],
      ['B', 'P'],
      ['C', 'Q'],
    ] as const) {
      store.apiKeys.insert({ id: k, projectId: p, environment: 'development', secretHash: `h${k}`, createdAt: at });
    }
    const endpoint = (apiKeyId: string, projectId: string, events: string[], enabled = true) =>
      store.webhooks.upsert({
        apiKeyId,
        projectId,
        url: `https://${apiKeyId}.example/hook`,
        events,
        enabled,
        signatureFormat: 'timestamp-body',
        secret: `whsec_${apiKeyId}`,
        at,
      });
    endpoint('A', 'P', ['wallet.created', 'wallet.pregen_claimed']);
    endpoint('B', 'P', ['wallet.pregen_claimed']);
    endpoint('C', 'Q', ['wallet.created', 'wallet.pregen_claimed']);
  });
  const append = (type: EventType, projectId: string, apiKeyId?: string) =>
    store.writer.write(() =>
      store.outbox.append({ projectId, apiKeyId: apiKeyId ?? null, type, createdAt: at, data: {} }),
    );
  return { store, append };
}

test("fan-out: a keyed event to its key's endpoint, an unkeyed one to the project's, only where selected and enabled", async () => {
  const { store, append } = await setup();
  // The endpoints told of new deliveries (once their write is on disk) since the last look.
  let heard = new Set<string>();
  store.outbox.onDeliveriesDurable((rows) => {
    for (const r of rows) heard.add(r.apiKeyId);
  });
  const takeHeard = () => {
    const h = heard;
    heard = new Set();
    return h;
  };
  const keyed = await append('wallet.created', 'P', 'A');
  assert.deepEqual([...takeHeard()], ['A']);
  await append('wallet.created', 'P', 'B'); // B did not select wallet.created
  assert.deepEqual([...takeHeard()], []);
  const claimed = await append('wallet.pregen_claimed', 'P');
  assert.deepEqual([...takeHeard()].sort(), ['A', 'B'], 'every endpoint of project P, none of Q');
  const ping = await append('test.ping', 'P', 'B');
  assert.deepEqual([...takeHeard()], ['B'], 'test.ping goes to its key whatever it selected');
  assert.deepEqual(
    store.webhooks.due('A', Date.now(), 10).map((d) => d.eventId),
    [keyed, claimed],
  );
  assert.deepEqual(
    store.webhooks.due('B', Date.now(), 10).map((d) => d.eventId),
    [claimed, ping],
  );
  assert.equal(store.webhooks.due('C', Date.now(), 10).length, 0);
  // Disabled: nothing is queued.
  await store.writer.write(() =>
    store.webhooks.upsert({ ...store.webhooks.get('A')!, enabled: false, secret: 'unused', at }),
  );
  await append('wallet.created', 'P', 'A');
  assert.equal(store.webhooks.counts('A').pending, 2);
  store.close();
});

test('attempts: retried, dead, expired, redelivered; finished rows and old events purged', async () => {
  const { store, append } = await setup();
  const e1 = await append('wallet.created', 'Q', 'C');
  const e2 = await append('wallet.created', 'Q', 'C');
  const e3 = await append('wallet.created', 'Q', 'C');
  const [d1, d2, d3] = store.webhooks.due('C', Date.now(), 10);
  const t = Date.now();
  await store.writer.write(() => {
    store.webhooks.markDelivered(d1!.id, { at: t, statusCode: 204, latencyMs: 3 });
    store.webhooks.markFailed(d2!.id, { at: t, nextAt: t + 60_000, statusCode: 500, latencyMs: 4, error: 'e500' });
    store.webhooks.markFailed(d3!.id, { at: t, nextAt: null, statusCode: null, latencyMs: 5, error: 'refused' });
  });
  assert.deepEqual(store.webhooks.counts('C'), { pending: 1, delivered: 1, dead: 1 });
  assert.equal(store.webhooks.due('C', t, 10).length, 0, 'the retry is not due yet');
  assert.equal(store.webhooks.nextDueAt('C'), t + 60_000);
  const dead = store.webhooks.getDelivery('C', e3)!;
  assert.deepEqual([dead.status, dead.attempts, dead.lastError, dead.finishedAt], ['dead', 1, 'refused', t]);
  // A second outcome for a finished delivery changes nothing (an attempt that outlived a redelivery, say).
  await store.writer.write(() => store.webhooks.markDelivered(d3!.id, { at: t, statusCode: 200, latencyMs: 1 }));
  assert.equal(store.webhooks.getDelivery('C', e3)!.status, 'dead');

  // Pending deliveries older than the schedule's span, while the endpoint fails, become dead.
  assert.equal(await store.writer.write(() => store.webhooks.expire('C', t + 1, t + 1)), 1);
  assert.equal(store.webhooks.getDelivery('C', e2)!.lastError, 'e500', 'the last error is kept');
  assert.equal(await store.writer.write(() => store.webhooks.redeliverDead('C', t)), 2);
  assert.deepEqual(
    store.webhooks.due('C', t, 10).map((d) => [d.eventId, d.attempts]),
    [
      [e2, 0],
      [e3, 0],
    ],
  );
  assert.equal(await store.writer.write(() => store.webhooks.redeliver('C', e1, t)), true);
  assert.equal(await store.writer.write(() => store.webhooks.redeliver('C', 'evt_none', t)), false);

  // Retention: finished rows past their age go, a bounded number at a time; old events go, newer ones stay.
  await store.writer.write(() => {
    for (const d of store.webhooks.due('C', t, 10)) {
      store.webhooks.markDelivered(d.id, { at: 1_000, statusCode: 200, latencyMs: 1 });
    }
  });
  assert.equal(await store.writer.write(() => store.webhooks.purgeFinished('delivered', 1_000, 10)), 0, 'not older');
  assert.equal(await store.writer.write(() => store.webhooks.purgeFinished('dead', 2_000, 10)), 0, 'none dead');
  assert.equal(await store.writer.write(() => store.webhooks.purgeFinished('delivered', 2_000, 2)), 2);
  assert.equal(await store.writer.write(() => store.webhooks.purgeFinished('delivered', 2_000, 2)), 1);
  assert.equal(store.webhooks.counts('C').delivered, 0);
  await store.writer.write(() =>
    store.outbox.append({ projectId: 'Q', type: 'test.ping', createdAt: '2030-01-01T00:00:00.000Z', data: {} }),
  );
  assert.equal(await store.writer.write(() => store.webhooks.purgeEvents('2029-01-01T00:00:00.000Z', 100)), 3);
  assert.deepEqual(
    store.outbox.oldest(10).map((e) => e.createdAt),
    ['2030-01-01T00:00:00.000Z'],
  );
  const orphan = store.webhooks.listDeliveries('C', { limit: 10 });
  assert.ok(
    orphan.every((d) => d.type === null),
    'deliveries of purged events read without them',
  );
  store.close();
});
