import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ok, RATE_LIMIT_HEADERS } from '../../schemas/common.ts';
import { partnerErrors } from '../../schemas/errors.ts';
import { WalletIdParams } from '../../schemas/wallets.ts';
import { YieldPosition, YieldPositionQuery } from '../../schemas/yield.ts';
import type { YieldService } from '../../services/yield.ts';

/** The wallet (EVM, unclaimed, keys ready), the chain (in the chains file), and its node. */
const POSITION_ERRORS = partnerErrors(
  'WALLET_NOT_FOUND',
  'UNSUPPORTED_OPERATION',
  'WALLET_CLAIMED',
  'WALLET_NOT_READY',
  'WALLET_SHARE_NOT_MIGRATED',
  'CHAIN_NOT_CONFIGURED',
  'RPC_UNAVAILABLE',
);

/** The yield routes (spec: Yield routes). Deposits, withdrawals and operations are not served yet. */
export const yieldRoutes: FastifyPluginAsyncTypebox<{ yieldService: YieldService }> = async (app, { yieldService }) => {
  app.get(
    '/wallets/:walletId/yield/position',
    {
      schema: {
        tags: ['yield'],
        operationId: 'getYieldPosition',
        summary: "Read a wallet's USDC position in the lending market of a chain (EVM)",
        description:
          'The USDC the wallet has supplied to the lending market (Aave v3) of `chainId`, with its accrued interest, and what a withdrawal could take now, every figure read from the state of one block (`blockNumber`, `blockTimestamp`) in one request to the chain node. Amounts are decimal USDC strings. For EVM wallets that are unclaimed and whose key generation is complete; the chain must be in the chains file. 503 RPC_UNAVAILABLE when the node does not answer.',
        security: [{ apiKey: [] }],
        params: WalletIdParams,
        querystring: YieldPositionQuery,
        response: {
          200: ok(YieldPosition, 'The position at the block it was read from.', RATE_LIMIT_HEADERS),
          ...POSITION_ERRORS,
        },
      },
    },
    async (req) => yieldService.position(req.principal, req.params.walletId, Number(req.query.chainId)),
  );
};
