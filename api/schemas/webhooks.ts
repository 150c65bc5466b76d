import { Type } from '@sinclair/typebox';
import { EVENT_TYPES, SIGNATURE_FORMATS, UNSENT_EVENT_TYPES } from '../../chains/domain/events.ts';
import { LIMIT_PATTERN, Paginated, StringEnum } from './common.ts';

const SignatureFormatSchema = StringEnum(SIGNATURE_FORMATS, {
  description:
    '`timestamp-body` (the default, the spec\'s): the signed message is "<webhook-timestamp>.<raw body>", the key the secret as given. `standard-webhooks`: "<webhook-id>.<webhook-timestamp>.<raw body>", the key the base64 after `whsec_`, so the Standard Webhooks libraries verify it.',
});

export const PutWebhookBody = Type.Object(
  {
    url: Type.String({ minLength: 1, maxLength: 2048, description: 'HTTPS only.' }),
    events: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 64 }), {
        maxItems: 32,
        description: `Event types to deliver; at least one while enabled; required at creation, unchanged when left out later. Sent: ${EVENT_TYPES.join(', ')}. Accepted and stored but never sent (answered with a warning): ${UNSENT_EVENT_TYPES.join(', ')}. Any other type is a 400.`,
      }),
    ),
    enabled: Type.Optional(Type.Boolean({ description: 'Default true at creation; unchanged when left out later.' })),
    signatureFormat: Type.Optional(SignatureFormatSchema),
  },
  { additionalProperties: false },
);

const DeliveryCounts = Type.Object({ pending: Type.Integer(), delivered: Type.Integer(), dead: Type.Integer() });

export const EventWarning = Type.Object(
  {
    code: Type.Literal('EVENT_NEVER_SENT'),
    event: StringEnum(UNSENT_EVENT_TYPES, { description: 'The selected event type.' }),
    message: Type.String({ description: 'Why this service never sends it.' }),
  },
  { description: 'A selected event type that is stored but never sent.' },
);

export const WebhookEndpoint = Type.Object(
  {
    apiKeyId: Type.String(),
    url: Type.String(),
    events: Type.Array(Type.String(), { description: 'The selection as stored (as given, without duplicates).' }),
    warnings: Type.Array(EventWarning, {
      description:
        'One entry per selected event type this service never sends (user.created, user.external_wallet_verified: it has no user system); always present, empty when every selected type is sent.',
    }),
    enabled: Type.Boolean(),
    signatureFormat: SignatureFormatSchema,
    secret: Type.Optional(Type.String({ description: 'Only in the answer that created the endpoint.' })),
    previousSecretExpiresAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
      description: 'Until then, deliveries carry a second signature made with the secret before the last rotation.',
    }),
    state: StringEnum(['healthy', 'failing'], {
      description: '`failing`: a run of attempts failed; the endpoint is probed one delivery at a time.',
    }),
    consecutiveFailures: Type.Integer(),
    nextProbeAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    deliveries: DeliveryCounts,
    createdAt: Type.String(),
    updatedAt: Type.String(),
  },
  { $id: 'WebhookEndpoint' },
);

/** The endpoint as read back: the same fields without any secret (the serializer writes only what is listed). */
export const WebhookView = Type.Omit(WebhookEndpoint, ['secret'], { $id: 'WebhookView' });

export const RotatedWebhookSecret = Type.Object(
  {
    secret: Type.String({ description: 'Shown once.' }),
    previousSecretExpiresAt: Type.String({ format: 'date-time' }),
  },
  { $id: 'RotatedWebhookSecret' },
);

export const WebhookTestAccepted = Type.Object({ eventId: Type.String() }, { $id: 'WebhookTestAccepted' });

export const DeliveryStatusSchema = StringEnum(['pending', 'delivered', 'dead']);

export const Delivery = Type.Object(
  {
    eventId: Type.String(),
    type: Type.Union([Type.String(), Type.Null()], { description: 'Null once the event is past retention.' }),
    status: DeliveryStatusSchema,
    attempts: Type.Integer(),
    nextAttemptAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    lastAttemptAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    lastStatusCode: Type.Union([Type.Integer(), Type.Null()]),
    lastLatencyMs: Type.Union([Type.Integer(), Type.Null()]),
    lastError: Type.Union([Type.String(), Type.Null()]),
    createdAt: Type.String({ format: 'date-time' }),
    finishedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  },
  { $id: 'Delivery' },
);

export const DeliveryList = Paginated(Delivery, 'DeliveryList');

export const ListDeliveriesQuery = Type.Object(
  {
    status: Type.Optional(DeliveryStatusSchema),
    cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    limit: Type.Optional(Type.String({ pattern: LIMIT_PATTERN, description: 'Page size 1-100; default 20.' })),
  },
  { additionalProperties: false },
);

export const DeliveryParams = Type.Object({
  keyId: Type.String({ minLength: 1, maxLength: 128 }),
  eventId: Type.String({ minLength: 1, maxLength: 128 }),
});

export const Redelivered = Type.Object({ redelivered: Type.Integer() }, { $id: 'Redelivered' });
