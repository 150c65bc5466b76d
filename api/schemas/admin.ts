import { Type } from '@sinclair/typebox';
import { StringEnum, TEXT_PATTERN } from './common.ts';

export const PlanSchema = StringEnum(['free', 'starter', 'growth', 'scale', 'enterprise']);
export const EnvironmentSchema = StringEnum(['development', 'production']);

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
export const Project = Type.Object({
  id: Type.String(),
  name: Type.String(),
  plan: PlanSchema,
  rateLimitPerMinute: Type.Integer(),
  createdAt: Type.String(),
});
export const ProjectIdParams = Type.Object({ projectId: Type.String({ minLength: 1, maxLength: 128 }) });
export const KeyIdParams = Type.Object({ keyId: Type.String({ minLength: 1, maxLength: 128 }) });
export const CreateApiKeyBody = Type.Object({ environment: EnvironmentSchema }, { additionalProperties: false });
export const ApiKey = Type.Object({
  id: Type.String(),
  projectId: Type.String(),
  environment: EnvironmentSchema,
  secretKey: Type.String({ description: 'Shown once.' }),
  createdAt: Type.String(),
});
export const RotatedKey = Type.Object({ id: Type.String(), secretKey: Type.String({ description: 'Shown once.' }) });
export const IpAllowlistBody = Type.Object(
  {
    cidrs: Type.Array(Type.String({ minLength: 1, maxLength: 64 }), {
      maxItems: 1000,
      description: 'IPv4/IPv6 CIDRs (a bare address means that one host); an empty list lifts the restriction.',
    }),
  },
  { additionalProperties: false },
);
export const IpAllowlist = Type.Object({ projectId: Type.String(), cidrs: Type.Array(Type.String()) });
