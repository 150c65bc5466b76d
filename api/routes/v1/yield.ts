import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ok, RATE_LIMIT_HEADERS } from '../../schemas/common.ts';
import { partnerErrors, partnerPostErrors } from '../../schemas/errors.ts';
import { WalletIdParams } from '../../schemas/wallets.ts';
import {
  YieldDepositBody,
  YieldOperation,
  YieldOperationParams,
  YieldPosition,
  YieldPositionQuery,
  YieldWithdrawalBody,
} from '../../schemas/yield.ts';
import type { YieldService } from '../../services/yield.ts';
import { policyContextOf } from './payments.ts';

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

/** Admitting an operation: the wallet and chain as for a position, the body, the key, the switch, the hold. */
const REQUEST_ERRORS = partnerPostErrors(
  'WALLET_NOT_FOUND',
  'UNSUPPORTED_OPERATION',
  'WALLET_CLAIMED',
  'WALLET_NOT_READY',
  'WALLET_SHARE_NOT_MIGRATED',
  'CHAIN_NOT_CONFIGURED',
  'YIELD_DISABLED',
  'YIELD_OPERATION_IN_PROGRESS',
  'WALLET_TRANSACTION_UNRESOLVED',
  'SERVICE_BUSY',
);

const OPERATION_ERRORS = partnerErrors('YIELD_OPERATION_NOT_FOUND');

const REQUEST_DESCRIPTION = (what: string) =>
  `${what} Answers 202 at once with the operation (\`pending\`); poll \`GET …/yield/operations/{id}\` for its result, and follow each transaction in transaction history (\`intentKind\` \`yield\`, its own \`rest.transaction.*\` events). The \`Idempotency-Key\` header is required and names the operation for good: the same key with the same wallet, chain, action and amount answers that operation (and resumes it from \`requires_action\`); with another one, 409 IDEMPOTENCY_CONFLICT. 409 YIELD_OPERATION_IN_PROGRESS while another operation of the wallet on the chain is pending or submitted; 409 WALLET_TRANSACTION_UNRESOLVED while another payment of the wallet on the chain is unresolved; 409 YIELD_DISABLED when the operator has disabled yield on the chain. For EVM wallets that are unclaimed and whose key generation is complete.`;

/** The two routes that admit an operation. */
const OPERATION_ROUTES = [
  {
    path: 'deposits',
    action: 'deposit',
    operationId: 'createYieldDeposit',
    summary: "Deposit a wallet's USDC into the lending market of a chain (EVM)",
    description:
      'Supplies `amount` USDC from the wallet to the lending market (Aave v3) of `chainId`, for the wallet: first an approval of exactly the amount when the allowance is short (never an unlimited one), with two confirmations, then the supply. The supply cap is checked before the supply is signed (`requires_action` with LENDING_SUPPLY_CAP_EXCEEDED; a confirmed approval stays). The wallet pays gas in the native token.',
    body: YieldDepositBody,
  },
  {
    path: 'withdrawals',
    action: 'withdraw',
    operationId: 'createYieldWithdrawal',
    summary: 'Withdraw USDC from the lending market of a chain to the wallet (EVM)',
    description:
      'Withdraws `amount` USDC (or `all`: the whole supplied balance with its interest) from the lending market of `chainId` back to the wallet. The wallet pays gas in the native token.',
    body: YieldWithdrawalBody,
  },
] as const;

/** The yield routes (spec: Yield routes). */
export const yieldRoutes: FastifyPluginAsyncTypebox<{ yieldService: YieldService }> = async (app, { yieldService }) => {
  for (const route of OPERATION_ROUTES) {
    app.post(
      `/wallets/:walletId/yield/${route.path}`,
      {
        // The operation's row keeps its key (spec: yield keys do not use the 24-hour answer cache).
        config: { ownIdempotency: true },
        schema: {
          tags: ['yield'],
          operationId: route.operationId,
          summary: route.summary,
          description: REQUEST_DESCRIPTION(route.description),
          security: [{ apiKey: [] }],
          params: WalletIdParams,
          body: route.body,
          response: {
            202: ok(YieldOperation, 'The operation, accepted (or the one the key names).', RATE_LIMIT_HEADERS),
            ...REQUEST_ERRORS,
          },
        },
      },
      async (req, reply) => {
        const op = await yieldService.request(
          req.principal,
          req.params.walletId,
          route.action,
          req.body,
          req.headers['idempotency-key'] as string | undefined,
          policyContextOf(req).initiatorUserId,
        );
        return reply.code(202).send(op);
      },
    );
  }

  app.get(
    '/wallets/:walletId/yield/operations/:operationId',
    {
      schema: {
        tags: ['yield'],
        operationId: 'getYieldOperation',
        summary: 'Read a yield operation',
        description:
          'The operation with its status, its transactions and, when it failed or waits for action, its error.',
        security: [{ apiKey: [] }],
        params: YieldOperationParams,
        response: { 200: ok(YieldOperation, 'The operation.', RATE_LIMIT_HEADERS), ...OPERATION_ERRORS },
      },
    },
    async (req) => yieldService.operation(req.principal, req.params.walletId, req.params.operationId),
  );

  app.post(
    '/wallets/:walletId/yield/operations/:operationId/cancel',
    {
      schema: {
        tags: ['yield'],
        operationId: 'cancelYieldOperation',
        summary: "Cancel a yield operation's unsigned work",
        description:
          'Cancels an operation whose next transaction is not signed: a prepared transaction is dropped before signing (its nonce is free again), and the operation is `cancelled` for good. A confirmed approval keeps its allowance. 409 YIELD_OPERATION_NOT_CANCELLABLE once a transaction of it is signed and unresolved, or once it is confirmed or failed. Cancelling a cancelled operation answers it again.',
        security: [{ apiKey: [] }],
        params: YieldOperationParams,
        response: {
          200: ok(YieldOperation, 'The cancelled operation.', RATE_LIMIT_HEADERS),
          ...partnerPostErrors('YIELD_OPERATION_NOT_FOUND', 'YIELD_OPERATION_NOT_CANCELLABLE', 'SERVICE_BUSY'),
        },
      },
    },
    async (req) => yieldService.cancel(req.principal, req.params.walletId, req.params.operationId),
  );

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
