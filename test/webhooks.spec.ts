import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { Webhook } from 'standardwebhooks';
import { type ReceivedDelivery, startWebhookReceiver, type WebhookReceiver } from '../fixtures/webhook-receiver.ts';
import { type Partner, startTestService, type TestService } from './helpers/service.ts';
import { verifySpecSignature } from './helpers/webhook-verify.ts';

const verifySpec = verifySpecSignature;

/** Every event type the spec's Events table names, in its order. */
const SPEC_EVENTS = [
  'user.created',
  'wallet.created',
  'transaction.signed',
  'send.broadcasted',
  'send.confirmed',
  'send.failed',
  'rest.transaction.confirmed',
  'rest.transaction.failed',
  'wallet.pregen_claimed',
  'user.external_wallet_verified',
  'test.ping',
];

let svc: TestService;
let receiver: WebhookReceiver;
let partner: Partner;

before(async () => {
  receiver = await startWebhookReceiver();
  svc = await startTestService(
    { WEBHOOK_ALLOW_PRIVATE_TARGETS: '1', WEBHOOK_RETRY_BASE_MS: '100', WEBHOOK_TIMEOUT_MS: '1000' },
    { api: { webhooks: { extraCa: receiver.caPem } } },
  );
  partner = await svc.newPartner();
});

after(async () => {
  await svc.stop();
  await receiver.close();
});

/** A path of its own on the shared receiver, so each test reads only its deliveries. */
function hookPath(name: string): string {
  return `${receiver.url}/${name}`;
}

function receivedOn(name: string): ReceivedDelivery[] {
  const p = new URL(hookPath(name)).pathname;
  return receiver.received.filter((d) => d.path === p);
}

async function waitOn(name: string, n: number, what: string, timeoutMs = 10_000): Promise<ReceivedDelivery[]> {
  const p = new URL(hookPath(name)).pathname;
  await receiver.waitFor((all) => all.filter((d) => d.path === p).length >= n, what, timeoutMs);
  return receivedOn(name);
}

