import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, test } from 'node:test';
import { startWebhookReceiver, type WebhookReceiver } from '../fixtures/webhook-receiver.ts';
import { createPartnerKey } from './helpers/http.ts';
import { startTestService, type TestService, tempDataDir } from './helpers/service.ts';
import { type RunningSupervisor, startSupervisor } from './helpers/supervisor.ts';

const cleanups: Array<() => Promise<unknown> | unknown> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

/** `webhook_attempts_total` by outcome, from the admin listener's /metrics. */
async function attempts(adminUrl: string, token: string): Promise<number> {
  const text = await (await fetch(`${adminUrl}/metrics`, { headers: { authorization: `Bearer ${token}` } })).text();
  let n = 0;
  for (const m of text.matchAll(/^webhook_attempts_total\{outcome="\w+"\} (\d+)/gm)) n += Number(m[1]);
  return n;
}

test('an endpoint that is down is probed one delivery at a time; once it answers, its queue drains', async () => {
  const receiver: WebhookReceiver = await startWebhookReceiver();
  cleanups.push(() => receiver.close());
  const svc: TestService = await startTestService(
    { WEBHOOK_ALLOW_PRIVATE_TARGETS: '1', WEBHOOK_RETRY_BASE_MS: '50' },
    { api: { webhooks: { extraCa: receiver.caPem } } },
  );
  cleanups.push(() => svc.stop());
  const p = await svc.newPartner();
  await svc.admin('PUT', `/api-keys/${p.keyId}/webhook`, { url: receiver.url, events: ['wallet.created'] });
  await receiver.down();
  const queued = 100;
  const ids: string[] = [];
  for (let i = 0; i < queued; i += 1)
    ids.push((await svc.admin('POST', `/api-keys/${p.keyId}/webhook/test`)).body.eventId);
  // Long enough for the breaker to trip and for its first probe (50 ms later) to fail; the next is 3 s away.
  await new Promise((r) => setTimeout(r, 1_000));
  const whileDown = await attempts(svc.adminUrl, svc.adminToken);
  const state = (await svc.admin('GET', `/api-keys/${p.keyId}/webhook`)).body;
  assert.equal(state.state, 'failing');
  assert.ok(state.consecutiveFailures >= 2, JSON.stringify(state));
  assert.ok(
    whileDown < queued,
    `${whileDown} attempts for ${queued} queued deliveries: the breaker should stop attempts to a down endpoint`,
  );
  assert.equal(state.deliveries.pending, queued, 'nothing is lost or dead while the endpoint is down');

  await receiver.up();
  // The next probe (about 3 s after the first, with jitter) succeeds and the whole queue follows it.
  await receiver.waitFor((r) => new Set(r.map((d) => d.id)).size === queued, 'the whole queue', 15_000);
  assert.deepEqual(new Set(receiver.received.map((d) => d.id)), new Set(ids));
  const healed = (await svc.admin('GET', `/api-keys/${p.keyId}/webhook`)).body;
  assert.equal(healed.state, 'healthy');
  assert.equal(healed.consecutiveFailures, 0);
});

test('deliveries failing when the API process is SIGKILLed go out after its restart (CA from NODE_EXTRA_CA_CERTS)', async () => {
  const receiver = await startWebhookReceiver({ mode: { kind: 'error', status: 503 } });
  cleanups.push(() => receiver.close());
  const dataDir = tempDataDir();
  cleanups.push(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  const token = 'webhook-outage-admin-token-0123456789';
  const sup: RunningSupervisor = await startSupervisor({
    DATA_DIR: dataDir,
    ADMIN_TOKEN: token,
    WEBHOOK_ALLOW_PRIVATE_TARGETS: '1',
    WEBHOOK_RETRY_BASE_MS: '1500',
    NODE_EXTRA_CA_CERTS: receiver.caFile,
  });
  cleanups.push(() => sup.stop());
  const key = await createPartnerKey(sup.adminUrl, token, { plan: 'enterprise', rateLimitPerMinute: 100000 });
  const admin = async (method: string, route: string, body?: unknown) => {
    const r = await fetch(`${sup.adminUrl}/admin/v1${route}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
    return { status: r.status, body: (await r.json()) as any };
  };
  const cfg = await admin('PUT', `/api-keys/${key.keyId}/webhook`, { url: receiver.url, events: ['wallet.created'] });
  assert.equal(cfg.status, 200, JSON.stringify(cfg.body));
  const { body } = await admin('POST', `/api-keys/${key.keyId}/webhook/test`);
  await receiver.waitFor((r) => r.length >= 1, 'the first (failed) attempt');

  process.kill(sup.apiPid(), 'SIGKILL');
  receiver.setMode({ kind: 'ok' });
  await sup.waitFor(() => /api restarted/.test(sup.log()), 'the API restart');
  await receiver.waitFor(
    (r) => r.some((d) => d.id === body.eventId && d !== r[0]),
    'the retry after the restart',
    20_000,
  );
  const ids = new Set(receiver.received.map((d) => d.id));
  assert.deepEqual(ids, new Set([body.eventId]), 'the same webhook-id before and after the restart');
});
