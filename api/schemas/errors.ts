import { type Static, type TUnsafe, Type } from '@sinclair/typebox';
import { ERROR_CATALOGUE, type ErrorCode, statusesOf } from '../../chains/domain/error-catalogue.ts';
import { CHAIN_ERROR_CODES } from '../../chains/domain/payments.ts';
import { ErrorSchema } from './common.ts';

/** An error answer's body, as the routes' types see it. */
type ErrorBody = Static<typeof ErrorSchema>;

/** What the `enum` of an error response's `code` says. */
const CODE_ENUM = 'The codes this response can carry (the error catalogue, for this route and status).';

/**
 * Codes every route can answer, whatever it does: the request and its body as the framework reads them, the
 * limits, the database, and an unexpected failure.
 */
const EVERY_ROUTE: readonly ErrorCode[] = [
  'INVALID_REQUEST',
  'INVALID_JSON',
  'PAYLOAD_TOO_LARGE',
  'UNSUPPORTED_MEDIA_TYPE',
  'URI_TOO_LONG',
  'RATE_LIMITED',
  'STORE_OVERLOADED',
  'STORE_BUSY',
  'STORE_SYNC_FAILED',
  'STORE_ERROR',
  'SERVICE_UNAVAILABLE',
  'INTERNAL_ERROR',
];

/** `/v1`: the API key and the project's IP allowlist. */
const PARTNER_AUTH: readonly ErrorCode[] = ['API_KEY_REQUIRED', 'INVALID_API_KEY', 'IP_NOT_ALLOWED'];
/** `/admin/v1`: the admin token. */
const ADMIN_AUTH: readonly ErrorCode[] = ['ADMIN_TOKEN_REQUIRED', 'INVALID_ADMIN_TOKEN'];

/** Statuses whose answer carries `Retry-After`. */
const RETRY_AFTER: Record<number, string> = {
  429: 'Seconds to wait before the next request of this key (or address).',
  503: 'Seconds to wait before retrying.',
};

/**
 * The error responses of a route from the codes it can answer, one response per status. Each response's schema is the
 * error envelope with `code` narrowed to the codes of that status (`allOf`: the `Error` component, and `code` as an
 * `enum`), so a generated client types `error.code` as their union; its description lists them as
 * `- \`CODE\`: meaning` lines for people.
 */
export function errorResponses(...codes: readonly ErrorCode[]): Record<number, TUnsafe<ErrorBody>> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of new Set(codes)) {
    for (const status of statusesOf(code)) byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const out: Record<number, TUnsafe<ErrorBody>> = {};
  for (const [status, list] of [...byStatus].sort(([a], [b]) => a - b)) {
    const lines = list.map((c) => {
      const e = ERROR_CATALOGUE[c];
      const context = 'context' in e && e.context ? ` Adds: ${e.context.join(', ')}.` : '';
      return `- \`${c}\`: ${e.meaning}${context}`;
    });
    const retryAfter = RETRY_AFTER[status];
    out[status] = Type.Unsafe<ErrorBody>({
      // @fastify/swagger's key for the response's own description: the schema itself stays the bare envelope.
      'x-response-description': `Error envelope \`{code, message, requestId, …}\`. Codes:\n${lines.join('\n')}`,
      ...(retryAfter ? { headers: { 'retry-after': { type: 'integer', description: retryAfter } } } : {}),
      allOf: [
        Type.Ref(ErrorSchema.$id!),
        Type.Object({ code: Type.Unsafe<ErrorCode>({ type: 'string', enum: list, description: CODE_ENUM }) }),
      ],
    });
  }
  return out;
}

/**
 * The OpenAPI marker of an operation whose every call is refused with one error, whatever the body, once the call is
 * authenticated and well-formed (its other error responses still apply): `x-always-error: {status, code}`. Such an operation is documented so that partners find the route and what it
 * answers, and has no success response (none is possible); test/openapi-contract.spec.ts sends each marked operation
 * and checks that it answers exactly this, and .spectral.yaml accepts an operation without a success response only
 * with the marker.
 */
export function alwaysError(code: ErrorCode): { 'x-always-error': { status: number; code: ErrorCode } } {
  const statuses = statusesOf(code);
  if (statuses.length !== 1) throw new Error(`${code} has ${statuses.length} statuses: an always-error needs one`);
  return { 'x-always-error': { status: statuses[0]!, code } };
}

/** The error responses of a `/v1` route: every route's codes, the partner's authentication, and `codes`. */
export const partnerErrors = (...codes: readonly ErrorCode[]) =>
  errorResponses(...EVERY_ROUTE, ...PARTNER_AUTH, ...codes);

/** Codes of the `Idempotency-Key` header, which every `/v1` POST takes (api/plugins/idempotency.ts). */
export const IDEMPOTENT: readonly ErrorCode[] = ['IDEMPOTENCY_CONFLICT', 'IDEMPOTENCY_KEY_IN_USE'];

/** The error responses of a `/v1` POST: a `/v1` route's, and the `Idempotency-Key` header's. */
export const partnerPostErrors = (...codes: readonly ErrorCode[]) => partnerErrors(...IDEMPOTENT, ...codes);

/** The error responses of an `/admin/v1` route: every route's codes, the admin token, and `codes`. */
export const adminErrors = (...codes: readonly ErrorCode[]) => errorResponses(...EVERY_ROUTE, ...ADMIN_AUTH, ...codes);

/** The codes of creating a wallet (partners' POST /v1/wallets and the admin's pre-generated wallets). */
export const WALLET_CREATION: readonly ErrorCode[] = [
  'WALLET_ALREADY_EXISTS',
  'KEY_GENERATION_FAILED',
  'USER_SHARE_UNAVAILABLE',
  'ENCLAVE_UNAVAILABLE',
  'ENCLAVE_TIMEOUT',
  'SERVICE_BUSY',
  'SERVICE_STOPPING',
  'ACTOR_FAULTED',
];

/** The codes of a signature over REST, before anything is sent. */
export const SIGNING: readonly ErrorCode[] = [
  'WALLET_NOT_FOUND',
  'WALLET_NOT_READY',
  'WALLET_CLAIMED',
  'WALLET_SHARE_NOT_MIGRATED',
  'UNSUPPORTED_OPERATION',
  'POLICY_DENIED',
  'POLICY_REVIEW_REQUIRED',
  'FORBIDDEN',
  'CONFLICT',
  'ENCLAVE_UNAVAILABLE',
  'ENCLAVE_TIMEOUT',
  'SIGNER_MISMATCH',
  'SERVICE_BUSY',
];

/** The codes of a payment: signing, the chain, the record and its hold. */
export const PAYMENT: readonly ErrorCode[] = [
  ...SIGNING,
  'BROADCAST_NOT_SUPPORTED',
  'CHAIN_NOT_CONFIGURED',
  'CHAIN_NOT_ALLOWED',
  'WALLET_TRANSACTION_UNRESOLVED',
  'AUTO_RETRY_NOT_SUPPORTED',
  'ADDRESS_SCREENING_UNAVAILABLE',
  ...CHAIN_ERROR_CODES,
  'SIGNING_FAILED',
  'SIGNING_INTERRUPTED',
  'SERVICE_STOPPING',
  'ACTOR_FAULTED',
];
