import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ActorDetail, ActorIdParams, ActorList, ActorListQuery } from '../../schemas/actors.ts';
import { ok } from '../../schemas/common.ts';
import { adminErrors } from '../../schemas/errors.ts';
import type { ActorsAdmin } from '../../services/actors-admin.ts';

const common = { tags: ['admin'], security: [{ adminToken: [] }] };

/** `/admin/v1/actors`: wallets (and later payments) as actors; faulted ones wait here for the operator. */
export const actorAdminRoutes: FastifyPluginAsyncTypebox<{ actors: ActorsAdmin }> = async (app, { actors }) => {
  app.get(
    '/actors',
    {
      schema: {
        ...common,
        operationId: 'listActors',
        summary: 'List unfinished actors, by machine, state or fault',
        description:
          'Actors that are not finished (wallets being created, payments being sent or watched), filtered by machine, state or faulted, in the list envelope.',
        querystring: ActorListQuery,
        response: { 200: ok(ActorList, 'A page of actors.'), ...adminErrors('INVALID_CURSOR') },
      },
    },
    async (req) => actors.list(req.query),
  );

  app.get(
    '/actors/:actorId',
    {
      schema: {
        ...common,
        operationId: 'getActor',
        summary: 'Read an actor: its state, context, pending effects and stored events',
        description:
          'One actor: its machine and version, state, context, the effects it has under way and the events stored for it. Finished actors are read too.',
        params: ActorIdParams,
        response: { 200: ok(ActorDetail, 'The actor.'), ...adminErrors('ACTOR_NOT_FOUND') },
      },
    },
    async (req) => actors.get(req.params.actorId),
  );

  app.post(
    '/actors/:actorId/retry',
    {
      schema: {
        ...common,
        operationId: 'retryActor',
        summary: 'Run a faulted actor again from its stored state',
        description:
          'Events stored while it was faulted are applied first, in order. If its steps fail again it faults again. 409 ACTOR_NOT_FAULTED unless it is faulted.',
        params: ActorIdParams,
        response: {
          200: ok(ActorDetail, 'The actor after the retry was accepted.'),
          ...adminErrors('ACTOR_NOT_FOUND', 'ACTOR_NOT_FAULTED', 'SERVICE_BUSY', 'SERVICE_STOPPING'),
        },
      },
    },
    async (req) => actors.retry(req.params.actorId),
  );

  app.post(
    '/actors/:actorId/abandon',
    {
      schema: {
        ...common,
        operationId: 'abandonActor',
        summary: 'Abandon a faulted actor: it is marked done and never runs again',
        description:
          'Its stored events and effect intents are dropped. A wallet abandoned while being created is removed (it was never handed out). 409 ACTOR_NOT_FAULTED unless it is faulted.',
        params: ActorIdParams,
        response: {
          200: ok(ActorDetail, 'The abandoned actor.'),
          ...adminErrors('ACTOR_NOT_FOUND', 'ACTOR_NOT_FAULTED'),
        },
      },
    },
    async (req) => actors.abandon(req.params.actorId),
  );
};
