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
import { partnerErrors, partnerPostErrors } from '../../schemas/errors.ts';
import type { ApprovalsService } from '../../services/approvals.ts';

const common = { tags: ['permissions'], security: [{ apiKey: [] }] };

/** The user-owned layer's routes (spec: Permissions routes): every method answers this, as no end-user sessions exist. */
const EXTENSION_PATHS = ['/users/:userId/delegation-consents', '/users/:userId/user-parameters'] as const;
const EXTENSION_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

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

  // Not in the OpenAPI document: no call to them can succeed, and the document promises a success answer for each
  // operation. docs/api-guide.md names them.
  for (const url of EXTENSION_PATHS) {
    app.route({
      method: [...EXTENSION_METHODS],
      url,
      schema: { hide: true, params: UserIdParams },
      handler: async () => {
        throw new ServiceError(
          'permissions_v2_extension_unavailable',
          400,
          'delegation consents and user parameters belong to the user-owned layer, which this service does not have: it has no end-user sessions',
        );
      },
    });
  }
};
