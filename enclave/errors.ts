/**
 * Expected enclave failures and the per-item outcomes crypto workers return. Shared by the main thread and the
 * workers; holds no secret.
 */

import { CodedError } from '../chains/domain/errors.ts';
import type { EnclaveErrorCode } from './protocol.ts';

/** An expected failure: answered with its code and message as is (messages never carry key material). */
export class EnclaveRequestError extends CodedError {
  override name = 'EnclaveRequestError';
  declare readonly code: EnclaveErrorCode;
  constructor(code: EnclaveErrorCode, message: string) {
    super(code, 500, message);
  }
}

/** A migration payload that cannot be used: the message names the problem, never the payload's content. */
export function invalidPayload(message: string): EnclaveRequestError {
  return new EnclaveRequestError('INVALID_PAYLOAD', message);
}

/**
 * The outcome of one item of a batched worker task: items succeed or fail one by one, so a bad item fails only
 * itself. `INTERNAL` carries the cause for the log (never for the reply); other codes are answered as they are.
 */
export type ItemResult<T> = { ok: true; value: T } | { ok: false; code: EnclaveErrorCode; message: string };

/** Runs `fn` on every item, catching each failure into its own ItemResult. */
export function eachItem<I, T>(items: readonly I[], fn: (item: I) => T): ItemResult<T>[] {
  return items.map((item): ItemResult<T> => {
    try {
      return { ok: true, value: fn(item) };
    } catch (error) {
      if (error instanceof EnclaveRequestError) return { ok: false, code: error.code, message: error.message };
      return {
        ok: false,
        code: 'INTERNAL',
        message: error instanceof Error ? (error.stack ?? error.message) : 'error',
      };
    }
  });
}

/** Unwraps an ItemResult on the main thread: expected failures become EnclaveRequestErrors, INTERNAL a plain Error. */
export function unwrapItem<T>(result: ItemResult<T>): T {
  if (result.ok) return result.value;
  if (result.code === 'INTERNAL') throw new Error(`crypto worker: ${result.message}`);
  throw new EnclaveRequestError(result.code, result.message);
}
