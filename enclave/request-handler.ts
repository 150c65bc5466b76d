/**
 * The enclave's verbs: validates parameters, runs the operation, and turns every outcome into a reply carrying
 * a result or `{code, message}`. Unexpected errors become INTERNAL with a generic message; the cause goes to the
 * log (never a secret: this thread holds sealed rows, public keys and the one-time user share string of a
 * pregen key, and no error message is built from the latter).
 */
import { hash, randomBytes } from 'node:crypto';
import { decodeBase64Strict } from './base64.ts';
import type { CryptoPool } from './crypto-pool.ts';
import type { EciesPublicKey } from './ecies-key.ts';
import { EnclaveRequestError } from './errors.ts';
import { CHALLENGE_BYTES, helloMessage, NONCE_BYTES } from './identity.ts';
import type { IdentityKey } from './identity-key.ts';
import { createKeyCache } from './key-cache.ts';
import type { KeyRotation } from './key-rotation.ts';
import type { EffectOutcome, InsertOutcome, KeyRecord, KeyStore } from './key-store.ts';
import type { KeyWriter } from './key-writer.ts';
import {
  type Custody,
  type EnclaveOps,
  type EnclaveReply,
  type EnclaveRequest,
  MAX_EFFECT_KEY_LENGTH,
  MAX_MIGRATION_PAYLOAD_BYTES,
  MAX_SIGN_MESSAGE_BYTES,
  SCHEMES,
  type Scheme,
} from './protocol.ts';
import type { SignItem } from './sign.ts';

export const MAX_WALLET_ID_LENGTH = 128;
const SCHEME_NAMES: ReadonlySet<string> = new Set<Scheme>(SCHEMES);
const CUSTODIES: ReadonlySet<string> = new Set<Custody>(['managed', 'pregen']);
/** Longest base64 text of MAX_SIGN_MESSAGE_BYTES bytes (padded): longer text is refused before decoding. */
const MAX_SIGN_MESSAGE_BASE64 = 4 * Math.ceil(MAX_SIGN_MESSAGE_BYTES / 3);
const DIGEST_BYTES = 32;
/** 1..MAX_EFFECT_KEY_LENGTH printable ASCII characters (protocol.ts). */
const EFFECT_KEY = new RegExp(`^[\\x20-\\x7e]{1,${MAX_EFFECT_KEY_LENGTH}}$`);

type GenerateResult = EnclaveOps['generateKey']['result'];
type SignResult = EnclaveOps['sign']['result'];
type MigrateResult = EnclaveOps['migrateShare']['result'];
type HelloResult = EnclaveOps['hello']['result'];
type Params = Record<string, unknown>;

function badRequest(message: string): EnclaveRequestError {
  return new EnclaveRequestError('BAD_REQUEST', message);
}

function parseWalletId(params: Params): string {
  const { walletId } = params;
  if (typeof walletId !== 'string' || walletId.length === 0 || walletId.length > MAX_WALLET_ID_LENGTH) {
    throw badRequest(`walletId must be a non-empty string of at most ${MAX_WALLET_ID_LENGTH} characters`);
  }
  return walletId;
}

function parseScheme(params: Params): Scheme {
  const { scheme } = params;
  if (typeof scheme !== 'string' || !SCHEME_NAMES.has(scheme)) {
    throw badRequest(`scheme must be ${SCHEMES.join(' or ')}`);
  }
  return scheme as Scheme;
}

function parseGenerateParams(params: Params): Required<EnclaveOps['generateKey']['params']> {
  const walletId = parseWalletId(params);
  const scheme = parseScheme(params);
  const custody = params.custody ?? 'managed';
  if (typeof custody !== 'string' || !CUSTODIES.has(custody)) throw badRequest('custody must be managed or pregen');
  return { walletId, scheme, custody: custody as Custody };
}

