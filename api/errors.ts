import type { ErrorCode } from './error-catalogue.ts';

/**
 * The one base error of the API. `code` is the spec's upper-case code; `httpStatus` the answer's status;
 * `transient` says whether retrying the same request may succeed; `details` are extra fields merged
 * into the error body (for example `walletId`).
 */
export class ServiceError extends Error {
  readonly code: ErrorCode;
  readonly httpStatus: number;
  readonly transient: boolean;
  readonly details?: Record<string, unknown>;

  constructor(
    code: ErrorCode,
    httpStatus: number,
    message: string,
    opts: { transient?: boolean; details?: Record<string, unknown>; cause?: unknown } = {},
  ) {
    super(message, { cause: opts.cause });
    this.name = 'ServiceError';
    this.code = code;
    this.httpStatus = httpStatus;
    this.transient = opts.transient ?? httpStatus >= 500;
    if (opts.details) this.details = opts.details;
  }
}

/** Anything shaped like a ServiceError: errors from store/ and enclave/client carry the same fields. */
export interface ErrorShape {
  code: string;
  httpStatus: number;
  message: string;
  details?: Record<string, unknown>;
}

export function isErrorShape(err: unknown): err is ErrorShape {
  const e = err as Partial<ErrorShape> | null;
  return (
    typeof e === 'object' &&
    e !== null &&
    typeof e.code === 'string' &&
    typeof e.httpStatus === 'number' &&
    typeof e.message === 'string'
  );
}

export const invalidRequest = (message: string, details?: Record<string, unknown>) =>
  new ServiceError('INVALID_REQUEST', 400, message, { details });

export const walletNotFound = () => new ServiceError('WALLET_NOT_FOUND', 404, 'wallet not found');
