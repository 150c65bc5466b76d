/**
 * The `/v1/permissions-v2` policy routes and the operator's permission routes (POLICIES.md §1, §3). A policy document
 * in a request is checked by the service's own validator (actors/signing/policy/validate-policy.ts), which answers
 * every error with a code and a JSON pointer: the request schema documents the `PolicyDocument` but lets any object
 * through to it.
 */
import { Type } from '@sinclair/typebox';
import type { Condition as ConditionType } from '../../actors/signing/policy/policy-document.ts';
import {
  ALL_ACTIONS,
  POLICY_ACTIONS,
  POLICY_EFFECTS,
  POLICY_ERROR_CODES,
  POLICY_STATUSES,
  PRODUCTION_REVIEW_STATUSES,
} from '../../chains/domain/policies.ts';
import { KEY_ENVIRONMENTS } from '../../chains/domain/projects.ts';
import { LIMIT_PATTERN, Paginated, ref, StringEnum, TEXT_PATTERN, WalletTypeSchema } from './common.ts';

const Condition = Type.Unsafe<ConditionType>({
  type: 'object',
  additionalProperties: true,
  description:
    'A leaf `{fact, op, value}` (op eq, ne, in, not_in on strings and addresses; lt, lte, gt, gte on unsigned integers as decimal strings), a spend leaf `{spend: {asset, window}, op, value}`, or a combinator `{all: [...]}`, `{any: [...]}`, `{not: {...}}`.',
});

const Rule = Type.Object(
  {
    id: Type.String({ description: 'Unique in the policy; named by denials and holds.' }),
    effect: StringEnum(POLICY_EFFECTS),
    actions: Type.Array(StringEnum([...POLICY_ACTIONS, ALL_ACTIONS]), {
      description: '`all` only on deny and require_approval rules.',
    }),
    conditions: Type.Optional(Type.Array(Condition, { description: 'AND of the conditions; absent: always.' })),
    approval: Type.Optional(
      Type.Object({
        stages: Type.Array(Type.Object({ role: Type.String(), threshold: Type.Integer({ minimum: 1 }) })),
      }),
    ),
  },
  { additionalProperties: false },
);

const Scope = Type.Object(
  {
    walletType: WalletTypeSchema,
    walletIds: Type.Optional(Type.Array(Type.String())),
    networks: Type.Optional(
      Type.Array(Type.String(), {
        description:
          'The selector, a set: eip155:<chainId>, solana:mainnet|devnet, stellar:pubnet|testnet, cosmos:<chain-id>, sui. Absent: every network, and requests that name none.',
      }),
    ),
  },
  { additionalProperties: false },
);

/** A policy document as a partner writes it (POLICIES.md §1). */
export const PolicyDocument = Type.Object(
  {
    name: Type.String(),
    layer: Type.String({
      description: '`guardrail`; `delegation` answers 400 permissions_v2_extension_unavailable.',
    }),
    scope: Scope,
    rules: Type.Array(Rule),
  },
  { $id: 'PolicyDocument', additionalProperties: false },
);

/** The document in a request: documented as a `PolicyDocument`, checked by the service (errors with JSON pointers). */
const PolicyInput = Type.Unsafe<unknown>({
  anyOf: [Type.Ref('PolicyDocument'), Type.Object({}, { additionalProperties: true })],
  description:
    'The policy document (PolicyDocument). The service checks it and answers each problem in `errors[]` with a JSON pointer into it.',
});

const PolicyFields = {
  id: Type.String(),
  apiKeyId: Type.String({ description: 'The key the policy belongs to.' }),
  status: StringEnum(POLICY_STATUSES, { description: 'Only active policies are evaluated.' }),
  version: Type.Integer({ description: 'The current version; each version is immutable.' }),
  revision: Type.Integer({ description: 'Write counter: send it back as `expectedRevision`.' }),
  name: Type.String(),
  layer: Type.Literal('guardrail'),
  scope: Scope,
  rules: Type.Array(Rule),
  sourcePolicyId: Type.Optional(
    Type.String({ description: "On a production key: the development key's policy it was published from." }),
  ),
  createdAt: Type.String({ format: 'date-time' }),
  updatedAt: Type.String({ format: 'date-time' }),
};

export const Policy = Type.Object(PolicyFields, {
  $id: 'Policy',
  description: "A signing policy: its current version's document and the service's fields.",
});

export const PolicyList = Paginated(Policy, 'PolicyList');

export const PolicyVersion = Type.Object(
  {
    version: Type.Integer(),
    createdAt: Type.String({ format: 'date-time' }),
    policy: ref(PolicyDocument),
  },
  { $id: 'PolicyVersion' },
);

