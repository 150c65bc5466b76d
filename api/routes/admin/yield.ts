import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ok } from '../../schemas/common.ts';
import { adminErrors } from '../../schemas/errors.ts';
import { YieldSwitch, YieldSwitchList } from '../../schemas/yield.ts';
import type { YieldService } from '../../services/yield.ts';

const common = { tags: ['admin'], security: [{ adminToken: [] }] };

const YieldSwitchBody = Type.Object(
  {
    enabled: Type.Boolean(),
    reason: Type.Optional(Type.String({ maxLength: 500 })),
  },
  { additionalProperties: false },
);

const YieldChainParams = Type.Object({ chainId: Type.String({ pattern: '^[0-9]{1,12}$' }) });

/** `/admin/v1/yield/chains`: the incident switch of each yield chain. */
export const yieldAdminRoutes: FastifyPluginAsyncTypebox<{ yieldService: YieldService }> = async (
  app,
  { yieldService },
) => {
  app.get(
    '/yield/chains',
    {
      schema: {
        ...common,
        operationId: 'listYieldSwitches',
        summary: 'Whether yield is enabled on each yield chain',
        description:
          "The incident switch of each of the three yield chains (1, 8453, 11155111): enabled unless the operator disabled it, with the operator's note and when it was last set.",
        response: { 200: ok(YieldSwitchList, 'The three yield chains and their switch.'), ...adminErrors() },
      },
    },
    async () => yieldService.switches(),
  );

  app.put(
    '/yield/chains/:chainId',
    {
      schema: {
        ...common,
        operationId: 'setYieldSwitch',
        summary: 'Enable or disable new yield operations on a chain (incident control)',
        description:
          'Disabled: new deposits and withdrawals on the chain answer 409 YIELD_DISABLED. Operations already admitted carry on; position reads, operation reads and cancellation of unsigned work keep working. 400 for a chain id yield does not run on (1, 8453, 11155111).',
        params: YieldChainParams,
        body: YieldSwitchBody,
        response: { 200: ok(YieldSwitch, 'The switch as set.'), ...adminErrors() },
      },
    },
    async (req) => yieldService.setSwitch(Number(req.params.chainId), req.body.enabled, req.body.reason ?? null),
  );
};
