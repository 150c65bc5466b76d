import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { ErrorCode } from '../../../chains/domain/error-catalogue.ts';
import { POLICY_ERROR_CODES } from '../../../chains/domain/policies.ts';
import { ok, RATE_LIMIT_HEADERS } from '../../schemas/common.ts';
import { partnerErrors, partnerPostErrors } from '../../schemas/errors.ts';
import {
  ListPoliciesQuery,
  ListVersionsQuery,
  Policy,
  PolicyBody,
  PolicyIdParams,
  PolicyList,
  PolicyTransitionBody,
  PolicyValidation,
  PolicyVersionList,
  ProductionReviewRequested,
  ReplacePolicyBody,
} from '../../schemas/policies.ts';
import type { PolicyService } from '../../services/policies.ts';

const common = { tags: ['permissions'], security: [{ apiKey: [] }] };

/** The codes of a read of one policy. */
const READ: readonly ErrorCode[] = ['PERMISSIONS_NOT_ENABLED', 'POLICY_NOT_FOUND'];
/** The codes of every policy write. */
const WRITE: readonly ErrorCode[] = ['PERMISSIONS_NOT_ENABLED', 'PRODUCTION_KEY_READ_ONLY'];
/** A write naming a policy, with the revision it expects. */
const REVISED: readonly ErrorCode[] = [...WRITE, 'POLICY_NOT_FOUND', 'REVISION_CONFLICT', 'APPROVAL_CASES_AFFECTED'];

const query = (q: { cursor?: string | undefined; limit?: string | undefined }) => ({
  ...(q.cursor === undefined ? {} : { cursor: q.cursor }),
  ...(q.limit === undefined ? {} : { limit: Number(q.limit) }),
});

