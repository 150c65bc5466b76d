import { CodedError } from '../chains/coded-error.ts';
import type { ErrorCode } from './error-catalogue.ts';

export { CodedError };

/**
 * An error the API raises itself: `code` is one of the error catalogue's (checked by the type), `httpStatus` the
 * answer's status; `transient` (default: a 5xx) says whether retrying the same request may succeed; `details` are
 * extra fields merged into the error body (for example `walletId`).
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
