import { type Static, type TSchema, type TUnsafe, Type } from '@sinclair/typebox';
import { ROLE_PATTERN } from '../../chains/domain/approvals.ts';
import { SCHEMES, USER_IDENTIFIER_TYPES, WALLET_STATUSES, WALLET_TYPES } from '../../chains/domain/wallets.ts';

/**
 * Pattern for free text: at least one non-space character, and well-formed Unicode (a lone UTF-16
 * surrogate cannot be stored as UTF-8 and would read back as something else).
 */
export const TEXT_PATTERN = '^(?=[\\s\\S]*\\S)\\P{Cs}+$';

/** Page-size query parameter: an integer from 1 to 100, as a string. */
export const LIMIT_PATTERN = '^(100|[1-9][0-9]?)$';

/** Human wording of the patterns above, for validation messages. */
export const PATTERN_WORDING: Record<string, string> = {
  [TEXT_PATTERN]: 'must be non-blank, well-formed Unicode text',
  [LIMIT_PATTERN]: 'must be an integer from 1 to 100',
  [ROLE_PATTERN]: 'must be a role name: a letter or digit, then letters, digits and _ . - :, at most 64 characters',
};

/** A string enum as JSON Schema `enum` (so a wrong value's message can list the allowed ones). */
export const StringEnum = <const T extends readonly string[]>(values: T, opts: { description?: string } = {}) =>
  Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...opts });

export const WalletTypeSchema = StringEnum(WALLET_TYPES, {
  description: 'Wallet type; fixed at creation.',
});
export const SchemeSchema = StringEnum(SCHEMES, {
  description: 'DKLS = secp256k1, ED25519 = ed25519. Defaults: DKLS for EVM and COSMOS, ED25519 otherwise.',
});
export const UserIdentifierTypeSchema = StringEnum(USER_IDENTIFIER_TYPES, {
  description: "Kind of the partner's user identifier.",
});
export const WalletStatusSchema = StringEnum(WALLET_STATUSES);

/** The error envelope of every 4xx/5xx answer. */
export const ErrorSchema = Type.Object(
  {
    code: Type.String({
      description:
        'Machine-readable code, e.g. WALLET_ALREADY_EXISTS. Each error response narrows it to the codes it can carry.',
    }),
    message: Type.String({ description: 'Human-readable detail naming the problem' }),
    requestId: Type.Optional(Type.String()),
  },
  { additionalProperties: true, $id: 'Error' },
);

/**
 * A reference to a named schema (one with an `$id`, registered on the listener: api/schemas/components.ts). The
 * OpenAPI document shows it as `#/components/schemas/<$id>`, so generated clients name the type; the reference keeps
 * the schema's static type for the route's handler.
 */
export function ref<T extends TSchema>(schema: T): TUnsafe<Static<T>> {
  if (!schema.$id) throw new Error('ref() needs a schema with an $id');
  return Type.Unsafe<Static<T>>(Type.Ref(schema.$id));
}

/** The `pagination` object of every list answer. */
export const Pagination = Type.Object(
  {
    cursor: Type.Union([Type.String(), Type.Null()], { description: 'Opaque; pass back as `cursor`' }),
    hasMore: Type.Boolean(),
    limit: Type.Integer(),
  },
  { $id: 'Pagination' },
);

/** The list envelope `{data: [item…], pagination}`, named `$id` (items by reference when the item is named). */
export const Paginated = <T extends TSchema>(item: T, $id: string) =>
  Type.Object(
    { data: Type.Array(item.$id ? ref(item) : item), pagination: ref(Pagination) },
    { $id, description: 'A page of the list; pass `pagination.cursor` back as `cursor` for the next one.' },
  );

/** Response headers as the OpenAPI document shows them (name → JSON schema with a description). */
export type ResponseHeaders = Record<string, { type: 'integer' | 'string'; description: string }>;

/**
 * A success response's schema with the description (and headers) the OpenAPI document shows for it. A named schema
 * is referenced, not copied, so the document shows its component.
 */
export const ok = <T extends TSchema>(schema: T, description: string, headers?: ResponseHeaders): TUnsafe<Static<T>> =>
  Type.Unsafe<Static<T>>({
    ...(schema.$id ? ref(schema) : schema),
    description,
    ...(headers ? { headers } : {}),
  });

/** What every `/v1` answer carries: the key's rate limit (@fastify/rate-limit). */
export const RATE_LIMIT_HEADERS: ResponseHeaders = {
  'x-ratelimit-limit': {
    type: 'integer',
    description: "Requests a minute this API key may make (its project's plan).",
  },
  'x-ratelimit-remaining': { type: 'integer', description: 'Requests left in the current minute.' },
  'x-ratelimit-reset': { type: 'integer', description: 'Seconds until the minute starts again.' },
};

/** The record a broadcasting call created (also on its failure answers once the record exists). */
export const TRANSACTION_ID_HEADER: ResponseHeaders = {
  'x-transaction-id': {
    type: 'string',
    description: 'The transaction record: GET /v1/wallets/{walletId}/transactions/{id}.',
  },
};
