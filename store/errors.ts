import { CodedError } from '../chains/domain/errors.ts';

/** Errors raised by store code (default status 500, not transient). */
export class StoreError extends CodedError {
  constructor(code: string, message: string, opts: { httpStatus?: number; transient?: boolean; cause?: unknown } = {}) {
    super(code, opts.httpStatus ?? 500, message, { transient: opts.transient ?? false, cause: opts.cause });
    this.name = 'StoreError';
  }
}

/** True for SQLite's unique-constraint violation. */
export function isUniqueViolation(err: unknown): boolean {
  return (err as { code?: unknown })?.code === 'SQLITE_CONSTRAINT_UNIQUE';
}

/** Wraps a driver error: SQLITE_BUSY and friends are transient; anything else is a store failure. */
export function wrapDriverError(err: unknown): StoreError {
  if (err instanceof StoreError) return err;
  const code = String((err as { code?: unknown })?.code ?? '');
  const busy = code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED');
  return new StoreError(busy ? 'STORE_BUSY' : 'STORE_ERROR', busy ? 'database is busy' : 'database error', {
    httpStatus: 503,
    transient: busy,
    cause: err,
  });
}
