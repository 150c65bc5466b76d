import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { KeyIdParams } from '../../schemas/admin.ts';
import { errorResponses } from '../../schemas/common.ts';
import {
  DeliveryList,
  DeliveryParams,
  ListDeliveriesQuery,
  PutWebhookBody,
  Redelivered,
  RotatedWebhookSecret,
  WebhookEndpoint,
  WebhookTestAccepted,
} from '../../schemas/webhooks.ts';
import type { WebhookService } from '../../services/webhooks.ts';

const ADMIN_ERRORS = [400, 401, 403] as const;
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
        summary: "Create or replace an API key's webhook endpoint",
        description:
          'HTTPS only; at least one event type while enabled; unknown types refused. The `whsec_` secret is in the answer only when this call created the endpoint. `enabled: false` keeps the configuration and stops deliveries. Targets that resolve to loopback, private, link-local or metadata addresses answer 400 WEBHOOK_TARGET_NOT_ALLOWED unless WEBHOOK_ALLOW_PRIVATE_TARGETS is on.',
        params: KeyIdParams,
        body: PutWebhookBody,
        response: { 200: WebhookEndpoint, ...errorResponses(...ADMIN_ERRORS, 404) },
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
        summary: "Read an API key's webhook endpoint (never its secret), its state and delivery counts",
        params: KeyIdParams,
        response: { 200: WebhookEndpoint, ...errorResponses(...ADMIN_ERRORS, 404) },
      },
    },
    async (req) => webhooks.get(req.params.keyId),
  );

  app.delete(
    '/api-keys/:keyId/webhook',
    {
      schema: {
        ...common,
        summary: 'Delete the endpoint: URL, events, secrets and its deliveries',
        params: KeyIdParams,
        response: { 204: Type.Null(), ...errorResponses(...ADMIN_ERRORS, 404) },
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
        summary: 'Rotate the signing secret; the previous one signs too for 24 hours',
        params: KeyIdParams,
        response: { 200: RotatedWebhookSecret, ...errorResponses(...ADMIN_ERRORS, 404) },
      },
    },
    async (req, reply) => reply.header('cache-control', 'no-store').send(await webhooks.rotateSecret(req.params.keyId)),
  );

  app.post(
    '/api-keys/:keyId/webhook/test',
    {
      schema: {
        ...common,
        summary: 'Queue a test.ping to the endpoint',
        params: KeyIdParams,
        response: { 202: WebhookTestAccepted, ...errorResponses(...ADMIN_ERRORS, 404, 409) },
      },
    },
    async (req, reply) => reply.code(202).send(await webhooks.test(req.params.keyId)),
  );

  app.get(
    '/api-keys/:keyId/webhook/deliveries',
    {
      schema: {
        ...common,
        summary: "The endpoint's deliveries, newest first: status, attempts, last answer and latency, next attempt",
        params: KeyIdParams,
        querystring: ListDeliveriesQuery,
        response: { 200: DeliveryList, ...errorResponses(...ADMIN_ERRORS, 404) },
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
        summary: 'Deliver one event again, from its first attempt (same webhook-id and body)',
        params: DeliveryParams,
        response: { 202: Redelivered, ...errorResponses(...ADMIN_ERRORS, 404) },
      },
    },
    async (req, reply) => reply.code(202).send(await webhooks.redeliver(req.params.keyId, req.params.eventId)),
  );

  app.post(
    '/api-keys/:keyId/webhook/redeliver-dead',
    {
      schema: {
        ...common,
        summary: 'Deliver every dead delivery of the endpoint again, from its first attempt',
        params: KeyIdParams,
        response: { 202: Redelivered, ...errorResponses(...ADMIN_ERRORS, 404) },
      },
    },
    async (req, reply) => reply.code(202).send(await webhooks.redeliver(req.params.keyId)),
  );
};
