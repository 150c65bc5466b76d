import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { KeyIdParams } from '../../schemas/admin.ts';
import { ok } from '../../schemas/common.ts';
import { adminErrors } from '../../schemas/errors.ts';
import { KeyPermissions, PermissionsBody, PublishedReview, ReviewDecisionBody } from '../../schemas/policies.ts';
import type { PolicyService } from '../../services/policies.ts';

const common = { tags: ['admin', 'permissions'], security: [{ adminToken: [] }] };

/** `/admin/v1/api-keys/{keyId}/permissions` and `…/production-review/*`: the operator's side of signing policies. */
export const permissionAdminRoutes: FastifyPluginAsyncTypebox<{ policies: PolicyService }> = async (
  app,
  { policies },
) => {
  app.get(
    '/api-keys/:keyId/permissions',
    {
      schema: {
        ...common,
        operationId: 'getKeyPermissions',
        summary: "An API key's signing-policy switch and production review",
        description: 'Whether policies are evaluated for the key, approvals, and (production keys) the review state.',
        params: KeyIdParams,
        response: { 200: ok(KeyPermissions, "The key's permissions."), ...adminErrors('API_KEY_NOT_FOUND') },
      },
    },
    async (req) => policies.permissions(req.params.keyId),
  );

  app.put(
    '/api-keys/:keyId/permissions',
    {
      schema: {
        ...common,
        operationId: 'setKeyPermissions',
        summary: 'Turn signing policies on or off for an API key',
        description:
          "`enabled`: the key's active policies are evaluated before every signature (off: everything is allowed as before, and the key's policy lists answer empty). `approvals`: approval flows for the key. On a production key, `enabled: true` opens a production review (`awaiting_review`) unless one is requested; the partner then asks for it with POST /v1/permissions-v2/production-review.",
        params: KeyIdParams,
        body: PermissionsBody,
        response: { 200: ok(KeyPermissions, "The key's permissions."), ...adminErrors('API_KEY_NOT_FOUND') },
      },
    },
    async (req) => policies.setPermissions(req.params.keyId, req.body),
  );

  app.post(
    '/api-keys/:keyId/production-review/publish',
    {
      schema: {
        ...common,
        operationId: 'publishProductionReview',
        summary: "Publish a production review: the development keys' active policies become this key's",
        description:
          "For a production key whose review is `requested`. Each active policy of the project's development keys becomes an active policy of this key naming it as `sourcePolicyId` (republished: its next version; unchanged: left as it is); this key's active policies whose source is no longer active are deactivated. Pending approval cases of the policies it changes are invalidated. `reason` and `by` are kept with the review. 409 PRODUCTION_REVIEW_NOT_REQUESTED otherwise; 409 POLICY_SELECTOR_ACTIVE when two development policies share a wallet type and network set.",
        params: KeyIdParams,
        body: ReviewDecisionBody,
        response: {
          200: ok(PublishedReview, "The key's permissions and what was published."),
          ...adminErrors('API_KEY_NOT_FOUND', 'PRODUCTION_REVIEW_NOT_REQUESTED', 'POLICY_SELECTOR_ACTIVE'),
        },
      },
    },
    async (req) => policies.publishReview(req.params.keyId, req.body),
  );

  app.post(
    '/api-keys/:keyId/production-review/dismiss',
    {
      schema: {
        ...common,
        operationId: 'dismissProductionReview',
        summary: 'Dismiss a production review: nothing is published',
        description:
          "For a production key whose review is `requested`: the review becomes `dismissed` and the key's policies stay as they are. `reason` and `by` are kept with the review. 409 PRODUCTION_REVIEW_NOT_REQUESTED otherwise.",
        params: KeyIdParams,
        body: ReviewDecisionBody,
        response: {
          200: ok(KeyPermissions, "The key's permissions."),
          ...adminErrors('API_KEY_NOT_FOUND', 'PRODUCTION_REVIEW_NOT_REQUESTED'),
        },
      },
    },
    async (req) => policies.dismissReview(req.params.keyId, req.body),
  );
};
