import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ok, RATE_LIMIT_HEADERS } from '../../schemas/common.ts';
import { partnerErrors, partnerPostErrors } from '../../schemas/errors.ts';
import {
  PolicyIdParams,
  PolicyUsage,
  SimulateBody,
  SimulationResult,
  UsageQuery,
  UserPolicyParams,
  UserUsageQuery,
  WalletPolicyParams,
} from '../../schemas/policy-insights.ts';
import type { PolicyInsights } from '../../services/policy-insights.ts';

const common = { tags: ['permissions'], security: [{ apiKey: [] }] };

/**
 * `/v1/permissions-v2`: a policy's spend meters on a wallet, and shadow mode (what a policy would have done to the
 * requests the decision point logged). The policy records' own routes live beside these.
 */
export const permissionsInsightsRoutes: FastifyPluginAsyncTypebox<{ insights: PolicyInsights }> = async (
  app,
  { insights },
) => {
  app.get(
    '/permissions-v2/wallets/:walletId/policies/:policyId/usage',
    {
      schema: {
        ...common,
        operationId: 'getWalletPolicyUsage',
        summary: "A policy's spend meters on a wallet",
        description:
          'Each spend condition of the policy as a meter: what its current window has counted for the wallet on the network (every signature allowed with permissions on, counted once, released when no usable signature exists), its limit, and when the window resets (windows are aligned to the Unix epoch: a 24h window resets at 00:00 UTC).',
        params: WalletPolicyParams,
        querystring: UsageQuery,
        response: {
          200: ok(PolicyUsage, 'The meters.', RATE_LIMIT_HEADERS),
          ...partnerErrors('INVALID_REQUEST', 'WALLET_NOT_FOUND', 'POLICY_NOT_FOUND'),
        },
      },
    },
    async (req) => insights.usage(req.principal, req.params.walletId, req.params.policyId, req.query.network),
  );

  app.get(
    '/permissions-v2/users/:userId/policies/:policyId/usage',
    {
      schema: {
        ...common,
        operationId: 'getUserPolicyUsage',
        summary: "A policy's spend meters on a wallet claimed by a user",
        description: 'As the wallet route, for `walletId`, a wallet claimed into `userId` (any other is a 404).',
        params: UserPolicyParams,
        querystring: UserUsageQuery,
        response: {
          200: ok(PolicyUsage, 'The meters.', RATE_LIMIT_HEADERS),
          ...partnerErrors('INVALID_REQUEST', 'WALLET_NOT_FOUND', 'POLICY_NOT_FOUND'),
        },
      },
    },
    async (req) =>
      insights.userUsage(req.principal, req.params.userId, req.params.policyId, req.query.walletId, req.query.network),
  );

  app.post(
    '/permissions-v2/policies/:id/simulate',
    {
      schema: {
        ...common,
        operationId: 'simulatePolicy',
        summary: 'Shadow mode: what a policy would have done to logged requests',
        description:
          'Replays the requests this key had decided in [from, to) with permissions on, in the order they were decided, against the policy as it stands now (a draft, or the next version of an active policy) beside the versions of the other policies that were active then, with spend windows recomputed (the ledger before the span, then the simulated outcomes). Nothing is written. Decisions that reserved nothing (messages, denials) reach the log within 50 ms of their answer.',
        params: PolicyIdParams,
        body: SimulateBody,
        response: {
          200: ok(SimulationResult, 'What the policy would have denied or held.', RATE_LIMIT_HEADERS),
          ...partnerPostErrors('INVALID_REQUEST', 'POLICY_NOT_FOUND'),
        },
      },
    },
    async (req) => insights.simulate(req.principal, req.params.id, req.body),
  );
};
