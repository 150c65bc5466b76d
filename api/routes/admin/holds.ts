import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ReleasedHold, ReleaseHoldBody } from '../../schemas/admin.ts';
import { ok } from '../../schemas/common.ts';
import { adminErrors } from '../../schemas/errors.ts';
import { WalletIdParams } from '../../schemas/wallets.ts';
import type { HoldsAdmin } from '../../services/holds-admin.ts';

const common = { tags: ['admin'], security: [{ adminToken: [] }] };

/** `/admin/v1/wallets/{walletId}/release-hold`: the operator's way out for a payment that can never resolve. */
export const holdAdminRoutes: FastifyPluginAsyncTypebox<{ holds: HoldsAdmin }> = async (app, { holds }) => {
  app.post(
    '/wallets/:walletId/release-hold',
    {
      schema: {
        ...common,
        operationId: 'releaseHold',
        summary: "Release a wallet and chain's hold (one pending payment per wallet and chain)",
        description:
          'For a payment that is healthy but can never resolve on its own (an underpriced transaction never mined, a partner-chosen future nonce, a chain removed from the chains file). The payment stops sending; its record keeps its status, since a release claims no outcome, and notes why in `monitoring.operatorRelease`; it stays watched, and moves to confirmed, reverted or failed if the chain shows one. The wallet may pay again on that chain at once. 404 HOLD_NOT_FOUND when nothing holds it; 409 HOLD_NOT_RELEASABLE while the payment is being signed (retry in seconds) or when its actor is faulted (retry or abandon it).',
        params: WalletIdParams,
        body: ReleaseHoldBody,
        response: {
          200: ok(ReleasedHold, 'The released hold.'),
          ...adminErrors(
            'WALLET_NOT_FOUND',
            'HOLD_NOT_FOUND',
            'HOLD_NOT_RELEASABLE',
            'SERVICE_BUSY',
            'SERVICE_STOPPING',
          ),
        },
      },
    },
    async (req) => holds.release(req.params.walletId, req.body),
  );
};
