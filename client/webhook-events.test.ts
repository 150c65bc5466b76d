/**
 * The generated types describe every webhook event the service sends: a delivery's body narrows by `type` to that
 * event's `data`. `npm run typecheck` fails once an event the service does not send is accepted (the `@ts-expect-error`
 * line) or a field loses its type (the typed assignments); at run time, the committed document lists exactly the events
 * the service sends.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { EVENT_TYPES, UNSENT_EVENT_TYPES } from '../chains/domain/events.ts';
import type { CustodyWebhookEvent } from './src/index.ts';

const here = path.dirname(fileURLToPath(import.meta.url));
const doc = JSON.parse(fs.readFileSync(path.join(here, 'openapi.json'), 'utf8')) as {
  webhooks: Record<string, { post: { requestBody: { content: Record<string, { schema: { $ref: string } }> } } }>;
};

/** What a receiver does with a verified body: only sent events are cases, and each has its own typed fields. */
function describe(event: CustodyWebhookEvent): string {
  switch (event.type) {
    case 'send.failed': {
      const failedAt: string = event.data.failedAt;
      const txHash: string | null = event.data.txHash;
      return `${event.data.walletId} ${txHash ?? 'unsigned'} failed at ${failedAt}`;
    }
    case 'rest.transaction.confirmed': {
      const blockNumber: string = event.data.blockNumber;
      return `${event.data.transactionId} in block ${blockNumber}`;
    }
    // @ts-expect-error: the service never sends user.created
    case 'user.created':
      return 'impossible';
    case 'test.ping': {
      const apiKeyId: string = event.data.apiKeyId;
      return `ping ${apiKeyId}`;
    }
    default:
      return event.type;
  }
}

test('a delivery body narrows by type: send.failed has its fields, a ping is a ping', () => {
  const failed = JSON.parse(
    '{"id":"evt_1","type":"send.failed","createdAt":"2030-01-01T00:00:00.000Z","data":{"userId":"u","walletId":"w1","txHash":null,"type":"EVM","evmChainId":"1","isDevnet":false,"failedAt":"2030-01-01T00:00:01.000Z"}}',
  ) as CustodyWebhookEvent;
  assert.equal(describe(failed), 'w1 unsigned failed at 2030-01-01T00:00:01.000Z');
});

test('the committed document has a webhook with a named payload for each event sent, none for the others', () => {
  assert.deepEqual(Object.keys(doc.webhooks).sort(), [...EVENT_TYPES].sort());
  for (const type of EVENT_TYPES) {
    assert.match(
      doc.webhooks[type]!.post.requestBody.content['application/json']!.schema.$ref,
      /^#\/components\/schemas\/\w+Event$/,
    );
  }
  for (const type of UNSENT_EVENT_TYPES) assert.equal(doc.webhooks[type], undefined);
});
