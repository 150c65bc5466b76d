import { type TSchema, Type } from '@sinclair/typebox';

export const WalletTypeSchema = Type.Union(
  [Type.Literal('EVM'), Type.Literal('COSMOS'), Type.Literal('SOLANA'), Type.Literal('STELLAR'), Type.Literal('SUI')],
  { description: 'Wallet type; fixed at creation.' },
);
export const SchemeSchema = Type.Union([Type.Literal('DKLS'), Type.Literal('ED25519')], {
  description: 'DKLS = secp256k1, ED25519 = ed25519. Defaults: DKLS for EVM and COSMOS, ED25519 otherwise.',
});
export const UserIdentifierTypeSchema = Type.Union(
  [Type.Literal('CUSTOM_ID'), Type.Literal('EMAIL'), Type.Literal('PHONE')],
  { description: "Kind of the partner's user identifier." },
);
export const WalletStatusSchema = Type.Union([Type.Literal('creating'), Type.Literal('ready')]);

/** The error envelope of every 4xx/5xx answer. */
export const ErrorSchema = Type.Object(
  {
    code: Type.String({ description: 'Machine-readable code, e.g. WALLET_ALREADY_EXISTS' }),
    message: Type.String({ description: 'Human-readable detail naming the problem' }),
    requestId: Type.Optional(Type.String()),
  },
  { additionalProperties: true, $id: 'Error' },
);

/** Response schemas for the error statuses a route can answer. */
export function errorResponses(...statuses: number[]): Record<number, TSchema> {
  const out: Record<number, TSchema> = {};
  for (const s of statuses) out[s] = Type.Ref('Error');
  return out;
}

export const Paginated = <T extends TSchema>(item: T) =>
  Type.Object({
    data: Type.Array(item),
    pagination: Type.Object({
      cursor: Type.Union([Type.String(), Type.Null()], { description: 'Opaque; pass back as `cursor`' }),
      hasMore: Type.Boolean(),
      limit: Type.Integer(),
    }),
  });
