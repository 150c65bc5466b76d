/**
 * The enclave's verbs: validates parameters, runs the operation, and turns every outcome into a reply carrying
 * a result or `{code, message}`. Unexpected errors become INTERNAL with a generic message; the cause goes to the
 * log (never a secret: nothing secret lives on this thread).
 */
import type { CryptoPool } from './crypto-pool.ts';
import type { EciesPublicKey } from './ecies-key.ts';
import type { InsertOutcome, KeyRecord, KeyStore } from './key-store.ts';
import type { KeyWriter } from './key-writer.ts';
import type { EnclaveErrorCode, EnclaveOps, EnclaveReply, EnclaveRequest, Scheme } from './protocol.ts';

export const MAX_WALLET_ID_LENGTH = 128;
const SCHEMES: ReadonlySet<string> = new Set<Scheme>(['DKLS', 'ED25519']);

/** An expected failure: answered with its code and message as is. */
export class EnclaveRequestError extends Error {
  override name = 'EnclaveRequestError';
  constructor(
    readonly code: EnclaveErrorCode,
    message: string,
  ) {
    super(message);
  }
}

type GenerateResult = EnclaveOps['generateKey']['result'];

function parseGenerateParams(params: Record<string, unknown>): EnclaveOps['generateKey']['params'] {
  const { walletId, scheme } = params;
  if (typeof walletId !== 'string' || walletId.length === 0 || walletId.length > MAX_WALLET_ID_LENGTH) {
    throw new EnclaveRequestError(
      'BAD_REQUEST',
      `walletId must be a non-empty string of at most ${MAX_WALLET_ID_LENGTH} characters`,
    );
  }
  if (typeof scheme !== 'string' || !SCHEMES.has(scheme)) {
    throw new EnclaveRequestError('BAD_REQUEST', 'scheme must be DKLS or ED25519');
  }
  return { walletId, scheme: scheme as Scheme };
}

function answerExisting(record: KeyRecord, scheme: Scheme): GenerateResult {
  if (record.scheme !== scheme) {
    throw new EnclaveRequestError(
      'KEY_EXISTS',
      `wallet ${record.walletId} already holds a key of scheme ${record.scheme}`,
    );
  }
  return { publicKey: record.publicKey, created: false };
}

/** Builds the request handler over the store (reads), the key writer, the worker pool and the ECIES key. */
export function createRequestHandler(deps: {
  store: Pick<KeyStore, 'getKey'>;
  writer: Pick<KeyWriter, 'insertKey'>;
  crypto: Pick<CryptoPool, 'generate'>;
  eciesPublicKey: EciesPublicKey;
  log: (line: string) => void;
}) {
  const { store, writer, crypto, eciesPublicKey, log } = deps;
  /** Generations under way, by wallet id: a second request for the same id waits for the first. */
  const generating = new Map<string, Promise<InsertOutcome>>();

  async function generateKey(walletId: string, scheme: Scheme): Promise<GenerateResult> {
    const pending = generating.get(walletId);
    if (pending) return answerExisting((await pending).record, scheme);
    const existing = store.getKey(walletId);
    if (existing) return answerExisting(existing, scheme);

    const outcome = crypto
      .generate({ walletId, scheme })
      .then((key) => writer.insertKey({ walletId, scheme, publicKey: key.publicKey, shares: key.shares }));
    generating.set(walletId, outcome);
    try {
      const { created, record } = await outcome;
      return created ? { publicKey: record.publicKey, created: true } : answerExisting(record, scheme);
    } finally {
      generating.delete(walletId);
    }
  }

  function failure(request: EnclaveRequest, error: unknown): EnclaveReply {
    if (error instanceof EnclaveRequestError) {
      return { id: request.id, ok: false, error: { code: error.code, message: error.message } };
    }
    log(
      `enclave: ${request.op} (request ${request.id}) failed: ${error instanceof Error ? error.stack : String(error)}`,
    );
    return { id: request.id, ok: false, error: { code: 'INTERNAL', message: 'internal enclave error' } };
  }

  /**
   * Answers one request. Synchronous verbs answer synchronously; the promise of an async verb never rejects.
   */
  function handle(request: EnclaveRequest): EnclaveReply | Promise<EnclaveReply> {
    try {
      switch (request.op) {
        case 'ping':
          return { id: request.id, ok: true, result: { status: 'ok' } };
        case 'getEciesPublicKey':
          return { id: request.id, ok: true, result: eciesPublicKey };
        case 'generateKey': {
          const { walletId, scheme } = parseGenerateParams(request.params as Record<string, unknown>);
          return generateKey(walletId, scheme).then(
            (result): EnclaveReply => ({ id: request.id, ok: true, result }),
            (error: unknown) => failure(request, error),
          );
        }
        default:
          throw new EnclaveRequestError('UNKNOWN_OP', `unknown op ${JSON.stringify(String(request.op)).slice(0, 80)}`);
      }
    } catch (error) {
      return failure(request, error);
    }
  }

  return { handle };
}

export type RequestHandler = ReturnType<typeof createRequestHandler>;
