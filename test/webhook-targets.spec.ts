import assert from 'node:assert/strict';
import type { LookupAddress } from 'node:dns';
import { after, before, test } from 'node:test';
import { startWebhookReceiver, type WebhookReceiver } from '../fixtures/webhook-receiver.ts';
import { startTestService, type TestService } from './helpers/service.ts';

/** What the service's resolver answers, per name; the test changes it to play a rebinding DNS server. */
const dnsAnswers = new Map<string, string[]>();
const resolveAll = async (hostname: string): Promise<LookupAddress[]> => {
  const answers = dnsAnswers.get(hostname);
  if (!answers) throw Object.assign(new Error(`no such name ${hostname}`), { code: 'ENOTFOUND' });
  return answers.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
};

let svc: TestService;
let receiver: WebhookReceiver;
let keyId: string;

before(async () => {
  receiver = await startWebhookReceiver();
  // WEBHOOK_ALLOW_PRIVATE_TARGETS is off: the default.
  svc = await startTestService(
    { WEBHOOK_RETRY_BASE_MS: '60000' },
    { api: { webhooks: { extraCa: receiver.caPem, resolveAll } } },
  );
  keyId = (await svc.newPartner()).keyId;
});

after(async () => {
  await svc.stop();
  await receiver.close();
});

const put = (url: string) => svc.admin('PUT', `/api-keys/${keyId}/webhook`, { url, events: ['wallet.created'] });

test('webhook URLs that are or resolve to loopback, private, link-local or metadata addresses are refused', async () => {
  dnsAnswers.set('localhost', ['127.0.0.1', '::1']);
  dnsAnswers.set('intranet.example', ['10.1.2.3']);
  dnsAnswers.set('mixed.example', ['93.184.216.34', '192.168.1.10']);
  dnsAnswers.set('metadata.example', ['169.254.169.254']);
  for (const url of [
    `https://127.0.0.1:${receiver.port}/hook`,
    'https://localhost/hook',
    'https://[::1]/hook',
    'https://[::ffff:127.0.0.1]/hook',
    'https://10.0.0.1/hook',
    'https://172.16.5.4/hook',
    'https://192.168.0.1/hook',
    'https://169.254.169.254/latest/meta-data',
    'https://100.64.0.1/hook',
    'https://[fd00::1]/hook',
    'https://[fe80::1]/hook',
    'https://0.0.0.0/hook',
    'https://intranet.example/hook',
    'https://mixed.example/hook',
    'https://metadata.example/hook',
    'https://nowhere.example/hook',
  ]) {
    const r = await put(url);
    assert.equal(r.status, 400, `${url} → ${r.status} ${JSON.stringify(r.body)}`);
    assert.equal(r.body.code, 'WEBHOOK_TARGET_NOT_ALLOWED', url);
    assert.match(r.body.message, /public|resolve/, url);
  }
  dnsAnswers.set('partner.example', ['93.184.216.34']);
  assert.equal(
    (await put('https://partner.example/hook')).status,
    200,
    'a name with public addresses only is accepted',
  );
  assert.equal((await put('https://93.184.216.34/hook')).status, 200);
});

test('a name that resolved to a public address and later to a private one is refused at delivery time', async () => {
  dnsAnswers.set('rebind.example', ['93.184.216.34']);
  const cfg = await put(`https://rebind.example:${receiver.port}/hook`);
  assert.equal(cfg.status, 200, JSON.stringify(cfg.body));
  // The name now points at the receiver on loopback: the delivery must not reach it.
  dnsAnswers.set('rebind.example', ['127.0.0.1']);
  const { body } = await svc.admin('POST', `/api-keys/${keyId}/webhook/test`);
  const until = Date.now() + 10_000;
  let row: any;
  while (Date.now() < until) {
    const list = await svc.admin('GET', `/api-keys/${keyId}/webhook/deliveries?status=pending`);
    row = list.body.data.find(
      (d: { eventId: string; attempts: number }) => d.eventId === body.eventId && d.attempts > 0,
    );
    if (row) break;
    await new Promise((r) => setTimeout(r, 25));
  }
  assert.ok(row, 'the attempt was made and failed');
  assert.match(row.lastError, /127\.0\.0\.1.*not a public address/);
  assert.equal(row.lastStatusCode, null);
  assert.equal(receiver.received.length, 0, 'the receiver on loopback got nothing');
});