/** The message bytes to sign: strict base64, a 32-byte digest for DKLS, 1..MAX_SIGN_MESSAGE_BYTES for ED25519. */
function parseSignMessage(scheme: Scheme, message: unknown): Uint8Array {
  if (typeof message !== 'string') throw badRequest('message must be a base64 string');
  if (message.length > MAX_SIGN_MESSAGE_BASE64) {
    throw badRequest(`message must be at most ${MAX_SIGN_MESSAGE_BYTES} bytes`);
  }
  const bytes = decodeBase64Strict(message);
  if (!bytes) throw badRequest('message must be standard base64 with padding');
  if (scheme === 'DKLS') {
    if (bytes.length !== DIGEST_BYTES) {
      throw badRequest(`a DKLS message must be a ${DIGEST_BYTES}-byte digest, got ${bytes.length} bytes`);
    }
  } else if (bytes.length === 0 || bytes.length > MAX_SIGN_MESSAGE_BYTES) {
    throw badRequest(`an ED25519 message must be 1 to ${MAX_SIGN_MESSAGE_BYTES} bytes, got ${bytes.length}`);
  }
  return bytes;
}

/** The optional effect key of `sign`: undefined when absent, else 1..MAX_EFFECT_KEY_LENGTH printable ASCII. */
function parseEffectKey(effectKey: unknown): string | undefined {
  if (effectKey === undefined) return undefined;
  if (typeof effectKey !== 'string' || !EFFECT_KEY.test(effectKey)) {
    throw badRequest(`effectKey must be 1 to ${MAX_EFFECT_KEY_LENGTH} printable ASCII characters`);
  }
  return effectKey;
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

/** The stored key of `walletId`, which must exist and be of `scheme`. */
function requireKey<K extends { scheme: Scheme }>(key: K | undefined, walletId: string, scheme: Scheme): K {
  if (!key) throw new EnclaveRequestError('NO_KEY', `wallet ${walletId} has no key in the enclave`);
  if (key.scheme !== scheme) {
    throw badRequest(
      `scheme ${scheme} differs from the stored key's scheme: wallet ${walletId} holds a ${key.scheme} key`,
    );
  }
  return key;
}

function alreadyMigrated(walletId: string): EnclaveRequestError {
  return new EnclaveRequestError('ALREADY_MIGRATED', `the user share of wallet ${walletId} is already in the enclave`);
}

/**
 * Builds the request handler over the store (reads), the key writer, the worker pool, the ECIES key and the
 * identity key (public key and sealed row: the pool signs handshakes).
 */
export function createRequestHandler(deps: {
  store: Pick<KeyStore, 'getKey' | 'getStoredKey' | 'getEciesKey'>;
  writer: Pick<KeyWriter, 'insertKey' | 'insertUserShare' | 'recordEffect'>;
  crypto: Pick<CryptoPool, 'generate' | 'sign' | 'migrate' | 'signIdentity'>;
  eciesPublicKey: EciesPublicKey;
  identity: Pick<IdentityKey, 'publicKey' | 'sealed'>;
  log: (line: string) => void;
  /** Master-key rotation (masterKeyStatus, rotateMasterKey); bound here to the key cache and writes under way. */
  rotation: Pick<KeyRotation, 'bind' | 'status' | 'rotate'>;
  /** Wallets whose sealed signing rows stay cached on this thread (see key-cache.ts). */
  keyCacheSize?: number;
}) {
  const { store, writer, crypto, eciesPublicKey, identity, log } = deps;
  const identityPublicKey = Buffer.from(identity.publicKey).toString('base64');
  const keys = createKeyCache({ load: (walletId) => store.getStoredKey(walletId), capacity: deps.keyCacheSize });
  /** Generations under way, by wallet id: a second request for the same id waits for the first. */
  const generating = new Map<string, Promise<InsertOutcome>>();
  /** Migrations under way, by wallet id: a second one waits for the first, then runs (or finds it migrated). */
  const migrating = new Map<string, Promise<unknown>>();
  deps.rotation.bind({
    invalidate: (walletIds) => {
      for (const walletId of walletIds) keys.invalidate(walletId);
    },
    settle: async () => {
      await Promise.allSettled([...generating.values(), ...migrating.values()]);
    },
  });

  async function generateKey(walletId: string, scheme: Scheme, custody: Custody): Promise<GenerateResult> {
    const pending = generating.get(walletId);
    if (pending) return answerExisting((await pending).record, scheme);
    const existing = store.getKey(walletId);
    if (existing) return answerExisting(existing, scheme);

    let userShare: string | undefined;
    const outcome = crypto.generate({ walletId, scheme, custody }).then((key) => {
      userShare = key.userShare;
      return writer.insertKey({ walletId, scheme, publicKey: key.publicKey, shares: key.shares });
    });
    generating.set(walletId, outcome);
    try {
      const { created, record } = await outcome;
      if (!created) return answerExisting(record, scheme);
      // The user share of a pregen key leaves here, once, and only now that the service share is on disk.
      return userShare === undefined
        ? { publicKey: record.publicKey, created: true }
        : { publicKey: record.publicKey, created: true, userShare };
    } finally {
      generating.delete(walletId);
    }
  }

  function sign(params: Params): Promise<SignResult> {
    const walletId = parseWalletId(params);
    const scheme = parseScheme(params);
    const message = parseSignMessage(scheme, params.message);
    const effectKey = parseEffectKey(params.effectKey);
    const key = requireKey(keys.get(walletId), walletId, scheme);
    if (!key.hasUserShare) {
      throw new EnclaveRequestError(
        'SHARE_MISSING',
        `the user share of wallet ${walletId} is not in the enclave (a pre-generated wallet whose share was not migrated)`,
      );
    }
    const item = { walletId, scheme, publicKey: key.publicKey, shares: key.shares, message };
    // Without a key (the REST signing routes) nothing is recorded: the path and its cost are unchanged.
    if (effectKey === undefined) return crypto.sign(item);
    return signForEffect(effectKey, item);
  }

  /**
   * A keyed signature: recorded first (group commit, fsynced), signed only if the key is new or was recorded with
   * this very wallet and message; so a conflicting request is never signed, and no signature leaves before its
   * record is on disk. Recording and signing one after the other costs a request the commit's latency; the
   * writer's batching keeps it at one fsync per batch, not per signature (test/bench/enclave-sign.ts --effect-keys).
   */
  async function signForEffect(effectKey: string, item: SignItem): Promise<SignResult> {
    // An exact-size copy: a small digest Buffer is a view on an 8 KB slab, which posting to the writer would copy.
    const messageSha256 = new Uint8Array(hash('sha256', item.message, 'buffer'));
    const outcome: EffectOutcome = await writer.recordEffect({ effectKey, walletId: item.walletId, messageSha256 });
    if (outcome === 'conflict') {
      throw new EnclaveRequestError(
        'ALREADY_SIGNED',
        `effect key ${JSON.stringify(effectKey)} was already used to sign with another wallet or another message; ` +
          'nothing was signed',
      );
    }
    const signed = await crypto.sign(item);
    return outcome === 'replayed' ? { ...signed, replayed: true } : signed;
  }

  function parseMigrateParams(params: Params): EnclaveOps['migrateShare']['params'] {
    const walletId = parseWalletId(params);
    const scheme = parseScheme(params);
    const { encryptedPayload } = params;
    if (typeof encryptedPayload !== 'string' || encryptedPayload.length === 0) {
      throw badRequest('encryptedPayload must be a non-empty string');
    }
    if (Buffer.byteLength(encryptedPayload, 'utf8') > MAX_MIGRATION_PAYLOAD_BYTES) {
      throw new EnclaveRequestError(
        'PAYLOAD_TOO_LARGE',
        `encryptedPayload must be at most ${MAX_MIGRATION_PAYLOAD_BYTES} bytes`,
      );
    }
    return { walletId, scheme, encryptedPayload };
  }

  async function migrateOnce({ walletId, scheme, encryptedPayload }: EnclaveOps['migrateShare']['params']) {
    const key = requireKey(store.getStoredKey(walletId), walletId, scheme);
    if (key.user) throw alreadyMigrated(walletId);
    if (!key.service) throw new Error(`wallet ${walletId} has no service share in the key store`);
    const ecies = store.getEciesKey();
    if (!ecies) throw new Error('the ECIES key is missing from the key store');
    const share = await crypto.migrate({
      walletId,
      scheme,
      publicKey: key.publicKey,
      service: key.service,
      ecies: ecies.sealed,
      keyFingerprint: eciesPublicKey.keyFingerprint,
      encryptedPayload,
    });
    const outcome = await writer.insertUserShare({ walletId, share });
    // Before the reply: a sign that follows it must read the new row, not a cached "share missing".
    keys.invalidate(walletId);
    if (outcome === 'exists') throw alreadyMigrated(walletId);
    if (outcome !== 'created') throw new Error(`migrated share of wallet ${walletId} not stored: ${outcome}`);
  }

  async function migrateShare(params: EnclaveOps['migrateShare']['params']): Promise<MigrateResult> {
    // One migration per wallet id at a time: a later one waits, then finds the share stored (ALREADY_MIGRATED)
    // or, if the earlier one failed, runs itself.
    for (let pending = migrating.get(params.walletId); pending; pending = migrating.get(params.walletId)) {
      await pending.catch(() => undefined);
    }
    const run = migrateOnce(params).finally(() => migrating.delete(params.walletId));
    migrating.set(params.walletId, run);
    await run;
    return { migrated: true };
  }

  /** The identity handshake (identity.ts): signs the challenge with a fresh nonce of the enclave's own. */
  async function hello(params: Params): Promise<HelloResult> {
    const { challenge } = params;
    const bytes = typeof challenge === 'string' ? decodeBase64Strict(challenge) : undefined;
    if (bytes?.length !== CHALLENGE_BYTES) {
      throw badRequest(`challenge must be ${CHALLENGE_BYTES} bytes in standard base64`);
    }
    const nonce = new Uint8Array(randomBytes(NONCE_BYTES));
    const message = new Uint8Array(helloMessage(bytes, nonce, identity.publicKey));
    const signature = await crypto.signIdentity({ publicKey: identity.publicKey, sealed: identity.sealed, message });
    return {
      publicKey: identityPublicKey,
      nonce: Buffer.from(nonce).toString('base64'),
      signature: Buffer.from(signature).toString('base64'),
    };
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

  function answer(request: EnclaveRequest, result: Promise<unknown>): Promise<EnclaveReply> {
    return result.then(
      (value): EnclaveReply => ({ id: request.id, ok: true, result: value }),
      (error: unknown) => failure(request, error),
    );
  }

  /**
   * Answers one request. Synchronous verbs and parameter errors answer synchronously; the promise of an async
   * verb never rejects.
   */
  function handle(request: EnclaveRequest): EnclaveReply | Promise<EnclaveReply> {
    try {
      const params = request.params as Params;
      switch (request.op) {
        case 'ping':
          return { id: request.id, ok: true, result: { status: 'ok' } };
        case 'hello':
          return answer(request, hello(params));
        case 'getEciesPublicKey':
          return { id: request.id, ok: true, result: eciesPublicKey };
        case 'sign':
          return answer(request, sign(params));
        case 'generateKey': {
          const { walletId, scheme, custody } = parseGenerateParams(params);
          return answer(request, generateKey(walletId, scheme, custody));
        }
        case 'migrateShare':
          return answer(request, migrateShare(parseMigrateParams(params)));
        case 'masterKeyStatus':
          return answer(request, deps.rotation.status());
        case 'rotateMasterKey': {
          const { confirmKeyId } = params;
          if (
            confirmKeyId !== undefined &&
            (typeof confirmKeyId !== 'string' || !/^[0-9a-f]{16}$/.test(confirmKeyId))
          ) {
            throw badRequest('confirmKeyId must be a master key id: 16 lowercase hex characters');
          }
          return answer(request, deps.rotation.rotate(confirmKeyId === undefined ? {} : { confirmKeyId }));
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
