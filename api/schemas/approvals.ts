/**
 * Approval cases, reviews, and the people, authorization scopes, role assignments and wallet bindings behind them
 * (`/v1/permissions-v2` and `/admin/v1`; POLICIES.md §2 step 7 and §3).
 */
import { Type } from '@sinclair/typebox';
import {
  APPROVAL_CASE_STATUSES,
  APPROVAL_DECISIONS,
  CASE_STAGE_STATUSES,
  MAX_ROLES_PER_ASSIGNMENT,
  REVIEW_STATUSES,
  ROLE_PATTERN,
} from '../../chains/domain/approvals.ts';
import { LIMIT_PATTERN, Paginated, StringEnum, TEXT_PATTERN } from './common.ts';

const Id = (description?: string) =>
  Type.String({ minLength: 1, maxLength: 128, ...(description ? { description } : {}) });
const Time = (description: string) => Type.String({ description });
const NullableTime = (description: string) => Type.Union([Type.String(), Type.Null()], { description });

export const CaseStatusSchema = StringEnum(APPROVAL_CASE_STATUSES, {
  description:
    '`pending` until its stages are complete (`completed`), one person rejects it (`rejected`), its lifetime ends (`expired`), its policy is replaced or deactivated (`invalidated`) or the partner cancels it (`cancelled`).',
});
export const ReviewStatusSchema = StringEnum(REVIEW_STATUSES, {
  description:
    '`pending` until approved or rejected with the key; `approved` lets the identical request through once within five minutes, then reads `consumed` (used) or `expired` (not used in time; also a pending review past its lifetime).',
});
export const DecisionSchema = StringEnum(APPROVAL_DECISIONS);

export const CaseIdParams = Type.Object({ caseId: Id() });
export const ReviewIdParams = Type.Object({ reviewId: Id() });
export const UserIdParams = Type.Object({ userId: Id() });
export const ScopeIdParams = Type.Object({ scopeId: Id() });
export const ScopeUserParams = Type.Object({ scopeId: Id(), userId: Id() });

export const ListCasesQuery = Type.Object(
  {
    status: Type.Optional(CaseStatusSchema),
    walletId: Type.Optional(Id('Only the cases of this wallet.')),
    cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    limit: Type.Optional(Type.String({ pattern: LIMIT_PATTERN, description: 'Page size 1-100; default 20.' })),
  },
  { additionalProperties: false },
);

export const PageQuery = Type.Object(
  {
    cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    limit: Type.Optional(Type.String({ pattern: LIMIT_PATTERN, description: 'Page size 1-100; default 20.' })),
  },
  { additionalProperties: false },
);

const CaseStage = Type.Object({
  role: Type.String({ description: "Who decides this stage: holders of this role in the case's authorization scope." }),
  threshold: Type.Integer({ description: 'Approvals that complete the stage.' }),
  status: StringEnum(CASE_STAGE_STATUSES, {
    description:
      '`completed`; `pending` (deciding now); `waiting` (after the current one); `rejected` (a rejection ended the case here).',
  }),
  approvals: Type.Integer({ description: 'Approvals so far.' }),
  decisions: Type.Array(Type.Object({ userId: Type.String(), decision: DecisionSchema, decidedAt: Type.String() }), {
    description: 'Who decided in this stage, in order.',
  }),
});

const caseFields = {
  id: Type.String(),
  status: CaseStatusSchema,
  walletId: Type.String(),
  policyId: Type.String({ description: 'The policy whose rule held the request.' }),
  policyVersion: Type.Integer({ description: 'Its version when the case opened.' }),
  ruleId: Type.String(),
  stages: Type.Array(CaseStage, { description: "The rule's approval stages, completed in order." }),
  initiatorUserId: Type.Union([Type.String(), Type.Null()], {
    description: 'The user named by `X-Initiator-User-Id` on the held request: never an approver of this case.',
  }),
  createdAt: Time('When the request was first held.'),
  expiresAt: Time(
    'End of its lifetime (APPROVAL_CASE_TTL_MS, seven days): a pending case expires then; a completed one no longer lets its request through; a rejection stops answering POLICY_DENIED.',
  ),
  usedAt: NullableTime('When the completed case let its request through (once); null before.'),
};

export const ApprovalCase = Type.Object(caseFields, {
  $id: 'ApprovalCase',
  description:
    'A request held for approval, tied to its Idempotency-Key (or, without one, to the request body). Resend the identical request once it is `completed`.',
});
export const ApprovalCaseList = Paginated(ApprovalCase, 'ApprovalCaseList');

