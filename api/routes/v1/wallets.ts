import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { errorResponses, Paginated } from '../../schemas/common.ts';
import {
  CreateWalletBody,
  ListWalletsQuery,
  PatchWalletBody,
  Wallet,
  WalletIdParams,
  WalletListItem,
} from '../../schemas/wallets.ts';
import type { WalletService } from '../../services/wallets.ts';

const AUTH_ERRORS = [400, 401, 403, 429] as const;

/** `/v1/wallets`: create, list, read and update custodial wallets. */
export const walletRoutes: FastifyPluginAsyncTypebox<{ wallets: WalletService }> = async (app, { wallets }) => {
  app.post(
    '/wallets',
    {
      schema: {
        tags: ['wallets'],
        summary: 'Create a wallet',
        description:
          'Creates a custodial wallet of one of five types. One wallet per project for each userIdentifierType, userIdentifier, type and scheme: a duplicate answers 409 WALLET_ALREADY_EXISTS with the existing walletId.',
        security: [{ apiKey: [] }],
        body: CreateWalletBody,
        response: { 201: Wallet, ...errorResponses(...AUTH_ERRORS, 409, 503) },
      },
    },
    async (req, reply) => {
      const wallet = await wallets.create(req.principal.projectId, req.body, req.principal.keyId);
      return reply.code(201).send(wallet);
    },
  );

  app.get(
    '/wallets',
    {
      schema: {
        tags: ['wallets'],
        summary: 'List wallets',
        description: 'Newest first. Pass pagination.cursor back as `cursor` for the next page.',
        security: [{ apiKey: [] }],
        querystring: ListWalletsQuery,
        response: { 200: Paginated(WalletListItem), ...errorResponses(...AUTH_ERRORS) },
      },
    },
    async (req) => wallets.list(req.principal.projectId, req.query),
  );

  app.get(
    '/wallets/:walletId',
    {
      schema: {
        tags: ['wallets'],
        summary: 'Get a wallet',
        security: [{ apiKey: [] }],
        params: WalletIdParams,
        response: { 200: Wallet, ...errorResponses(...AUTH_ERRORS, 404) },
      },
    },
    async (req) => wallets.get(req.principal.projectId, req.params.walletId),
  );

  app.patch(
    '/wallets/:walletId',
    {
      schema: {
        tags: ['wallets'],
        summary: "Update a wallet's user identifier",
        description: 'Intended for unclaimed wallets, e.g. to switch from CUSTOM_ID to EMAIL before a user claims.',
        security: [{ apiKey: [] }],
        params: WalletIdParams,
        body: PatchWalletBody,
        response: { 200: Wallet, ...errorResponses(...AUTH_ERRORS, 404, 409) },
      },
    },
    async (req) => wallets.update(req.principal.projectId, req.params.walletId, req.body),
  );
};