/** Polls the operator's delivery list until `eventId` has `status` there; answers that row. */
async function deliveryRow(keyId: string, eventId: string, status: string, timeoutMs = 10_000): Promise<any> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const list = await svc.admin('GET', `/api-keys/${keyId}/webhook/deliveries?status=${status}&limit=100`);
    const row = list.body.data?.find((d: { eventId: string }) => d.eventId === eventId);
    if (row) return row;
    if (Date.now() > until) throw new Error(`delivery ${eventId} not ${status}: ${JSON.stringify(list.body)}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe('configuration', () => {
  test('PUT creates the endpoint and shows its whsec_ secret once; GET and later PUTs never show it', async () => {
    const p = await svc.newPartner();
    const created = await svc.admin('PUT', `/api-keys/${p.keyId}/webhook`, {
      url: hookPath('config'),
      events: ['wallet.created', 'send.confirmed'],
    });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    assert.match(created.body.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    assert.equal(created.body.enabled, true);
    assert.equal(created.body.signatureFormat, 'timestamp-body');
    assert.equal(created.headers.get('cache-control'), 'no-store');
    const read = await svc.admin('GET', `/api-keys/${p.keyId}/webhook`);
    assert.equal(read.status, 200);
    assert.equal(read.body.secret, undefined);
    assert.deepEqual(read.body.events, ['wallet.created', 'send.confirmed']);
    assert.equal(read.body.state, 'healthy');
    assert.equal(JSON.stringify(read.body).includes(created.body.secret), false);
    const again = await svc.admin('PUT', `/api-keys/${p.keyId}/webhook`, {
      url: hookPath('config2'),
      events: ['send.failed'],
      signatureFormat: 'standard-webhooks',
    });
    assert.equal(again.status, 200);
    assert.equal(again.body.secret, undefined, 'the secret is shown only when the endpoint is created');
    assert.equal(again.body.url, hookPath('config2'));
    assert.equal(again.body.signatureFormat, 'standard-webhooks');
  });

  test('refused: HTTP, credentials, no events while enabled, unknown types, unknown key', async () => {
    const cases: Array<[unknown, number, string, RegExp]> = [
      [{ url: 'http://example.com/hook', events: ['wallet.created'] }, 400, 'INVALID_REQUEST', /HTTPS/],
      [{ url: 'https://u:p@example.com/hook', events: ['wallet.created'] }, 400, 'INVALID_REQUEST', /credentials/],
      [{ url: 'not a url', events: ['wallet.created'] }, 400, 'INVALID_REQUEST', /valid URL/],
      [{ url: hookPath('x'), events: [] }, 400, 'INVALID_REQUEST', /at least one event/],
      [{ url: hookPath('x') }, 400, 'INVALID_REQUEST', /events is required when the endpoint is created/],
      [{ url: hookPath('x'), events: ['wallet.deleted'] }, 400, 'INVALID_REQUEST', /unknown event type/],
      [{ url: hookPath('x'), events: ['wallet.created'], signatureFormat: 'hmac' }, 400, 'INVALID_REQUEST', /./],
      [{ url: hookPath('x'), events: 'wallet.created' }, 400, 'INVALID_REQUEST', /./],
      [{ url: hookPath('x'), events: ['wallet.created'], extra: 1 }, 400, 'INVALID_REQUEST', /./],
      [{ url: `https://example.com/${'a'.repeat(3000)}`, events: ['wallet.created'] }, 400, 'INVALID_REQUEST', /./],
    ];
    for (const [body, status, code, message] of cases) {
      const r = await svc.admin('PUT', `/api-keys/${partner.keyId}/webhook`, body);
      assert.equal(r.status, status, `${JSON.stringify(body).slice(0, 80)} → ${JSON.stringify(r.body)}`);
      assert.equal(r.body.code, code);
      assert.match(r.body.message, message);
    }
    const unknown = await svc.admin('PUT', '/api-keys/no-such-key/webhook', {
      url: hookPath('x'),
      events: ['test.ping'],
    });
    assert.equal(unknown.status, 404);
    assert.equal(unknown.body.code, 'API_KEY_NOT_FOUND');
    const none = await svc.admin('GET', `/api-keys/${partner.keyId}/webhook`);
    assert.equal(none.status, 404);
    assert.equal(none.body.code, 'WEBHOOK_NOT_CONFIGURED');
    assert.equal(
      (await svc.admin('POST', `/api-keys/${partner.keyId}/webhook/test`)).body.code,
      'WEBHOOK_NOT_CONFIGURED',
    );
  });

  test('every event type of the spec is accepted; the two never sent are stored and named in warnings', async () => {
    const p = await svc.newPartner();
    const put = await svc.admin('PUT', `/api-keys/${p.keyId}/webhook`, {
      url: hookPath('all-events'),
      events: SPEC_EVENTS,
    });
    assert.equal(put.status, 200, JSON.stringify(put.body));
    assert.deepEqual(put.body.events, SPEC_EVENTS, 'stored as given');
    assert.deepEqual(
      put.body.warnings.map((w: { code: string; event: string }) => [w.code, w.event]),
      [
        ['EVENT_NEVER_SENT', 'user.created'],
        ['EVENT_NEVER_SENT', 'user.external_wallet_verified'],
      ],
    );
    for (const w of put.body.warnings) {
      assert.ok(w.message.startsWith(`${w.event} is accepted but this service never sends it: `), w.message);
      assert.match(w.message, /no user system/);
    }
    const read = await svc.admin('GET', `/api-keys/${p.keyId}/webhook`);
    assert.deepEqual(read.body.events, SPEC_EVENTS, 'GET shows the selection as stored');
    assert.deepEqual(read.body.warnings, put.body.warnings);

    // Only sent types: the answer has no warnings (an empty array, always present).
    const sent = await svc.admin('PUT', `/api-keys/${p.keyId}/webhook`, {
      url: hookPath('all-events'),
      events: ['wallet.created', 'test.ping'],
    });
    assert.equal(sent.status, 200, JSON.stringify(sent.body));
    assert.deepEqual(sent.body.warnings, []);
    // Only an unsent type while enabled is still a selection: accepted, with its warning.
    const only = await svc.admin('PUT', `/api-keys/${p.keyId}/webhook`, {
      url: hookPath('all-events'),
      events: ['user.created', 'user.created'],
    });
    assert.equal(only.status, 200, JSON.stringify(only.body));
    assert.deepEqual(only.body.events, ['user.created']);
    assert.deepEqual(
      only.body.warnings.map((w: { event: string }) => w.event),
      ['user.created'],
    );

    // Any other name is still refused, naming the field and the allowed types; the stored selection is unchanged.
    const bad = await svc.admin('PUT', `/api-keys/${p.keyId}/webhook`, {
      url: hookPath('all-events'),
      events: ['wallet.created', 'user.deleted'],
    });
    assert.equal(bad.status, 400, JSON.stringify(bad.body));
    assert.equal(bad.body.code, 'INVALID_REQUEST');
    assert.equal(bad.body.field, 'body.events');
    assert.match(bad.body.message, /unknown event type "user\.deleted"; allowed: /);
    for (const e of SPEC_EVENTS) assert.ok(bad.body.message.includes(e), `${e} is listed: ${bad.body.message}`);
    assert.deepEqual((await svc.admin('GET', `/api-keys/${p.keyId}/webhook`)).body.events, ['user.created']);
  });

  test('with every spec type selected, test.ping and real events are delivered, and nothing of the unsent types', async () => {
    const p = await svc.newPartner();
    const { body: cfg } = await svc.admin('PUT', `/api-keys/${p.keyId}/webhook`, {
      url: hookPath('all-delivered'),
      events: SPEC_EVENTS,
    });
    const ping = await svc.admin('POST', `/api-keys/${p.keyId}/webhook/test`);
    assert.equal(ping.status, 202);
    const w = await svc.v1(p.secret, 'POST', '/wallets', {
      type: 'EVM',
      userIdentifier: 'all-events',
      userIdentifierType: 'CUSTOM_ID',
    });
    assert.equal(w.status, 201);
    const got = await waitOn('all-delivered', 2, 'the test.ping and wallet.created');
    const types = got.map((d) => JSON.parse(d.rawBody).type as string);
    assert.deepEqual([...types].sort(), ['test.ping', 'wallet.created']);
    for (const d of got) assert.equal(verifySpec(d, cfg.secret), true);
    const rows = await svc.admin('GET', `/api-keys/${p.keyId}/webhook/deliveries?limit=100`);
    assert.deepEqual(
      rows.body.data.map((d: { type: string }) => d.type).sort(),
      ['test.ping', 'wallet.created'],
      'no delivery of user.created or user.external_wallet_verified was ever queued',
    );
  });

  test('disable keeps the configuration and stops deliveries; delete removes it', async () => {
    const p = await svc.newPartner();
    await svc.admin('PUT', `/api-keys/${p.keyId}/webhook`, { url: hookPath('disable'), events: ['wallet.created'] });
    const off = await svc.admin('PUT', `/api-keys/${p.keyId}/webhook`, { url: hookPath('disable'), enabled: false });
    assert.equal(off.status, 200, JSON.stringify(off.body));
    assert.equal(off.body.enabled, false);
    assert.deepEqual(off.body.events, ['wallet.created'], 'disabling keeps the event selection');
    const ping = await svc.admin('POST', `/api-keys/${p.keyId}/webhook/test`);
    assert.equal(ping.status, 409);
    assert.equal(ping.body.code, 'WEBHOOK_DISABLED');
    const w = await svc.v1(p.secret, 'POST', '/wallets', {
      type: 'EVM',
      userIdentifier: 'disabled-hook',
      userIdentifierType: 'CUSTOM_ID',
    });
    assert.equal(w.status, 201);
    const kept = await svc.admin('GET', `/api-keys/${p.keyId}/webhook`);
    assert.equal(kept.body.url, hookPath('disable'));
    assert.equal(kept.body.deliveries.pending + kept.body.deliveries.delivered, 0, 'nothing queued while disabled');
    const del = await svc.admin('DELETE', `/api-keys/${p.keyId}/webhook`);
    assert.equal(del.status, 204);
    assert.equal((await svc.admin('GET', `/api-keys/${p.keyId}/webhook`)).status, 404);
    assert.equal((await svc.admin('DELETE', `/api-keys/${p.keyId}/webhook`)).status, 404);
    assert.equal(receivedOn('disable').length, 0);
  });
});

