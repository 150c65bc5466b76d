/** The schemas of the signing-policy usage and simulate routes (`/v1/permissions-v2`). */
import { Type } from '@sinclair/typebox';

const Id = (description: string) => Type.String({ minLength: 1, maxLength: 128, description });

export const WalletPolicyParams = Type.Object({
  walletId: Id('The wallet.'),
  policyId: Id('The policy.'),
});

export const UserPolicyParams = Type.Object({
  userId: Id('The user the wallet was claimed into.'),
  policyId: Id('The policy.'),
});

export const PolicyIdParams = Type.Object({ id: Id('The policy.') });

const NetworkQuery = Type.String({
  minLength: 1,
  maxLength: 64,
  description:
    "The network the meters count on, in selector syntax (`eip155:1`, `solana:mainnet`, ...); optional when the policy's scope names exactly one.",
});

export const UsageQuery = Type.Object({ network: Type.Optional(NetworkQuery) }, { additionalProperties: false });

export const UserUsageQuery = Type.Object(
  { walletId: Id('A wallet claimed by the user.'), network: Type.Optional(NetworkQuery) },
  { additionalProperties: false },
);

const Amount = (description: string) => Type.String({ pattern: '^[0-9]+$', description });

export const PolicyUsage = Type.Object(
  {
    meters: Type.Array(
      Type.Object({
        ruleId: Type.String({ description: 'The rule whose spend condition this meter shows.' }),
        asset: Type.String({ description: '`native`, or the asset as the condition names it.' }),
        window: Type.String({ description: 'The window, e.g. `24h` (aligned to the Unix epoch).' }),
        limit: Amount("The condition's value, in base units."),
        used: Amount('What the current window has counted for this wallet, network and asset, in base units.'),
        resetsAt: Type.String({ format: 'date-time', description: 'When the current window ends.' }),
      }),
      { description: 'One meter per spend condition of the policy, in rule order.' },
    ),
  },
  { $id: 'PolicyUsage' },
);

export const SimulateBody = Type.Object(
  {
    from: Type.String({ format: 'date-time', description: 'Start of the span of logged requests (inclusive).' }),
    to: Type.String({ format: 'date-time', description: 'End of the span (exclusive); at most 31 days after from.' }),
  },
  { additionalProperties: false },
);

const Outcome = Type.Object({
  effect: Type.String({ description: '`allow`, `deny`, `hold` (an approval or review), `forbidden`.' }),
  reason: Type.Optional(Type.String({ description: 'A denial reason (`denied-by-rule`, `outside-boundary`, ...).' })),
  policyId: Type.Optional(Type.String()),
  ruleId: Type.Optional(Type.String()),
  fact: Type.Optional(Type.String({ description: 'fact-unavailable: the fact the request lacked.' })),
});

export const SimulationResult = Type.Object(
  {
    evaluated: Type.Integer({ description: 'Logged requests replayed.' }),
    wouldDeny: Type.Integer({ description: 'Of those, how many would be denied.' }),
    wouldRequireApproval: Type.Integer({ description: 'How many would need an approval or a review.' }),
    changed: Type.Integer({ description: 'How many would get another outcome than they got.' }),
    truncated: Type.Boolean({
      description: 'The span held more logged requests than one simulation replays (10,000).',
    }),
    items: Type.Array(
      Type.Object({
        decisionId: Type.Integer(),
        decidedAt: Type.String({ format: 'date-time' }),
        walletId: Type.String(),
        action: Type.String(),
        actual: Outcome,
        simulated: Outcome,
      }),
      { description: 'The requests the simulated policies refuse or decide otherwise, in order (at most 1,000).' },
    ),
  },
  { $id: 'PolicySimulation' },
);
