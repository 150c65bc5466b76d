/**
 * The base of every error class of the project: a stable upper-case `code`, the HTTP status it answers with,
 * whether retrying may succeed (`transient`), and context fields merged into the answer's body (`details`).
 * `ServiceError` (a catalogued code, below), the store's `StoreError`, the actor host's `ActorHostError`, the enclave
 * client's `EnclaveClientError`, the chains' `ChainInputError` and `ChainRpcError` and the rest extend it, and the
 * API's error handler answers any of them in the spec's envelope. A code outside the catalogue
 * (error-catalogue.ts) is an internal one: should it reach an answer, the handler answers 500 INTERNAL_ERROR (or 503
 * SERVICE_UNAVAILABLE when transient) and logs it.
 */
import type { ErrorCode } from './error-catalogue.ts';

export abstract class CodedError extends Error {
  readonly code: string;
  readonly httpStatus: number;
  readonly transient: boolean;
  readonly details?: Record<string, unknown>;

  constructor(
    code: string,
    httpStatus: number,
    message: string,
    opts: { transient?: boolean; details?: Record<string, unknown>; cause?: unknown } = {},
  ) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.code = code;
    this.httpStatus = httpStatus;
    this.transient = opts.transient ?? false;
    if (opts.details) this.details = opts.details;
  }
}

/**
 * An error answered to a partner or an operator as is: `code` is one of the error catalogue's (checked by the type),
 * `httpStatus` the answer's status; `transient` (default: a 5xx) says whether retrying the same request may succeed;
 * `details` are extra fields merged into the error body (for example `walletId`).
 */
export class ServiceError extends CodedError {
  declare readonly code: ErrorCode;

  constructor(
    code: ErrorCode,
    httpStatus: number,
    message: string,
    opts: { transient?: boolean; details?: Record<string, unknown>; cause?: unknown } = {},
  ) {
    super(code, httpStatus, message, { ...opts, transient: opts.transient ?? httpStatus >= 500 });
    this.name = 'ServiceError';
  }
}

export const invalidRequest = (message: string, details?: Record<string, unknown>) =>
  new ServiceError('INVALID_REQUEST', 400, message, { details });

export const walletNotFound = () => new ServiceError('WALLET_NOT_FOUND', 404, 'wallet not found');

/**
 * A failure of the project's own machinery that no partner request caused (a bad configuration, a file of the wrong
 * mode, a stored actor of a newer release): an internal code, never answered as is.
 */
export class InternalError extends CodedError {
  constructor(code: string, message: string, opts: { transient?: boolean; cause?: unknown } = {}) {
    super(code, 500, message, opts);
    this.name = 'InternalError';
  }
}

/**
 * 409 IDEMPOTENCY_KEY_IN_USE: a request with this `Idempotency-Key` is still being processed (or, for a payment, its
 * record was written by another); retrying the identical request gets that request's answer.
 */
export function idempotencyKeyInUse(): ServiceError {
  return new ServiceError(
    'IDEMPOTENCY_KEY_IN_USE',
    409,
    'a request with this Idempotency-Key is still being processed: retry the identical request shortly',
  );
}