export const PolicyVersionList = Paginated(PolicyVersion, 'PolicyVersionList');

const PolicyErrorItem = Type.Object({
  code: StringEnum(POLICY_ERROR_CODES),
  path: Type.String({ description: "JSON pointer into the document ('' is the document)." }),
  message: Type.String(),
});

export const PolicyValidation = Type.Object(
  { valid: Type.Boolean(), errors: Type.Array(PolicyErrorItem) },
  { $id: 'PolicyValidation' },
);

export const PolicyIdParams = Type.Object({ policyId: Type.String({ minLength: 1, maxLength: 128 }) });

export const ListPoliciesQuery = Type.Object(
  {
    status: Type.Optional(StringEnum(POLICY_STATUSES)),
    cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    limit: Type.Optional(Type.String({ pattern: LIMIT_PATTERN, description: 'Page size 1-100; default 20.' })),
  },
  { additionalProperties: false },
);

export const ListVersionsQuery = Type.Object(
  {
    cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    limit: Type.Optional(Type.String({ pattern: LIMIT_PATTERN, description: 'Page size 1-100; default 20.' })),
  },
  { additionalProperties: false },
);

export const PolicyBody = Type.Object(
  { policy: PolicyInput },
  {
    additionalProperties: false,
    examples: [
      {
        policy: {
          name: 'base-cap',
          layer: 'guardrail',
          scope: { walletType: 'EVM', networks: ['eip155:8453'] },
          rules: [
            {
              id: 'daily-cap',
              effect: 'deny',
              actions: ['transfer'],
              conditions: [{ spend: { asset: 'native', window: '24h' }, op: 'gt', value: '1000000000000000000' }],
            },
          ],
        },
      },
    ],
  },
);

const ExpectedRevision = Type.Integer({
  minimum: 1,
  maximum: 2 ** 31,
  description: "The policy's `revision` as last read; another answers 409 REVISION_CONFLICT.",
});
const Force = Type.Optional(
  Type.Boolean({
    description: 'Invalidate the pending approval cases the write would end (else 409 APPROVAL_CASES_AFFECTED).',
  }),
);

export const ReplacePolicyBody = Type.Object(
  { policy: PolicyInput, expectedRevision: ExpectedRevision, force: Force },
  { additionalProperties: false },
);

export const PolicyTransitionBody = Type.Object(
  { expectedRevision: ExpectedRevision, force: Force },
  { additionalProperties: false },
);

export const ProductionReviewRequested = Type.Object(
  { status: Type.Literal('requested') },
  { $id: 'ProductionReviewRequested' },
);

// --- admin

export const PermissionsBody = Type.Object(
  {
    enabled: Type.Boolean({ description: 'Signing policies are evaluated for the key (off: every request allowed).' }),
    approvals: Type.Boolean({ description: 'Approval flows (cases) are on for the key.' }),
  },
  { additionalProperties: false },
);

export const ReviewDecisionBody = Type.Object(
  {
    reason: Type.String({
      minLength: 1,
      maxLength: 500,
      pattern: TEXT_PATTERN,
      description: 'Why; kept with the review.',
    }),
    by: Type.String({
      minLength: 1,
      maxLength: 100,
      pattern: TEXT_PATTERN,
      description: 'Who decides (an operator name); kept with the review.',
    }),
  },
  { additionalProperties: false },
);

const PermissionsFields = {
  apiKeyId: Type.String(),
  environment: StringEnum(KEY_ENVIRONMENTS),
  enabled: Type.Boolean(),
  approvals: Type.Boolean(),
  productionReview: Type.Union(
    [
      Type.Object({
        status: StringEnum(PRODUCTION_REVIEW_STATUSES),
        requestedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
        decidedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
        decidedBy: Type.Union([Type.String(), Type.Null()]),
        reason: Type.Union([Type.String(), Type.Null()]),
      }),
      Type.Null(),
    ],
    { description: "A production key's review once permissions were enabled for it; null for development keys." },
  ),
  updatedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
    description: 'Null while permissions were never set (off).',
  }),
};

export const KeyPermissions = Type.Object(PermissionsFields, { $id: 'KeyPermissions' });

export const PublishedReview = Type.Object(
  {
    ...PermissionsFields,
    published: Type.Array(
      Type.Object({
        id: Type.String({ description: "The production key's policy." }),
        sourcePolicyId: Type.String({ description: "The development key's policy it copies." }),
        version: Type.Integer(),
      }),
    ),
    deactivated: Type.Array(Type.String(), {
      description: 'Production policies deactivated because their source is no longer active.',
    }),
  },
  { $id: 'PublishedReview' },
);
