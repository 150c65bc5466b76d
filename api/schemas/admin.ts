import { Type } from '@sinclair/typebox';
import { KEY_ENVIRONMENTS, PLANS } from '../../chains/domain/projects.ts';
import { LIMIT_PATTERN, Paginated, ref, StringEnum, TEXT_PATTERN } from './common.ts';
import { Wallet } from './wallets.ts';
import { WebhookView } from './webhooks.ts';

export const PlanSchema = StringEnum(PLANS);
export const EnvironmentSchema = StringEnum(KEY_ENVIRONMENTS);

export const CreateProjectBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200, pattern: TEXT_PATTERN }),
    plan: Type.Optional(PlanSchema),
    rateLimitPerMinute: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 10_000_000, description: 'Required for scale and enterprise plans only.' }),
    ),
  },
  { additionalProperties: false },
);
export const Project = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    plan: PlanSchema,
    rateLimitPerMinute: Type.Integer(),
    createdAt: Type.String(),
  },
  { $id: 'Project' },
);
export const ListProjectsQuery = Type.Object(
  {
    deleted: Type.Optional(
      StringEnum(['true', 'false'], {
        description: 'Only deleted projects (true) or only live ones (false); default both.',
      }),
    ),
    cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    limit: Type.Optional(Type.String({ pattern: LIMIT_PATTERN, description: 'Page size 1-100; default 20.' })),
  },
  { additionalProperties: false },
);
export const ListedProject = Type.Object(
  {
    ...Project.properties,
    rateLimitPerMinute: Type.Integer({ description: "Requests a minute per key: the plan's, or the project's own." }),
    ipAllowlist: Type.Array(Type.String(), { description: 'CIDRs its keys may call from; empty: any address.' }),
    apiKeyCount: Type.Integer({ description: 'Its API keys (they stop working when it is deleted).' }),
    deletedAt: Type.Union([Type.String(), Type.Null()], { description: 'When it was deleted; null while it is live.' }),
  },
  { $id: 'ListedProject' },
);
export const ProjectList = Paginated(ListedProject, 'ProjectList');
export const ListApiKeysQuery = Type.Object(
  {
    cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    limit: Type.Optional(Type.String({ pattern: LIMIT_PATTERN, description: 'Page size 1-100; default 20.' })),
  },
  { additionalProperties: false },
);
export const ProjectIdParams = Type.Object({ projectId: Type.String({ minLength: 1, maxLength: 128 }) });
export const KeyIdParams = Type.Object({ keyId: Type.String({ minLength: 1, maxLength: 128 }) });
export const CreateApiKeyBody = Type.Object({ environment: EnvironmentSchema }, { additionalProperties: false });
export const ApiKey = Type.Object(
  {
    id: Type.String(),
    projectId: Type.String(),
    environment: EnvironmentSchema,
    secretKey: Type.String({ description: 'Shown once.' }),
    createdAt: Type.String(),
  },
  { $id: 'ApiKey' },
);
export const ListedApiKey = Type.Object(
  {
    id: Type.String(),
    projectId: Type.String(),
    environment: EnvironmentSchema,
    createdAt: Type.String(),
    rotatedAt: Type.Union([Type.String(), Type.Null()], {
      description: 'When its secret was last rotated; null if never.',
    }),
    webhook: Type.Union([ref(WebhookView), Type.Null()], {
      description:
        'Its webhook endpoint as GET /admin/v1/api-keys/{keyId}/webhook shows it (URL, events, enabled, healthy or failing, delivery counts; never a secret); null when none is configured.',
    }),
  },
  { $id: 'ListedApiKey' },
);
export const ApiKeyList = Paginated(ListedApiKey, 'ApiKeyList');
export const RotatedKey = Type.Object(
  { id: Type.String(), secretKey: Type.String({ description: 'Shown once.' }) },
  { $id: 'RotatedKey' },
);
export const IpAllowlistBody = Type.Object(
  {
    cidrs: Type.Array(Type.String({ minLength: 1, maxLength: 64 }), {
      maxItems: 1000,
      description: 'IPv4/IPv6 CIDRs (a bare address means that one host); an empty list lifts the restriction.',
    }),
  },
  { additionalProperties: false },
);
export const IpAllowlist = Type.Object(
  { projectId: Type.String(), cidrs: Type.Array(Type.String()) },
  { $id: 'IpAllowlist' },
);

