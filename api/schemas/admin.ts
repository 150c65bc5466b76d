import { Type } from '@sinclair/typebox';
import { KEY_ENVIRONMENTS, PLANS } from '../../chains/domain/projects.ts';
import { ref, StringEnum, TEXT_PATTERN } from './common.ts';
import { Wallet } from './wallets.ts';

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
