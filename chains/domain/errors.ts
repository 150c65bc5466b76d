/**
 * The base of every error the service answers from: a stable upper-case `code`, the HTTP status it answers with,
 * whether retrying may succeed (`transient`), and context fields merged into the answer's body (`details`).
 * The API's `ServiceError`, the store's `StoreError`, the actor host's `ActorHostError` and the enclave client's
 * `EnclaveClientError` extend it, and the API's error handler answers any of them in the spec's envelope.
 *
 * A shared type with no imports, like chains/wallet-types.ts: every layer may import it (store/ and enclave/
 * included, which import nothing else of ours), so it lives here rather than in api/.
 */
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
