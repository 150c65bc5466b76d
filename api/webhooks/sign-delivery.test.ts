import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { envelopeBody, newWebhookSecret, signDelivery } from './sign-delivery.ts';

test('standard-webhooks: the published example signature (standard-webhooks specification)', () => {
  const sig = signDelivery('standard-webhooks', ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'], {
    id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
    timestamp: 1614265330,
    body: '{"test": 2432232314}',
  });
  assert.equal(sig, 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=');
});

test('timestamp-body: HMAC-SHA256 keyed with the secret as given, over "<timestamp>.<body>"', () => {
  const secret = newWebhookSecret();
  const body = '{"a":1}';
  const expected = createHmac('sha256', secret).update(`1700000000.${body}`).digest('base64');
  assert.equal(
    signDelivery('timestamp-body', [secret], { id: 'evt_x', timestamp: 1700000000, body }),
    `v1,${expected}`,
  );
});

test('one signature per secret, space-delimited, each verifiable by the library', () => {
  const a = newWebhookSecret();
  const b = newWebhookSecret();
  const body = envelopeBody({ id: 'evt_1', type: 'test.ping', createdAt: '2026-01-01T00:00:00.000Z', data: '{}' });
  const timestamp = Math.floor(Date.now() / 1000);
  const header = signDelivery('standard-webhooks', [a, b], { id: 'evt_1', timestamp, body });
  assert.equal(header.split(' ').length, 2);
  const headers = { 'webhook-id': 'evt_1', 'webhook-timestamp': String(timestamp), 'webhook-signature': header };
  for (const s of [a, b]) assert.deepEqual(new Webhook(s).verify(body, headers), JSON.parse(body));
  assert.throws(() => new Webhook(newWebhookSecret()).verify(body, headers));
});

test('the envelope keeps the stored data text byte for byte', () => {
  const data = '{"z":1,"a":"é\\u0000","n":1.50}';
  const body = envelopeBody({ id: 'evt_1', type: 'wallet.created', createdAt: 'c', data });
  assert.equal(body, `{"id":"evt_1","type":"wallet.created","createdAt":"c","data":${data}}`);
  assert.deepEqual(Object.keys(JSON.parse(body)), ['id', 'type', 'createdAt', 'data']);
});
