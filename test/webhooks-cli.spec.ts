/**
 * The operator CLI's webhook verbs, run as a person would (`node --import tsx bin/admin.ts …`) against a real
 * service and a real HTTPS receiver: the secret printed once and only then, a test.ping delivered and listed,
 * redelivered with the same webhook-id, the endpoint switched off and on, deleted, and the error after that.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { type ReceivedDelivery, startWebhookReceiver, type WebhookReceiver } from '../fixtures/webhook-receiver.ts';
import { nodeArgs } from './helpers/entry.ts';
import { type Partner, ROOT, startTestService, type TestService } from './helpers/service.ts';
import { verifySpecSignature } from './helpers/webhook-verify.ts';

const run = promisify(execFile);

const signedWith = (d: ReceivedDelivery, secret: string) => verifySpecSignature(d, secret);

describe('the CLI webhook verbs', () => {
  let svc: TestService;
  let receiver: WebhookReceiver;
  let partner: Partner;

  before(async () => {
    receiver = await startWebhookReceiver();
    svc = await startTestService(
      { WEBHOOK_ALLOW_PRIVATE_TARGETS: '1' },
      { api: { webhooks: { extraCa: receiver.caPem } } },
    );
    partner = await svc.newPartner();
  });
  after(async () => {
    await svc?.stop();
    await receiver?.close();
  });

  const cli = async (...args: string[]): Promise<string> =>
    (
      await run(process.execPath, nodeArgs('bin/admin', ...args, '--url', svc.adminUrl), {
        cwd: ROOT,
        env: { ...process.env, ADMIN_TOKEN: svc.adminToken },
      })
    ).stdout;

  test('set-webhook with every spec type prints one warning per type never sent; with sent types only, none', async () => {
    const p = await svc.newPartner();
    const all = [
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
    const set = await cli('set-webhook', p.keyId, receiver.url, '--events', all.join(','));
    assert.match(set, new RegExp(`^events\\s+${all.join(', ').replaceAll('.', '\\.')}$`, 'm'));
    const warnings = set.split('\n').filter((l) => l.startsWith('warning'));
    assert.deepEqual(
      warnings.map(
        (l) => /^warning\s+(\S+) is accepted but this service never sends it: .*no user system/.exec(l)?.[1],
      ),
      ['user.created', 'user.external_wallet_verified'],
      set,
    );
    assert.match(set, /^secret\s+whsec_/m, 'the configuration was created');
    assert.equal((await cli('show-webhook', p.keyId)).split('\n').filter((l) => l.startsWith('warning')).length, 2);
    const json = JSON.parse(await cli('set-webhook', p.keyId, receiver.url, '--events', all.join(','), '--json'));
    assert.deepEqual(
      json.warnings.map((w: { event: string }) => w.event),
      ['user.created', 'user.external_wallet_verified'],
    );

    const sent = await cli('set-webhook', p.keyId, receiver.url, '--events', 'wallet.created,test.ping');
    assert.doesNotMatch(sent, /^warning/m, sent);
    await assert.rejects(
      cli('set-webhook', p.keyId, receiver.url, '--events', 'wallet.created,user.deleted'),
      (err: { code: number; stderr: string }) => {
        assert.equal(err.code, 1);
        assert.match(err.stderr, /400 INVALID_REQUEST: unknown event type "user\.deleted"; allowed: .*user\.created/);
        return true;
      },
    );
  });

  test('set, show, test, list, redeliver, disable, delete', async () => {
    const key = partner.keyId;
    const set = await cli('set-webhook', key, receiver.url, '--events', 'wallet.created, send.confirmed');
    const secret = /^secret\s+(whsec_\S+)$/m.exec(set)?.[1];
    assert.ok(secret, set);
    assert.match(set, /shown once/);
    assert.match(set, new RegExp(`^url\\s+${receiver.url}$`, 'm'));
    assert.match(set, /^events\s+wallet\.created, send\.confirmed$/m);
    assert.match(set, /^format\s+timestamp-body$/m);

    const shown = await cli('show-webhook', key);
    assert.match(shown, /^enabled\s+yes$/m);
    assert.match(shown, /^deliveries\s+0 pending, 0 delivered, 0 dead$/m);
    assert.equal(shown.includes(secret), false, shown);
    assert.doesNotMatch(shown, /whsec_/);
    const again = await cli('set-webhook', key, receiver.url, '--events', 'wallet.created');
    assert.doesNotMatch(again, /whsec_/, 'the secret is printed only when the endpoint is created');

    const queued = await cli('test-webhook', key);
    const eventId = /event (evt_\S+);/.exec(queued)?.[1];
    assert.ok(eventId, queued);
    await receiver.waitFor((all) => all.some((d) => d.id === eventId), 'the test.ping');
    const ping = receiver.received.find((d) => d.id === eventId)!;
    assert.equal(JSON.parse(ping.rawBody).type, 'test.ping');
    assert.ok(signedWith(ping, secret), 'the printed secret is the one that signs');

    // The outcome is written just after the receiver's answer.
    for (const until = Date.now() + 5_000; ; ) {
      const r = await svc.admin('GET', `/api-keys/${key}/webhook/deliveries?status=delivered`);
      if (r.body.data.some((d: { eventId: string }) => d.eventId === eventId)) break;
      assert.ok(Date.now() < until, `not delivered: ${JSON.stringify(r.body)}`);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    const listed = await cli('list-deliveries', key, '--status', 'delivered', '--limit', '5');
    assert.match(listed, /^EVENT\s+TYPE\s+STATUS\s+ATTEMPTS/);
    assert.match(listed, new RegExp(`^${eventId}\\s+test\\.ping\\s+delivered\\s+1\\s+200\\s+\\d+ ms\\s`, 'm'));
    assert.equal(await cli('list-deliveries', key, '--status', 'dead'), 'no deliveries\n');

    assert.match(await cli('redeliver', key, eventId), /^1 delivery queued again/);
    await receiver.waitFor((all) => all.filter((d) => d.id === eventId).length === 2, 'the redelivery');
    const [first, second] = receiver.received.filter((d) => d.id === eventId);
    assert.equal(second!.rawBody, first!.rawBody, 'same webhook-id, same body');
    assert.match(await cli('redeliver-dead', key), /^0 deliveries queued again/);

    const rotated = await cli('rotate-webhook-secret', key);
    const next = /^secret\s+(whsec_\S+)$/m.exec(rotated)?.[1];
    assert.ok(next && next !== secret, rotated);
    assert.match(rotated, /old secret until \d{4}-/);

    // Off keeps the endpoint and its events; set-webhook without --disabled turns it back on.
    const off = await cli('set-webhook', key, receiver.url, '--disabled');
    assert.match(off, /^enabled\s+no/m);
    assert.match(off, /^events\s+wallet\.created$/m);
    await assert.rejects(cli('test-webhook', key), (err: { code: number; stderr: string }) => {
      assert.equal(err.code, 1);
      assert.match(err.stderr, /409 WEBHOOK_DISABLED/);
      return true;
    });
    assert.match(await cli('set-webhook', key, receiver.url), /^enabled\s+yes$/m);

    assert.match(await cli('delete-webhook', key), new RegExp(`webhook of api key ${key} deleted`));
    await assert.rejects(cli('show-webhook', key), (err: { code: number; stderr: string }) => {
      assert.equal(err.code, 1);
      assert.match(err.stderr, /404 WEBHOOK_NOT_CONFIGURED: this API key has no webhook endpoint/);
      return true;
    });
    await assert.rejects(cli('set-webhook', key, receiver.url), (err: { stderr: string }) =>
      /400 INVALID_REQUEST: events is required when the endpoint is created/.test(err.stderr),
    );
  });
});
