/**
 * The public OpenAPI document's `webhooks` (OpenAPI 3.1): one POST per event this service sends, its body the event's
 * named schema (api/schemas/events.ts), the signature headers, how to verify them, and the answer expected. The
 * schemas go into the document's components beside the routes' (@fastify/swagger resolves their references), so a
 * generated client names every event.
 */
import type { TSchema } from '@sinclair/typebox';
import { EVENT_DOCUMENTS, WebhookEvent } from './schemas/events.ts';
import { PREVIOUS_SECRET_VALID_MS } from './services/webhooks.ts';

/** Spec: Events, "Verification"; api/webhooks/sign-delivery.ts signs it. */
const TOLERANCE_SECONDS = 300;

const DELIVERY = `**Delivery.** A POST of the JSON envelope \`{id, type, createdAt, data}\` (\`WebhookEvent\`) to the HTTPS endpoint configured for the API key (operator API: PUT /admin/v1/api-keys/{keyId}/webhook), for the event types it selected. Delivery is at least once: deduplicate with \`webhook-id\`. Answer 2xx quickly; any other answer, or none in time, is retried later with backoff.

**Verifying it** (\`signatureFormat: timestamp-body\`, the default): the signed message is \`<webhook-timestamp>.<raw body>\`, the body bytes as received (not re-serialized JSON). Compute HMAC-SHA256 of it with the endpoint's secret (the whole \`whsec_…\` string is the key), base64-encode it, and compare it in constant time with each space-separated entry of \`webhook-signature\` after its \`v1,\` prefix: one match is enough (after a secret rotation the previous secret signs too, for ${PREVIOUS_SECRET_VALID_MS / 3_600_000} hours). Reject a \`webhook-timestamp\` more than ${TOLERANCE_SECONDS} seconds old. With \`signatureFormat: standard-webhooks\` the signed message is \`<webhook-id>.<webhook-timestamp>.<raw body>\` and the key is the bytes the base64 after \`whsec_\` encodes, as the Standard Webhooks libraries verify it.`;

const HEADERS = [
  {
    in: 'header',
    name: 'webhook-id',
    required: true,
    description:
      "The event id (`evt_<uuid>`), equal to the body's `id` and the same on every retry: deduplicate with it.",
    schema: { type: 'string' },
  },
  {
    in: 'header',
    name: 'webhook-timestamp',
    required: true,
    description: `Unix seconds when this attempt was sent (each retry has its own); part of the signed message. Reject one more than ${TOLERANCE_SECONDS} seconds old.`,
    schema: { type: 'string', pattern: '^[0-9]+$' },
  },
  {
    in: 'header',
    name: 'webhook-signature',
    required: true,
    description:
      '`v1,<base64 HMAC-SHA256>` of the signed message, one per active secret, space-separated (two after a secret rotation).',
    schema: { type: 'string', pattern: '^v1,[A-Za-z0-9+/]+={0,2}( v1,[A-Za-z0-9+/]+={0,2})*$' },
  },
];

/** `wallet.pregen_claimed` → `walletPregenClaimed`. */
function camel(type: string): string {
  return type.replace(/[._]([a-z])/g, (_m, c: string) => c.toUpperCase());
}

/** The tag of the webhook operations in the public document. */
export const EVENTS_TAG = {
  name: 'events',
  description: "Webhooks: what the service POSTs to the partner's HTTPS endpoint, and how to verify it.",
};

/** The `webhooks` section of the public document, and the component schemas it refers to. */
export function webhooksSection(): { webhooks: Record<string, unknown>; schemas: Record<string, TSchema> } {
  const webhooks: Record<string, unknown> = {};
  const schemas: Record<string, TSchema> = { [WebhookEvent.$id!]: WebhookEvent };
  for (const { type, meaning, data, event } of EVENT_DOCUMENTS) {
    schemas[data.$id!] = data;
    schemas[event.$id!] = event;
    webhooks[type] = {
      post: {
        operationId: `${camel(type)}Event`,
        summary: `Event \`${type}\``,
        description: `${meaning}\n\n${DELIVERY}`,
        tags: [EVENTS_TAG.name],
        parameters: HEADERS,
        requestBody: {
          required: true,
          description: `The \`${type}\` event.`,
          content: { 'application/json': { schema: { $ref: `#/components/schemas/${event.$id}` } } },
        },
        responses: {
          '2XX': { description: 'Received. The body of the answer is not read.' },
          default: {
            description:
              'Not received (also no answer in time): the delivery is tried again later with backoff, a limited number of times.',
          },
        },
      },
    };
  }
  return { webhooks, schemas };
}
