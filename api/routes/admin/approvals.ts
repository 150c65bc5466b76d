import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ProjectIdParams } from '../../schemas/admin.ts';
import {
  AdminApprovalCase,
  AdminApprovalCaseList,
  AssignmentBody,
  AuthorizationScope,
  AuthorizationScopeList,
  CaseIdParams,
  CreateScopeBody,
  CreateUserBody,
  DecisionBody,
  ListCasesQuery,
  PageQuery,
  ProjectUser,
  ProjectUserList,
  ScopeAssignment,
  ScopeIdParams,
  ScopeUserParams,
  WalletScope,
  WalletScopeBody,
} from '../../schemas/approvals.ts';
import { ok } from '../../schemas/common.ts';
import { adminErrors } from '../../schemas/errors.ts';
import { WalletIdParams } from '../../schemas/wallets.ts';
import type { ApprovalsService } from '../../services/approvals.ts';

const common = { tags: ['approvals'], security: [{ adminToken: [] }] };

const page = (q: { cursor?: string; limit?: string }) => ({
  ...(q.cursor === undefined ? {} : { cursor: q.cursor }),
  ...(q.limit === undefined ? {} : { limit: Number(q.limit) }),
});

/**
 * The people who approve signing requests, their authorization scopes and roles, which scope each wallet's cases go
 * to, and the stand-in for the people's own approval flow: `POST /approval-cases/{caseId}/decisions` (POLICIES.md §2;
 * this service has no end-user login, so the operator records a person's decision).
 */