/** `/v1/permissions-v2`: signing policies (POLICIES.md §3; the rules are in api/services/policies.ts). */
export const permissionRoutes: FastifyPluginAsyncTypebox<{ policies: PolicyService }> = async (app, { policies }) => {
  app.get(
    '/permissions-v2/policies',
    {
      schema: {
        ...common,
        operationId: 'listPolicies',
        summary: "List the key's signing policies",
        description:
          "The key's policies, oldest first (the order they are evaluated in), in the list envelope; `status` filters. Empty while permissions are off for the key.",
        querystring: ListPoliciesQuery,
        response: {
          200: ok(PolicyList, 'A page of policies.', RATE_LIMIT_HEADERS),
          ...partnerErrors('INVALID_CURSOR'),
        },
      },
    },
    async (req) =>
      policies.list(req.principal, { ...query(req.query), ...(req.query.status ? { status: req.query.status } : {}) }),
  );

  app.post(
    '/permissions-v2/policies',
    {
      schema: {
        ...common,
        operationId: 'createPolicy',
        summary: 'Create a policy (a draft)',
        description:
          'Checks the document and saves it as a draft, version 1, revision 1; nothing is evaluated until it is activated. Errors name each problem in `errors[]` with a JSON pointer; the top-level `code` is the first one. 403 PERMISSIONS_NOT_ENABLED while permissions are off for the key; 403 PRODUCTION_KEY_READ_ONLY with a production key.',
        body: PolicyBody,
        response: {
          201: ok(Policy, 'The draft.', RATE_LIMIT_HEADERS),
          ...partnerPostErrors(...WRITE, ...POLICY_ERROR_CODES),
        },
      },
    },
    async (req, reply) => reply.code(201).send(await policies.create(req.principal, req.body.policy)),
  );

  app.post(
    '/permissions-v2/policies/validate',
    {
      schema: {
        ...common,
        operationId: 'validatePolicy',
        summary: 'Check a policy document without saving it',
        description:
          '200 `{valid, errors}` whatever the document holds: each error with its code, JSON-pointer `path` and message. Nothing is saved; it answers whether or not permissions are on.',
        body: PolicyBody,
        response: { 200: ok(PolicyValidation, 'The verdict.', RATE_LIMIT_HEADERS), ...partnerPostErrors() },
      },
    },
    async (req) => policies.validate(req.body.policy),
  );

  app.get(
    '/permissions-v2/policies/:policyId',
    {
      schema: {
        ...common,
        operationId: 'getPolicy',
        summary: 'Get a policy',
        description: "The policy at its current version; another key's policy answers 404 like a missing one.",
        params: PolicyIdParams,
        response: { 200: ok(Policy, 'The policy.', RATE_LIMIT_HEADERS), ...partnerErrors(...READ) },
      },
    },
    async (req) => policies.get(req.principal, req.params.policyId),
  );

  app.get(
    '/permissions-v2/policies/:policyId/versions',
    {
      schema: {
        ...common,
        operationId: 'listPolicyVersions',
        summary: "List a policy's versions",
        description: 'Every version of the policy, newest first, each with its document as it was written.',
        params: PolicyIdParams,
        querystring: ListVersionsQuery,
        response: {
          200: ok(PolicyVersionList, 'A page of versions.', RATE_LIMIT_HEADERS),
          ...partnerErrors(...READ, 'INVALID_CURSOR'),
        },
      },
    },
    async (req) => policies.versions(req.principal, req.params.policyId, query(req.query)),
  );

  app.put(
    '/permissions-v2/policies/:policyId',
    {
      schema: {
        ...common,
        operationId: 'replacePolicy',
        summary: "Replace a policy's document (its next version)",
        description:
          'Makes the next version of the policy with this document; on an active policy it is live at once. `expectedRevision` must be the revision last read (409 REVISION_CONFLICT). Pending approval cases of an active policy: 409 APPROVAL_CASES_AFFECTED with `affectedCaseIds`, or `force: true` to invalidate them. 409 POLICY_SELECTOR_ACTIVE when an active policy would take the wallet type and network set of another active one.',
        params: PolicyIdParams,
        body: ReplacePolicyBody,
        response: {
          200: ok(Policy, 'The policy at its new version.', RATE_LIMIT_HEADERS),
          ...partnerErrors(...REVISED, 'POLICY_SELECTOR_ACTIVE', ...POLICY_ERROR_CODES),
        },
      },
    },
    async (req) => policies.replace(req.principal, req.params.policyId, req.body),
  );

  app.post(
    '/permissions-v2/policies/:policyId/activate',
    {
      schema: {
        ...common,
        operationId: 'activatePolicy',
        summary: 'Activate a policy',
        description:
          "From the answer on, the policy is evaluated. When another active policy of the key has the same wallet type and network set, this policy's document becomes that policy's next version instead: the answer is that policy (another id), and this one is deleted (its versions are kept). Already active: answered unchanged.",
        params: PolicyIdParams,
        body: PolicyTransitionBody,
        response: { 200: ok(Policy, 'The active policy.', RATE_LIMIT_HEADERS), ...partnerPostErrors(...REVISED) },
      },
    },
    async (req) => policies.activate(req.principal, req.params.policyId, req.body),
  );

  app.post(
    '/permissions-v2/policies/:policyId/deactivate',
    {
      schema: {
        ...common,
        operationId: 'deactivatePolicy',
        summary: 'Deactivate a policy',
        description:
          'The policy is no longer evaluated; its pending approval cases end (with `force`, else 409 APPROVAL_CASES_AFFECTED). A draft or inactive policy is answered unchanged.',
        params: PolicyIdParams,
        body: PolicyTransitionBody,
        response: { 200: ok(Policy, 'The policy.', RATE_LIMIT_HEADERS), ...partnerPostErrors(...REVISED) },
      },
    },
    async (req) => policies.deactivate(req.principal, req.params.policyId, req.body),
  );

  app.delete(
    '/permissions-v2/policies/:policyId',
    {
      schema: {
        ...common,
        operationId: 'deletePolicy',
        summary: 'Delete a draft or inactive policy',
        description:
          'The policy leaves every list and route (its versions are kept for the decision log). An active policy answers 409 POLICY_ACTIVE: deactivate it first.',
        params: PolicyIdParams,
        response: {
          204: ok(Type.Null(), 'Deleted.'),
          ...partnerErrors(...WRITE, 'POLICY_NOT_FOUND', 'POLICY_ACTIVE'),
        },
      },
    },
    async (req, reply) => {
      await policies.remove(req.principal, req.params.policyId);
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/permissions-v2/production-review',
    {
      schema: {
        ...common,
        operationId: 'requestProductionReview',
        summary: "Ask the operator to publish the development keys' policies to this production key",
        description:
          'Called with the production key. 200 `{status: requested}`; 409 PRODUCTION_REVIEW_INELIGIBLE with `status: ineligible` when no development key of the project has an active policy, or this key is not awaiting review (permissions off, a development key, a review already requested or decided). The operator publishes or dismisses it.',
        response: {
          200: ok(ProductionReviewRequested, 'The review is requested.', RATE_LIMIT_HEADERS),
          ...partnerPostErrors('PRODUCTION_REVIEW_INELIGIBLE'),
        },
      },
    },
    async (req) => policies.requestProductionReview(req.principal),
  );
};