describe('delivery', () => {
  test('test.ping arrives signed as the spec says: envelope, headers, HMAC over "<timestamp>.<raw body>"', async () => {
    const p = await svc.newPartner();
    const { body: cfg } = await svc.admin('PUT', `/api-keys/${p.keyId}/webhook`, {
      url: hookPath('ping'),
      events: ['wallet.created'],
    });
    const sent = await svc.admin('POST', `/api-keys/${p.keyId}/webhook/test`);
    assert.equal(sent.status, 202);
    assert.match(sent.body.eventId, /^evt_[0-9a-f-]{36}$/);
    const [d] = await waitOn('ping', 1, 'the test.ping');
    const envelope = JSON.parse(d!.rawBody);
    assert.deepEqual(Object.keys(envelope), ['id', 'type', 'createdAt', 'data']);
    assert.equal(envelope.id, sent.body.eventId);
    assert.equal(envelope.type, 'test.ping');
    assert.equal(d!.id, envelope.id, 'webhook-id equals the payload id');
    assert.match(d!.timestamp, /^\d{10}$/);
    assert.equal(d!.headers['content-type'], 'application/json');
    assert.equal(verifySpec(d!, cfg.secret), true);
    // A forged body, an old timestamp or another secret fail the same check.
    assert.equal(verifySpec({ ...d!, rawBody: d!.rawBody.replace('test.ping', 'test.pong') }, cfg.secret), false);
    assert.equal(verifySpec(d!, cfg.secret, Number(d!.timestamp) + 301), false);
    assert.equal(verifySpec(d!, `${cfg.secret}x`), false);
    const row = await deliveryRow(p.keyId, sent.body.eventId, 'delivered');
    assert.equal(row.type, 'test.ping');
    assert.equal(row.attempts, 1);
    assert.equal(row.lastStatusCode, 200);
    assert.equal(typeof row.lastLatencyMs, 'number');
    assert.equal(row.nextAttemptAt, null);
  });

  test('standard-webhooks format: the standardwebhooks library verifies every delivery', async () => {
    const p = await svc.newPartner();
    const { body: cfg } = await svc.admin('PUT', `/api-keys/${p.keyId}/webhook`, {
      url: hookPath('standard'),
      events: ['wallet.created'],
      signatureFormat: 'standard-webhooks',
    });
    await svc.admin('POST', `/api-keys/${p.keyId}/webhook/test`);
    const [d] = await waitOn('standard', 1, 'the standard-webhooks ping');
    const verified = new Webhook(cfg.secret).verify(d!.rawBody, d!.headers) as { type: string };
    assert.equal(verified.type, 'test.ping');
    assert.throws(() => new Webhook(cfg.secret).verify(d!.rawBody.replace('ping', 'pong'), d!.headers));
    assert.equal(verifySpec(d!, cfg.secret), false, 'the two formats sign different messages');
  });

  test("a key's events reach its own endpoint: wallet.created and transaction.signed (chainId null)", async () => {
    const a = await svc.newPartner();
    const { body: cfg } = await svc.admin('PUT', `/api-keys/${a.keyId}/webhook`, {
      url: hookPath('events-a'),
      events: ['wallet.created', 'transaction.signed'],
    });
    const w = await svc.v1(a.secret, 'POST', '/wallets', {
      type: 'EVM',
      userIdentifier: 'hooked',
      userIdentifierType: 'CUSTOM_ID',
    });
    assert.equal(w.status, 201);
    const signed = await svc.v1(a.secret, 'POST', `/wallets/${w.body.id}/sign-message`, { message: 'hello' });
    assert.equal(signed.status, 200);
    const got = await waitOn('events-a', 2, 'wallet.created and transaction.signed');
    const bodies = got.map((d) => JSON.parse(d.rawBody));
    const created = bodies.find((b) => b.type === 'wallet.created');
    assert.deepEqual(created.data, {
      userId: w.body.id,
      walletId: w.body.id,
      walletAddress: w.body.address,
      walletType: 'EVM',
      walletCreatedAt: w.body.createdAt,
    });
    const sig = bodies.find((b) => b.type === 'transaction.signed');
    assert.equal(sig.data.chainId, null);
    assert.equal(sig.data.userId, w.body.id);
    for (const b of bodies) {
      assert.ok(!JSON.stringify(b).includes('"hooked"'), `${b.type} carries the wallet's userIdentifier`);
    }
    assert.equal(sig.data.walletId, w.body.id);
    for (const d of got) assert.equal(verifySpec(d, cfg.secret), true);
  });

  test('a failing receiver gets the same webhook-id and body on every retry, freshly signed', async () => {
    const p = await svc.newPartner();
    const { body: cfg } = await svc.admin('PUT', `/api-keys/${p.keyId}/webhook`, {
      url: hookPath('retry'),
      events: ['wallet.created'],
    });
    receiver.setMode({ kind: 'error', status: 503 });
    const sent = await svc.admin('POST', `/api-keys/${p.keyId}/webhook/test`);
    try {
      await waitOn('retry', 2, 'two failed attempts');
    } finally {
      receiver.setMode({ kind: 'ok' });
    }
    const got = await waitOn('retry', 3, 'the retry that succeeds');
    assert.deepEqual(new Set(got.map((d) => d.id)), new Set([sent.body.eventId]));
    assert.deepEqual(new Set(got.map((d) => d.rawBody)).size, 1, 'the same body every time');
    for (const d of got) assert.equal(verifySpec(d, cfg.secret), true);
    const row = await deliveryRow(p.keyId, sent.body.eventId, 'delivered');
    assert.equal(row.attempts, got.length);
    assert.equal(row.lastStatusCode, 200);
  });

  test('a delivery in flight is never sent again meanwhile, however many deliveries of its endpoint follow', async () => {
    const p = await svc.newPartner();
    await svc.admin('PUT', `/api-keys/${p.keyId}/webhook`, { url: hookPath('once'), events: ['wallet.created'] });
    receiver.setMode({ kind: 'delay', ms: 600 });
    let first: string;
    try {
      first = (await svc.admin('POST', `/api-keys/${p.keyId}/webhook/test`)).body.eventId;
      await waitOn('once', 1, 'the slow first delivery to arrive');
      // Each of these commits wakes the endpoint's runner while the first is still waiting for its answer.
      for (let i = 0; i < 20; i += 1) await svc.admin('POST', `/api-keys/${p.keyId}/webhook/test`);
    } finally {
      receiver.setMode({ kind: 'ok' });
    }
    await waitOn('once', 21, 'all 21 deliveries');
    await deliveryRow(p.keyId, first, 'delivered');
    await new Promise((r) => setTimeout(r, 300));
    const ids = receivedOn('once').map((d) => d.id);
    // An event reaches the receiver once per attempt the service made of it: a second copy only after the first
    // attempt ended (timed out at WEBHOOK_TIMEOUT_MS on a loaded machine, at-least-once), never a copy sent while an
    // attempt is in flight. Twenty wake-ups sending the in-flight delivery again would show as copies over attempts.
    const received = new Map<string, number>();
    for (const id of ids) received.set(id, (received.get(id) ?? 0) + 1);
    assert.equal(received.size, 21, 'every event arrived');
    for (const [id, copies] of received) {
      const row = await deliveryRow(p.keyId, id, 'delivered');
      assert.ok(copies <= row.attempts, `event ${id}: ${copies} copies received for ${row.attempts} attempts`);
    }
  });

  test('after a rotation every delivery carries two signatures, one per active secret, both valid', async () => {
    const p = await svc.newPartner();
    const { body: cfg } = await svc.admin('PUT', `/api-keys/${p.keyId}/webhook`, {
      url: hookPath('rotation'),
      events: ['wallet.created'],
    });
    const rotated = await svc.admin('POST', `/api-keys/${p.keyId}/webhook/rotate-secret`);
    assert.equal(rotated.status, 200);
    assert.match(rotated.body.secret, /^whsec_/);
    assert.notEqual(rotated.body.secret, cfg.secret);
    const expires = Date.parse(rotated.body.previousSecretExpiresAt) - Date.now();
    assert.ok(expires > 23.9 * 3600_000 && expires <= 24 * 3600_000, `previous secret valid for ${expires} ms`);
    await svc.admin('POST', `/api-keys/${p.keyId}/webhook/test`);
    const [d] = await waitOn('rotation', 1, 'a delivery after rotation');
    assert.equal(d!.signature.split(' ').length, 2);
    assert.equal(verifySpec(d!, rotated.body.secret), true);
    assert.equal(verifySpec(d!, cfg.secret), true);
    const [first, second] = d!.signature.split(' ');
    assert.equal(verifySpec({ ...d!, signature: first! }, rotated.body.secret), true, 'the current secret signs first');
    assert.equal(verifySpec({ ...d!, signature: second! }, cfg.secret), true);
    assert.equal((await svc.admin('GET', `/api-keys/${p.keyId}/webhook`)).body.previousSecretExpiresAt !== null, true);
  });

  test("a receiver that never answers on one key does not delay another key's deliveries", async () => {
    const slowReceiver = await startWebhookReceiver({ mode: { kind: 'hang' } });
    try {
      // The service trusts the shared receiver's CA; the slow one uses the same committed certificate.
      const slow = await svc.newPartner();
      const fast = await svc.newPartner();
      await svc.admin('PUT', `/api-keys/${slow.keyId}/webhook`, { url: slowReceiver.url, events: ['wallet.created'] });
      await svc.admin('PUT', `/api-keys/${fast.keyId}/webhook`, { url: hookPath('fast'), events: ['wallet.created'] });
      for (let i = 0; i < 40; i += 1) await svc.admin('POST', `/api-keys/${slow.keyId}/webhook/test`);
      await slowReceiver.waitFor((r) => r.length >= 1, 'the slow receiver to be reached');
      const started = Date.now();
      await svc.admin('POST', `/api-keys/${fast.keyId}/webhook/test`);
      await waitOn('fast', 1, "the fast key's ping", 5_000);
      const took = Date.now() - started;
      assert.ok(took < 900, `the fast key's ping took ${took} ms while the slow key had 40 hanging (timeout 1000 ms)`);
    } finally {
      await slowReceiver.close();
    }
  });

  test('a delivery that fails its last attempt is dead; the operator sees it and redelivers it', async () => {
    const p = await svc.newPartner();
    await svc.admin('PUT', `/api-keys/${p.keyId}/webhook`, { url: hookPath('dead'), events: ['wallet.created'] });
    receiver.setMode({ kind: 'error', status: 500 });
    let eventId: string;
    try {
      eventId = (await svc.admin('POST', `/api-keys/${p.keyId}/webhook/test`)).body.eventId;
      await waitOn('dead', 1, 'the first attempt');
      // Disabled, the endpoint gets no attempts; its delivery is set back as if seven attempts had failed over the
      // last day, so that the next failure is its last one.
      await svc.admin('PUT', `/api-keys/${p.keyId}/webhook`, { url: hookPath('dead'), enabled: false });
      await new Promise((r) => setTimeout(r, 300));
      const db = new Database(path.join(svc.dataDir, 'service.db'));
      try {
        db.pragma('busy_timeout = 5000');
        db.prepare('update webhook_deliveries set attempts = 7, next_attempt_at = 0 where event_id = ?').run(eventId);
      } finally {
        db.close();
      }
      await svc.admin('PUT', `/api-keys/${p.keyId}/webhook`, { url: hookPath('dead'), enabled: true });
      const row = await deliveryRow(p.keyId, eventId, 'dead');
      assert.equal(row.attempts, 8);
      assert.equal(row.lastStatusCode, 500);
      assert.match(row.lastError, /answered 500/);
      assert.equal(row.nextAttemptAt, null);
      assert.equal((await svc.admin('GET', `/api-keys/${p.keyId}/webhook`)).body.deliveries.dead, 1);
    } finally {
      receiver.setMode({ kind: 'ok' });
    }
    const before = receivedOn('dead').length;
    const again = await svc.admin('POST', `/api-keys/${p.keyId}/webhook/redeliver-dead`);
    assert.equal(again.status, 202);
    assert.equal(again.body.redelivered, 1);
    const got = await waitOn('dead', before + 1, 'the redelivered event');
    assert.equal(got.at(-1)!.id, eventId);
    const missing = await svc.admin('POST', `/api-keys/${p.keyId}/webhook/deliveries/evt_nope/redeliver`);
    assert.equal(missing.status, 404);
    assert.equal(missing.body.code, 'DELIVERY_NOT_FOUND');
  });
});
