import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ServiceError } from '../../../chains/domain/errors.ts';
import {
  ApprovalCase,
  ApprovalCaseList,
  CaseIdParams,
  ListCasesQuery,
  Review,
  ReviewIdParams,
  UserIdParams,
} from '../../schemas/approvals.ts';
import { ok, RATE_LIMIT_HEADERS } from '../../schemas/common.ts';
import { alwaysError, partnerErrors, partnerPostErrors } from '../../schemas/errors.ts';
import type { ApprovalsService } from '../../services/approvals.ts';

const common = { tags: ['permissions'], security: [{ apiKey: [] }] };

/**
 * The user-owned layer's routes (spec: Permissions routes): every method answers 400
 * permissions_v2_extension_unavailable, as no end-user sessions exist. Documented, each method an operation marked
 * `x-always-error`, so that a partner's client written for the spec's full API finds them and what they answer.
 */
const EXTENSION_ROUTES = [
  { url: '/users/:userId/delegation-consents', name: 'DelegationConsents', what: 'delegation consents' },
  { url: '/users/:userId/user-parameters', name: 'UserParameters', what: 'user parameters' },
] as const;
const EXTENSION_METHODS = [
  { method: 'GET', verb: 'get', summary: 'Read' },
  { method: 'POST', verb: 'create', summary: 'Create' },
  { method: 'PUT', verb: 'replace', summary: 'Replace' },
  { method: 'PATCH', verb: 'update', summary: 'Update' },
  { method: 'DELETE', verb: 'delete', summary: 'Delete' },
] as const;
const EXTENSION_UNAVAILABLE = 'permissions_v2_extension_unavailable';

/**
 * `/v1/permissions-v2`: the approval cases and reviews of the key's held requests. A record of another key answers
 * 404 like a missing one. The partner's backend reads and cancels cases but never decides one (spec); it approves or
 * rejects reviews.
 */
export const approvalRoutes: FastifyPluginAsyncTypebox<{ approvals: ApprovalsService }> = async (
  app,
  { approvals },
) => {
  app.get(
    '/approval-cases',
    {
      schema: {
        ...common,
        operationId: 'listApprovalCases',
        summary: "List the key's approval cases",
        description:
          "The key's approval cases, newest first, in the list envelope; `status` filters by the status as of now (a pending case past its lifetime is `expired`). Empty while permissions are off for the key (spec).",
        querystring: ListCasesQuery,
        response: {
          200: ok(ApprovalCaseList, 'A page of approval cases.', RATE_LIMIT_HEADERS),
          ...partnerErrors('INVALID_CURSOR'),
        },
      },
    },
    async (req) => {
      const { status, walletId, cursor, limit } = req.query;
      return approvals.listCases(req.principal, {
        ...(status === undefined ? {} : { status }),
        ...(walletId === undefined ? {} : { walletId }),
        ...(cursor === undefined ? {} : { cursor }),
        ...(limit === undefined ? {} : { limit: Number(limit) }),
      });
    },
  );

  app.get(
    '/approval-cases/:caseId',
    {
      schema: {
        ...common,
        operationId: 'getApprovalCase',
        summary: 'Read an approval case',
        description:
          'The case with its stages and who decided in each. Once `completed`, resend the original request (same Idempotency-Key, identical body) and it signs once.',
        params: CaseIdParams,
        response: {
          200: ok(ApprovalCase, 'The approval case.', RATE_LIMIT_HEADERS),
          ...partnerErrors('APPROVAL_CASE_NOT_FOUND'),
        },
      },
    },
    async (req) => approvals.getCase(req.principal, req.params.caseId),
  );

  app.post(
    '/approval-cases/:caseId/cancel',
    {
      schema: {
        ...common,
        operationId: 'cancelApprovalCase',
        summary: 'Cancel a pending approval case',
        description:
          'A pending case becomes `cancelled`: its request is never signed under it (a resend answers POLICY_REVIEW_REQUIRED with the same case; a new Idempotency-Key opens a new case). Any other case is answered as it is, 200.',
        params: CaseIdParams,
        response: {
          200: ok(ApprovalCase, 'The case, cancelled or as it was.', RATE_LIMIT_HEADERS),
          ...partnerPostErrors('APPROVAL_CASE_NOT_FOUND'),
        },
      },
    },
    async (req) => approvals.cancelCase(req.principal, req.params.caseId),
  );

  for (const decision of ['approve', 'reject'] as const) {
    app.post(
      `/reviews/:reviewId/${decision}`,
      {
        schema: {
          ...common,
          operationId: decision === 'approve' ? 'approveReview' : 'rejectReview',
          summary: decision === 'approve' ? 'Approve a review' : 'Reject a review',
          description:
            decision === 'approve'
              ? 'A pending review becomes `approved`: resend the identical request within five minutes and it signs once. A review that has already ended (expired, rejected, consumed) or was approved is answered as it is, 200 (spec).'
              : 'A pending review becomes `rejected`: a resend answers POLICY_DENIED (reason `review-rejected`) for the rest of its lifetime. A review that has already ended or was approved is answered as it is, 200 (spec).',
          params: ReviewIdParams,
          response: {
            200: ok(Review, "The review's current status.", RATE_LIMIT_HEADERS),
            ...partnerPostErrors('REVIEW_NOT_FOUND'),
          },
        },
      },
      async (req) => approvals.decideReview(req.principal, req.params.reviewId, decision),
    );
  }

  for (const { url, name, what } of EXTENSION_ROUTES) {
    for (const { method, verb, summary } of EXTENSION_METHODS) {
      app.route({
        method,
        url,
        schema: {
          ...common,
          operationId: `${verb}${name}`,
          summary: `${summary} ${what} (not available in this service)`,
          description: `Not available in this service: ${what} belong to the spec's user-owned permissions layer, which needs end-user sessions this service does not have. Every authenticated, well-formed call of this path answers 400 \`${EXTENSION_UNAVAILABLE}\`, whatever the method and body, and there is no success answer (\`x-always-error\`). Signing policies of the guardrail layer (\`/v1/permissions-v2/policies\`) are what this service offers.`,
          ...alwaysError(EXTENSION_UNAVAILABLE),
          params: UserIdParams,
          response: method === 'POST' ? partnerPostErrors(EXTENSION_UNAVAILABLE) : partnerErrors(EXTENSION_UNAVAILABLE),
        },
        handler: async () => {
          const message = `${what} belong to the user-owned layer, which this service does not have: it has no end-user sessions`;
          // Like every record error of /v1/permissions-v2 (POLICIES.md §3): `code` is `errors[0].code`.
          throw new ServiceError(EXTENSION_UNAVAILABLE, 400, message, {
            details: { errors: [{ code: EXTENSION_UNAVAILABLE, path: '', message }] },
          });
        },
      });
    }
  }
};