export const AdminApprovalCase = Type.Object(
  {
    ...caseFields,
    projectId: Type.String(),
    apiKeyId: Type.String({ description: 'The key whose request it holds.' }),
    scopeId: Type.String({ description: "The wallet's authorization scope when the case opened: its holders decide." }),
    reference: Type.String({
      description: 'What ties it to its request: `key:<Idempotency-Key>`, or `body:<walletId>:<route>:<sha256>`.',
    }),
    endedAt: NullableTime('When it left pending (completed, rejected, invalidated, cancelled); null otherwise.'),
  },
  { $id: 'AdminApprovalCase' },
);
export const AdminApprovalCaseList = Paginated(AdminApprovalCase, 'AdminApprovalCaseList');

export const Review = Type.Object(
  {
    id: Type.String(),
    status: ReviewStatusSchema,
    expiresAt: Time(
      'When the current status lapses: a pending review expires (REVIEW_TTL_MS, 24 hours); an approved one lets the request through until then (five minutes after its approval); a rejection stands until then.',
    ),
  },
  { $id: 'Review' },
);

const Name = Type.String({ minLength: 1, maxLength: 200, pattern: TEXT_PATTERN });

export const CreateUserBody = Type.Object(
  { name: { ...Name, description: 'A label for the operator (a person, a team).' } },
  { additionalProperties: false },
);
export const ProjectUser = Type.Object(
  {
    id: Type.String({ description: 'Named by `X-Initiator-User-Id` and by approval decisions.' }),
    projectId: Type.String(),
    name: Type.String(),
    createdAt: Type.String(),
  },
  { $id: 'ProjectUser' },
);
export const ProjectUserList = Paginated(ProjectUser, 'ProjectUserList');

export const CreateScopeBody = Type.Object({ name: Name }, { additionalProperties: false });
const scopeFields = { id: Type.String(), projectId: Type.String(), name: Type.String(), createdAt: Type.String() };
export const ListedAuthorizationScope = Type.Object(scopeFields, { $id: 'ListedAuthorizationScope' });
export const AuthorizationScopeList = Paginated(ListedAuthorizationScope, 'AuthorizationScopeList');
export const AuthorizationScope = Type.Object(
  {
    ...scopeFields,
    assignments: Type.Array(
      Type.Object({
        userId: Type.String(),
        roles: Type.Array(Type.String()),
        revision: Type.Integer({ description: 'Pass as `expectedRevision` to change it.' }),
      }),
      { description: 'Each user with roles in the scope (an empty list once they were removed).' },
    ),
  },
  { $id: 'AuthorizationScope' },
);

export const AssignmentBody = Type.Object(
  {
    roles: Type.Array(Type.String({ pattern: ROLE_PATTERN, maxLength: 64 }), {
      maxItems: MAX_ROLES_PER_ASSIGNMENT,
      description: "The user's roles in the scope, replacing the ones it had; an empty list removes them all.",
    }),
    expectedRevision: Type.Integer({
      minimum: 0,
      maximum: 1_000_000_000,
      description: "The assignment's current revision (0 for a user without one): 409 REVISION_CONFLICT otherwise.",
    }),
    force: Type.Optional(
      Type.Boolean({
        description:
          'Write even though pending approval cases of the scope could then never complete; they are invalidated. Without it: 409 APPROVAL_CASES_AFFECTED with their ids.',
      }),
    ),
  },
  { additionalProperties: false },
);
export const ScopeAssignment = Type.Object(
  {
    scopeId: Type.String(),
    userId: Type.String(),
    roles: Type.Array(Type.String()),
    revision: Type.Integer(),
    updatedAt: Type.String(),
    invalidatedCaseIds: Type.Array(Type.String(), { description: 'Cases this write invalidated (with `force`).' }),
  },
  { $id: 'ScopeAssignment' },
);

export const WalletScopeBody = Type.Object(
  {
    scopeId: Type.Union([Id(), Type.Null()], {
      description: "A scope of the wallet's project, or null to unbind: approval rules then answer 403 FORBIDDEN.",
    }),
  },
  { additionalProperties: false },
);
export const WalletScope = Type.Object(
  { walletId: Type.String(), scopeId: Type.Union([Type.String(), Type.Null()]) },
  { $id: 'WalletScope' },
);

export const DecisionBody = Type.Object(
  { userId: Id("The person deciding: a user of the case's project."), decision: DecisionSchema },
  { additionalProperties: false },
);
