import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ActorDetail, ActorIdParams, ActorListQuery, ActorSummary } from '../../schemas/actors.ts';
import { errorResponses, Paginated } from '../../schemas/common.ts';
import type { ActorsAdmin } from '../../services/actors-admin.ts';

const ADMIN_ERRORS = [400, 401, 403] as const;
const common = { tags: ['admin'], security: [{ adminToken: [] }] };

/** `/admin/v1/actors`: wallets (and later payments) as actors; faulted ones wait here for the operator. */
export const actorAdminRoutes: FastifyPluginAsyncTypebox<{ actors: ActorsAdmin }> = async (app, { actors }) => {
  app.get(
    '/actors',
    {
      schema: {
        ...common,
        summary: 'List unfinished actors, by machine, state or fault',
        querystring: ActorListQuery,
        response: { 200: Paginated(ActorSummary), ...errorResponses(...ADMIN_ERRORS) },
      },
    },
    async (req) => actors.list(req.query),
  );

  app.get(
    '/actors/:actorId',
    {
      schema: {
        ...common,
        summary: 'Read an actor: its state, context, pending effects and stored events',
        params: ActorIdParams,
        response: { 200: ActorDetail, ...errorResponses(...ADMIN_ERRORS, 404) },
      },
    },
    async (req) => actors.get(req.params.actorId),
  );

  app.post(
    '/actors/:actorId/retry',
    {
      schema: {
        ...common,
        summary: 'Run a faulted actor again from its stored state',
        description:
          'Events stored while it was faulted are applied first, in order. If its steps fail again it faults again. 409 ACTOR_NOT_FAULTED unless it is faulted.',
        params: ActorIdParams,
        response: { 200: ActorDetail, ...errorResponses(...ADMIN_ERRORS, 404, 409, 503) },
      },
    },
    async (req) => actors.retry(req.params.actorId),
  );

  app.post(
    '/actors/:actorId/abandon',
    {
      schema: {
        ...common,
        summary: 'Abandon a faulted actor: it is marked done and never runs again',
        description:
          'Its stored events and effect intents are dropped. A wallet abandoned while being created is removed (it was never handed out). 409 ACTOR_NOT_FAULTED unless it is faulted.',
        params: ActorIdParams,
        response: { 200: ActorDetail, ...errorResponses(...ADMIN_ERRORS, 404, 409) },
      },
    },
    async (req) => actors.abandon(req.params.actorId),
  );
};
