import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ok, RATE_LIMIT_HEADERS } from '../../schemas/common.ts';
import { partnerErrors, partnerPostErrors, WALLET_CREATION } from '../../schemas/errors.ts';
import {
  CreateWalletBody,
  ListWalletsQuery,
  PatchWalletBody,
  Wallet,
  WalletIdParams,
  WalletList,
} from '../../schemas/wallets.ts';
import type { WalletService } from '../../services/wallets.ts';

/** `/v1/wallets`: create, list, read and update custodial wallets. */
export const walletRoutes: FastifyPluginAsyncTypebox<{ wallets: WalletService }> = async (app, { wallets }) => {
  app.post(
    '/wallets',
    {
      schema: {
        tags: ['wallets'],
        operationId: 'createWallet',
        summary: 'Create a wallet',
        description:
          'Creates a custodial wallet of one of five types. One wallet per project for each userIdentifierType, userIdentifier, type and scheme: a duplicate answers 409 WALLET_ALREADY_EXISTS with the existing walletId.',
        security: [{ apiKey: [] }],
        body: CreateWalletBody,
        response: {
          201: ok(
            Wallet,
            'The wallet, `ready`, with its address and public key (key generation finished before the answer).',
            RATE_LIMIT_HEADERS,
          ),
          ...partnerPostErrors(...WALLET_CREATION),
        },
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
        operationId: 'listWallets',
        summary: 'List wallets',
        description: 'Newest first. Pass pagination.cursor back as `cursor` for the next page.',
        security: [{ apiKey: [] }],
        querystring: ListWalletsQuery,
        response: {
          200: ok(
            WalletList,
            "A page of the project's wallets, newest first, in the list envelope.",
            RATE_LIMIT_HEADERS,
          ),
          ...partnerErrors('INVALID_CURSOR'),
        },
      },
    },
    async (req) => wallets.list(req.principal.projectId, req.query),
  );

  app.get(
    '/wallets/:walletId',
    {
      schema: {
        tags: ['wallets'],
        operationId: 'getWallet',
        summary: 'Get a wallet',
        description: "One wallet of the caller's project; a wallet of another project answers 404 like a missing one.",
        security: [{ apiKey: [] }],
        params: WalletIdParams,
        response: { 200: ok(Wallet, 'The wallet.', RATE_LIMIT_HEADERS), ...partnerErrors('WALLET_NOT_FOUND') },
      },
    },
    async (req) => wallets.get(req.principal.projectId, req.params.walletId),
  );

  app.patch(
    '/wallets/:walletId',
    {
      schema: {
        tags: ['wallets'],
        operationId: 'updateWallet',
        summary: "Update a wallet's user identifier",
        description: 'Intended for unclaimed wallets, e.g. to switch from CUSTOM_ID to EMAIL before a user claims.',
        security: [{ apiKey: [] }],
        params: WalletIdParams,
        body: PatchWalletBody,
        response: {
          200: ok(Wallet, 'The wallet with its new user identifier.', RATE_LIMIT_HEADERS),
          ...partnerErrors('WALLET_NOT_FOUND', 'WALLET_ALREADY_EXISTS', 'WALLET_NOT_READY', 'WALLET_CLAIMED'),
        },
      },
    },
    async (req) => wallets.update(req.principal.projectId, req.params.walletId, req.body),
  );
};