export const approvalAdminRoutes: FastifyPluginAsyncTypebox<{ approvals: ApprovalsService }> = async (
  app,
  { approvals },
) => {
  app.post(
    '/projects/:projectId/users',
    {
      schema: {
        ...common,
        operationId: 'createProjectUser',
        summary: 'Create a user of a project (a person who approves)',
        description:
          "A person who can hold roles in the project's authorization scopes and decide approval cases. Partners name the one who initiates a request with `X-Initiator-User-Id: <id>`; that person never decides its case.",
        params: ProjectIdParams,
        body: CreateUserBody,
        response: { 201: ok(ProjectUser, 'The user.'), ...adminErrors('PROJECT_NOT_FOUND') },
      },
    },
    async (req, reply) => reply.code(201).send(await approvals.createUser(req.params.projectId, req.body)),
  );

  app.get(
    '/projects/:projectId/users',
    {
      schema: {
        ...common,
        operationId: 'listProjectUsers',
        summary: "List a project's users",
        description: "The project's users, oldest first, in the list envelope.",
        params: ProjectIdParams,
        querystring: PageQuery,
        response: {
          200: ok(ProjectUserList, 'A page of users.'),
          ...adminErrors('PROJECT_NOT_FOUND', 'INVALID_CURSOR'),
        },
      },
    },
    async (req) => approvals.listUsers(req.params.projectId, page(req.query)),
  );

  app.post(
    '/projects/:projectId/authorization-scopes',
    {
      schema: {
        ...common,
        operationId: 'createAuthorizationScope',
        summary: 'Create an authorization scope',
        description:
          'A set of people with roles (PUT …/assignments/{userId}) who decide the approval cases of the wallets bound to it (PUT /admin/v1/wallets/{walletId}/authorization-scope). A wallet bound to none answers 403 FORBIDDEN when an approval rule holds its request.',
        params: ProjectIdParams,
        body: CreateScopeBody,
        response: {
          201: ok(AuthorizationScope, 'The scope, without assignments yet.'),
          ...adminErrors('PROJECT_NOT_FOUND'),
        },
      },
    },
    async (req, reply) => reply.code(201).send(await approvals.createScope(req.params.projectId, req.body)),
  );

  app.get(
    '/projects/:projectId/authorization-scopes',
    {
      schema: {
        ...common,
        operationId: 'listAuthorizationScopes',
        summary: "List a project's authorization scopes",
        description: "The project's scopes, oldest first, in the list envelope (GET one for its assignments).",
        params: ProjectIdParams,
        querystring: PageQuery,
        response: {
          200: ok(AuthorizationScopeList, 'A page of scopes.'),
          ...adminErrors('PROJECT_NOT_FOUND', 'INVALID_CURSOR'),
        },
      },
    },
    async (req) => approvals.listScopes(req.params.projectId, page(req.query)),
  );

  app.get(
    '/authorization-scopes/:scopeId',
    {
      schema: {
        ...common,
        operationId: 'getAuthorizationScope',
        summary: 'Read an authorization scope with its role assignments',
        description: 'The scope and each user with roles in it, with the revision a change must name.',
        params: ScopeIdParams,
        response: {
          200: ok(AuthorizationScope, 'The scope and its assignments.'),
          ...adminErrors('AUTHORIZATION_SCOPE_NOT_FOUND'),
        },
      },
    },
    async (req) => approvals.getScope(req.params.scopeId),
  );

  app.put(
    '/authorization-scopes/:scopeId/assignments/:userId',
    {
      schema: {
        ...common,
        operationId: 'putScopeAssignment',
        summary: "Replace a user's roles in an authorization scope",
        description:
          "Sets the user's roles in the scope (an approval stage names the role whose holders decide it). `expectedRevision` is the assignment's current revision, 0 before the first: otherwise 409 REVISION_CONFLICT with the current `revision`. A change that would leave pending approval cases of the scope unable to complete answers 409 APPROVAL_CASES_AFFECTED with their ids; with `force: true` it is written and those cases are invalidated.",
        params: ScopeUserParams,
        body: AssignmentBody,
        response: {
          200: ok(ScopeAssignment, 'The assignment as written.'),
          ...adminErrors(
            'AUTHORIZATION_SCOPE_NOT_FOUND',
            'USER_NOT_FOUND',
            'REVISION_CONFLICT',
            'APPROVAL_CASES_AFFECTED',
          ),
        },
      },
    },
    async (req) => approvals.putAssignment(req.params.scopeId, req.params.userId, req.body),
  );

  app.get(
    '/wallets/:walletId/authorization-scope',
    {
      schema: {
        ...common,
        operationId: 'getWalletAuthorizationScope',
        summary: "Which authorization scope decides a wallet's approval cases",
        description: 'The scope the wallet is bound to; null when none (approval rules then answer 403 FORBIDDEN).',
        params: WalletIdParams,
        response: { 200: ok(WalletScope, 'The binding.'), ...adminErrors('WALLET_NOT_FOUND') },
      },
    },
    async (req) => approvals.walletScope(req.params.walletId),
  );

  app.put(
    '/wallets/:walletId/authorization-scope',
    {
      schema: {
        ...common,
        operationId: 'setWalletAuthorizationScope',
        summary: 'Bind a wallet to an authorization scope, or unbind it',
        description:
          "New approval cases of the wallet are decided by the scope's people; cases already open keep the scope they opened with. `scopeId: null` unbinds: an approval rule then answers 403 FORBIDDEN. The scope must be of the wallet's project (400 otherwise).",
        params: WalletIdParams,
        body: WalletScopeBody,
        response: {
          200: ok(WalletScope, 'The binding as written.'),
          ...adminErrors('WALLET_NOT_FOUND', 'AUTHORIZATION_SCOPE_NOT_FOUND'),
        },
      },
    },
    async (req) => approvals.setWalletScope(req.params.walletId, req.body.scopeId),
  );

  app.get(
    '/projects/:projectId/approval-cases',
    {
      schema: {
        ...common,
        operationId: 'listProjectApprovalCases',
        summary: "List a project's approval cases (every key)",
        description:
          "The project's cases, newest first, in the list envelope, with the key, scope and reference of each; `status` filters by the status as of now.",
        params: ProjectIdParams,
        querystring: ListCasesQuery,
        response: {
          200: ok(AdminApprovalCaseList, 'A page of approval cases.'),
          ...adminErrors('PROJECT_NOT_FOUND', 'INVALID_CURSOR'),
        },
      },
    },
    async (req) => {
      const { status, walletId } = req.query;
      return approvals.listProjectCases(req.params.projectId, {
        ...page(req.query),
        ...(status === undefined ? {} : { status }),
        ...(walletId === undefined ? {} : { walletId }),
      });
    },
  );

  app.get(
    '/approval-cases/:caseId',
    {
      schema: {
        ...common,
        operationId: 'getApprovalCaseAdmin',
        summary: 'Read an approval case',
        description: 'The case with its stages, decisions, key, scope and reference.',
        params: CaseIdParams,
        response: {
          200: ok(AdminApprovalCase, 'The approval case.'),
          ...adminErrors('APPROVAL_CASE_NOT_FOUND'),
        },
      },
    },
    async (req) => approvals.getCaseAdmin(req.params.caseId),
  );

  app.post(
    '/approval-cases/:caseId/decisions',
    {
      schema: {
        ...common,
        operationId: 'decideApprovalCase',
        summary: "Record a person's decision on an approval case",
        description:
          "The stand-in for the people's own approval flow (API keys can never decide a case). Eligible: holders of the current stage's role in the case's scope, except the initiator (403 INITIATOR_CANNOT_REVIEW); anyone else, a second decision by the same user, or a case no longer pending: 403 APPROVAL_DECISION_NOT_ALLOWED, message `approval decision is not allowed`, `reason` saying which. Stages complete at their threshold, in order; the last one completes the case. One rejection rejects it.",
        params: CaseIdParams,
        body: DecisionBody,
        response: {
          200: ok(AdminApprovalCase, 'The case after the decision.'),
          ...adminErrors(
            'APPROVAL_CASE_NOT_FOUND',
            'USER_NOT_FOUND',
            'INITIATOR_CANNOT_REVIEW',
            'APPROVAL_DECISION_NOT_ALLOWED',
          ),
        },
      },
    },
    async (req) => approvals.decide(req.params.caseId, req.body),
  );
};