export const ClaimWalletBody = Type.Union(
  [
    Type.Object(
      {
        userId: Type.Optional(
          Type.String({
            minLength: 1,
            maxLength: 256,
            pattern: TEXT_PATTERN,
            description: "The claiming user's id; default: the wallet's userIdentifier.",
          }),
        ),
      },
      { additionalProperties: false },
    ),
    Type.Null(),
  ],
  { description: 'Optional body.' },
);

export const ClaimedWallet = Type.Object(
  {
    ...Wallet.properties,
    projectId: Type.String(),
    claimedAt: Type.String({ format: 'date-time' }),
    userId: Type.String(),
  },
  { $id: 'ClaimedWallet' },
);

export const PregeneratedWallet = Type.Object(
  {
    wallet: ref(Wallet),
    userShare: Type.String({
      description:
        "The wallet's user share, shown once and kept nowhere: base64 JSON segments joined by '-'; the segment whose id is the wallet id carries signer.",
    }),
  },
  { $id: 'PregeneratedWallet' },
);

const KEY_ID = Type.String({ pattern: '^[0-9a-f]{16}$', description: 'A master key id: 16 hex characters.' });

export const RotateMasterKeyBody = Type.Union(
  [
    Type.Object(
      {
        confirmKeyId: Type.Optional({
          ...KEY_ID,
          description:
            'The nextKeyId of the prepared rotation: starts (or resumes) re-wrapping every record under it. Absent: prepare only.',
        }),
      },
      { additionalProperties: false },
    ),
    Type.Null(),
  ],
  { description: 'Optional body.' },
);

export const MasterKeyStatus = Type.Object(
  {
    state: StringEnum(['idle', 'prepared', 'rotating', 'rotated'], {
      description:
        'idle: every record under the master key. prepared: a next key is held, not yet confirmed. rotating: records are being re-wrapped (the enclave keeps serving). rotated: every record is under the new key; promote it (see action).',
    }),
    masterKeyId: { ...KEY_ID, description: 'The key the enclave was started with (ENCLAVE_MASTER_KEY or master.key).' },
    nextKeyId: Type.Optional({ ...KEY_ID, description: 'The next key the enclave holds.' }),
    sealingKeyId: { ...KEY_ID, description: 'The key new records are sealed with (the rotation target).' },
    rowsByKeyId: Type.Record(Type.String(), Type.Integer(), { description: 'Sealed records per wrapping key id.' }),
    rowsCountedAt: Type.String({
      format: 'date-time',
      description:
        'When rowsByKeyId was counted: a count is reused for a few seconds, and redone after a change of state.',
    }),
    error: Type.Optional(Type.String({ description: 'Why the rotation stopped, if it did.' })),
    action: Type.String({ description: "The operator's next step." }),
  },
  { $id: 'MasterKeyStatus' },
);

export const ReleaseHoldBody = Type.Object(
  {
    chainKey: Type.String({
      pattern: '^(evm:[0-9]{1,20}|solana:[a-z][a-z0-9-]{0,31})$',
      description:
        'The chain of the hold, as records and actors name it: `evm:<chainId>` or `solana:<network>`. A chain no longer in the chains file is accepted.',
    }),
    reason: Type.String({
      minLength: 1,
      maxLength: 500,
      pattern: TEXT_PATTERN,
      description: "Why the hold is released; shown in the record's `monitoring.operatorRelease`.",
    }),
    releasedBy: Type.String({
      minLength: 1,
      maxLength: 100,
      pattern: TEXT_PATTERN,
      description: 'Who releases it (an operator name); kept in the payment actor, not shown to partners.',
    }),
  },
  { additionalProperties: false },
);

export const ReleasedHold = Type.Object(
  {
    walletId: Type.String(),
    chainKey: Type.String(),
    transactionId: Type.String({ description: 'The payment that held the wallet on the chain.' }),
    status: Type.String({
      description: 'The record status, unchanged by the release: the release claims no outcome.',
    }),
    reason: Type.String(),
    releasedBy: Type.String(),
    releasedAt: Type.String({ format: 'date-time' }),
  },
  { $id: 'ReleasedHold' },
);
