import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { KeyIdParams } from '../../schemas/admin.ts';
import { ok } from '../../schemas/common.ts';
import { adminErrors } from '../../schemas/errors.ts';
import {
  DeliveryList,
  DeliveryParams,
  ListDeliveriesQuery,
  PutWebhookBody,
  Redelivered,
  RotatedWebhookSecret,
  WebhookEndpoint,
  WebhookTestAccepted,
  WebhookView,
} from '../../schemas/webhooks.ts';
import type { WebhookService } from '../../services/webhooks.ts';

const common = { tags: ['admin', 'webhooks'], security: [{ adminToken: [] }] };

/** `/admin/v1/api-keys/{keyId}/webhook`: one endpoint per API key, its secret, and the log of its deliveries. */
export const webhookAdminRoutes: FastifyPluginAsyncTypebox<{ webhooks: WebhookService }> = async (
  app,
  { webhooks },
) => {
  app.put(
    '/api-keys/:keyId/webhook',
    {
      schema: {
        ...common,
        operationId: 'setWebhook',
        summary: "Create or replace an API key's webhook endpoint",
        description:
          'HTTPS only; at least one event type while enabled. Every event type of the spec is accepted and stored as given; `user.created` and `user.external_wallet_verified`, which this service never sends (it has no user system), are each named in `warnings` (`{code: EVENT_NEVER_SENT, event, message}`); any other type answers 400 naming `body.events` and the allowed types. The `whsec_` secret is in the answer only when this call created the endpoint. `enabled: false` keeps the configuration and stops deliveries. Targets that resolve to loopback, private, link-local or metadata addresses answer 400 WEBHOOK_TARGET_NOT_ALLOWED unless WEBHOOK_ALLOW_PRIVATE_TARGETS is on.',
        params: KeyIdParams,
        body: PutWebhookBody,
        response: {
          200: ok(
            WebhookEndpoint,
            'The endpoint as stored; `secret` only when this call created it; `warnings` names selected types that are never sent.',
          ),
          ...adminErrors('API_KEY_NOT_FOUND', 'WEBHOOK_TARGET_NOT_ALLOWED'),
        },
      },
    },
    async (req, reply) =>
      reply.header('cache-control', 'no-store').send(await webhooks.put(req.params.keyId, req.body)),
  );

  app.get(
    '/api-keys/:keyId/webhook',
    {
      schema: {
        ...common,
        operationId: 'getWebhook',
        summary: "Read an API key's webhook endpoint (never its secret), its state and delivery counts",
        description:
          'The endpoint of the key: URL, events, switch and signature format; `healthy` or `failing` with the next probe; counts of pending, delivered and dead deliveries. Never the secret.',
        params: KeyIdParams,
        response: {
          200: ok(WebhookView, 'The endpoint (never its secret).'),
          ...adminErrors('API_KEY_NOT_FOUND', 'WEBHOOK_NOT_CONFIGURED'),
        },
      },
    },
    async (req) => webhooks.get(req.params.keyId),
  );

  app.delete(
    '/api-keys/:keyId/webhook',
    {
      schema: {
        ...common,
        operationId: 'deleteWebhook',
        summary: 'Delete the endpoint: URL, events, secrets and its deliveries',
        description:
          'Removes the URL, the events, the secrets and the delivery log of the endpoint; deliveries under way finish.',
        params: KeyIdParams,
        response: { 204: ok(Type.Null(), 'Deleted.'), ...adminErrors('API_KEY_NOT_FOUND', 'WEBHOOK_NOT_CONFIGURED') },
      },
    },
    async (req, reply) => {
      await webhooks.delete(req.params.keyId);
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/api-keys/:keyId/webhook/rotate-secret',
    {
      schema: {
        ...common,
        operationId: 'rotateWebhookSecret',
        summary: 'Rotate the signing secret; the previous one signs too for 24 hours',
        description:
          'A new `whsec_` secret, shown in this answer only. The previous secret keeps signing deliveries, as a second signature, for 24 hours.',
        params: KeyIdParams,
        response: {
          200: ok(RotatedWebhookSecret, 'The new secret and when the previous one stops signing.'),
          ...adminErrors('API_KEY_NOT_FOUND', 'WEBHOOK_NOT_CONFIGURED'),
        },
      },
    },
    async (req, reply) => reply.header('cache-control', 'no-store').send(await webhooks.rotateSecret(req.params.keyId)),
  );

  app.post(
    '/api-keys/:keyId/webhook/test',
    {
      schema: {
        ...common,
        operationId: 'testWebhook',
        summary: 'Queue a test.ping to the endpoint',
        description:
          'Queues a `test.ping` event for the endpoint, whatever events it selected, and answers its event id; it is delivered like any event.',
        params: KeyIdParams,
        response: {
          202: ok(WebhookTestAccepted, 'Queued: the event id.'),
          ...adminErrors('API_KEY_NOT_FOUND', 'WEBHOOK_NOT_CONFIGURED', 'WEBHOOK_DISABLED'),
        },
      },
    },
    async (req, reply) => reply.code(202).send(await webhooks.test(req.params.keyId)),
  );

  app.get(
    '/api-keys/:keyId/webhook/deliveries',
    {
      schema: {
        ...common,
        operationId: 'listWebhookDeliveries',
        summary: "The endpoint's deliveries, newest first: status, attempts, last answer and latency, next attempt",
        description:
          "The delivery log of the endpoint, newest first, filtered by status: event id and type, status, attempts, the last answer's status code, latency and error, the next attempt.",
        params: KeyIdParams,
        querystring: ListDeliveriesQuery,
        response: {
          200: ok(DeliveryList, 'A page of deliveries.'),
          ...adminErrors('API_KEY_NOT_FOUND', 'WEBHOOK_NOT_CONFIGURED', 'INVALID_CURSOR'),
        },
      },
    },
    async (req) => {
      const { limit, ...rest } = req.query;
      return webhooks.deliveries(req.params.keyId, { ...rest, ...(limit ? { limit: Number(limit) } : {}) });
    },
  );

  app.post(
    '/api-keys/:keyId/webhook/deliveries/:eventId/redeliver',
    {
      schema: {
        ...common,
        operationId: 'redeliverWebhookEvent',
        summary: 'Deliver one event again, from its first attempt (same webhook-id and body)',
        description:
          'Queues the event for the endpoint again from its first attempt, with the same webhook-id and body; a failing endpoint is tried at once.',
        params: DeliveryParams,
        response: {
          202: ok(Redelivered, 'Queued again.'),
          ...adminErrors('API_KEY_NOT_FOUND', 'WEBHOOK_NOT_CONFIGURED', 'DELIVERY_NOT_FOUND'),
        },
      },
    },
    async (req, reply) => reply.code(202).send(await webhooks.redeliver(req.params.keyId, req.params.eventId)),
  );

  app.post(
    '/api-keys/:keyId/webhook/redeliver-dead',
    {
      schema: {
        ...common,
        operationId: 'redeliverDeadWebhookEvents',
        summary: 'Deliver every dead delivery of the endpoint again, from its first attempt',
        description:
          'Queues every dead delivery of the endpoint again from its first attempt; a failing endpoint is tried at once.',
        params: KeyIdParams,
        response: {
          202: ok(Redelivered, 'How many were queued again.'),
          ...adminErrors('API_KEY_NOT_FOUND', 'WEBHOOK_NOT_CONFIGURED'),
        },
      },
    },
    async (req, reply) => reply.code(202).send(await webhooks.redeliver(req.params.keyId)),
  );
};
