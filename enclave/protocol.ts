/**
 * Wire protocol between the API process (enclave/client) and the enclave process.
 *
 * A frame is a 4-byte big-endian unsigned length N (1 ≤ N ≤ MAX_FRAME_BYTES) followed by N bytes of
 * UTF-8 JSON. Requests carry a numeric `id` chosen by the client, unique among its in-flight requests,
 * so many requests are in flight on one connection at once; replies carry the same `id` and may come
 * back in any order. A reply carries a result or `{code, message}`: never a stack, never a secret (the one
 * exception: `generateKey` with `custody: 'pregen'` returns the wallet's user share once, see below).
 */
import { type Custody, SCHEMES, type Scheme } from '../chains/domain/wallets.ts';

export const MAX_FRAME_BYTES = 1024 * 1024;

/** Largest message `sign` accepts, in bytes after base64 decoding (ED25519; a DKLS digest is exactly 32). */
export const MAX_SIGN_MESSAGE_BYTES = 65536;

/**
 * Longest `effectKey` `sign` accepts, in characters (printable ASCII only: 0x20..0x7e). The actor host's keys are
 * `<actorId>:<step>:<n>` (a payment's: a UUID and two counters, about 45 characters).
 */
export const MAX_EFFECT_KEY_LENGTH = 200;

/** Largest `encryptedPayload` `migrateShare` accepts, in UTF-8 bytes (the spec's 64KB migration payload). */
export const MAX_MIGRATION_PAYLOAD_BYTES = 65536;

/** The only `algorithm` a migration envelope may name (spec, "Share migration"). */
export const MIGRATION_ALGORITHM = 'ECIES-P256-AES256-SHA256';

export type { Custody };
// The domain's key schemes and custody kinds (chains/domain/ imports nothing: the enclave loads no chain code with it).
export { SCHEMES, type Scheme };

/**
 * One segment of a user share string (spec, "Share migration"). The string is segments joined by
 * USER_SHARE_SEPARATOR, each the standard, padded base64 of this object's JSON; the segment whose `id` is the
 * wallet id carries `signer`, the 32-byte user share as 64 lowercase hex characters. The enclave emits one segment.
 */
export interface UserShareSegment {
  id: string;
  scheme: Scheme;
  signer: string;
}

/** Joins the segments of a user share string: safe because standard base64 never contains `-`. */
export const USER_SHARE_SEPARATOR = '-';

/** Parameters and results of every verb the enclave answers. There is no export verb. */
export interface EnclaveOps {
  /**
   * The identity handshake (identity.ts): the first frame on every connection, and only the first. `challenge`
   * is 32 fresh random bytes (base64); the answer is the enclave's Ed25519 identity public key, a fresh 32-byte
   * nonce and a signature over the context string, the challenge, the nonce and the key (all base64). Any other
   * first frame answers HELLO_REQUIRED and the connection closes; a second `hello` answers BAD_REQUEST.
   */
  hello: {
    params: { challenge: string };
    result: { publicKey: string; nonce: string; signature: string };
  };
  /** Liveness and readiness: the enclave answers once its key store is open. */
  ping: { params: Record<string, never>; result: { status: 'ok' } };
  /**
   * Generate a key for `walletId`, held as two shares (service share and user share), sealed in the enclave
   * store and fsynced before the reply. `publicKey` is hex without 0x: secp256k1 uncompressed (65 bytes, 04…)
   * for DKLS, 32 raw bytes for ED25519.
   *
   * `custody` (default `managed`): `managed` stores both shares. `pregen` stores only the service share and
   * answers the user share once, as a user share string (see UserShareSegment) in `userShare`, only when
   * `created` is true. If that reply is lost the user share is gone with it: the wallet can then never sign
   * nor be migrated, so the caller must use a new wallet id.
   *
   * Idempotent: the same walletId and scheme answer the existing public key with `created: false` and no
   * `userShare`, whatever `custody` either call named (custody is not recorded: a migrated pregen wallet is
   * indistinguishable from a managed one). The same walletId with another scheme answers `KEY_EXISTS`.
   */
  generateKey: {
    params: { walletId: string; scheme: Scheme; custody?: Custody };
    result: { publicKey: string; created: boolean; userShare?: string };
  };
  /**
   * Sign with a wallet's key. `message` is standard, padded base64.
   * - DKLS (secp256k1): `message` decodes to exactly 32 bytes, a digest signed as is (no hashing, no prefix),
   *   RFC 6979 deterministic nonce, low s. `signature` is r‖s (64 bytes), `recovery` the recovery id.
   * - ED25519: `message` decodes to 1..MAX_SIGN_MESSAGE_BYTES bytes, signed with pure Ed25519 (RFC 8032).
   *   `signature` is R‖S (64 bytes); no `recovery`.
   * `signature` is hex without 0x. Every signature is verified against the stored public key before it leaves.
   *
   * `effectKey` (optional; 1..MAX_EFFECT_KEY_LENGTH printable ASCII characters, else BAD_REQUEST): the durable
   * idempotency key of the effect that asks (the actor host's `<actorId>:<step>:<n>`, suffixed `#<index>` for an
   * effect's second and later signatures). The enclave signs at most one (wallet, message) per key: before it signs,
   * it records (effectKey, walletId, SHA-256 of the decoded message, time) in its store, fsynced (group commit).
   * The same key again with the same wallet and message answers the same signature again (RFC 6979 and Ed25519
   * are deterministic: the same bytes, nothing new to spend) with `replayed: true`; with another wallet or message
   * it answers ALREADY_SIGNED and signs nothing. Records are kept 30 days (see enclave/effect-records.ts). Without
   * `effectKey` nothing is recorded (the REST signing routes) and `replayed` is absent.
   * Errors: NO_KEY, SHARE_MISSING, BAD_REQUEST (also when `scheme` is not the stored key's scheme), ALREADY_SIGNED.
   */
  sign: {
    params: { walletId: string; scheme: Scheme; message: string; effectKey?: string };
    result: { signature: string; recovery?: 0 | 1; replayed?: true };
  };
  /**
   * Bring a pre-generated wallet's user share into the enclave (spec, "Share migration"). `encryptedPayload` is
   * the JSON string of `{encryptedData, keyId, ephemeral, algorithm}`, encrypted to this enclave's ECIES key
   * (`getEciesPublicKey`). Answers after the sealed user share is fsynced; the public key does not change.
   * Errors: PAYLOAD_TOO_LARGE, NO_KEY, BAD_REQUEST, INVALID_PAYLOAD, WRONG_WALLET, ALREADY_MIGRATED.
   */
  migrateShare: {
    params: { walletId: string; scheme: Scheme; encryptedPayload: string };
    result: { migrated: true };
  };
  /** The enclave's P-256 ECIES public key, generated and sealed at first start. */
  getEciesPublicKey: {
    params: Record<string, never>;
    result: { publicKeyPem: string; keyFingerprint: string; generatedAt: string };
  };
  /**
   * Where the master keys stand (enclave/key-rotation.ts). Keys are named by id (a keyed hash, never the key).
   * `state`: `idle`, `prepared` (a next key is held, not confirmed), `rotating` (rows are being re-wrapped; the
   * enclave serves throughout), `rotated` (every row is under the sealing key; the operator promotes it).
   * `rowsByKeyId` counts sealed rows per wrapping key; `error` says why a rotation stopped; `action` is the
   * operator's next step.
   */
  masterKeyStatus: {
    params: Record<string, never>;
    result: {
      state: 'idle' | 'prepared' | 'rotating' | 'rotated';
      masterKeyId: string;
      nextKeyId?: string;
      sealingKeyId: string;
      rowsByKeyId: Record<string, number>;
      /** When `rowsByKeyId` was counted (an index scan: reused for a few seconds, recounted after a change). */
      rowsCountedAt: string;
      error?: string;
      action: string;
    };
  };
  /**
   * Master-key rotation. Without `confirmKeyId`: prepares it (a file master key gets `master.key.next`, created by
   * the enclave; a key given from outside needs ENCLAVE_MASTER_KEY_NEXT at start) and answers the status with
   * `nextKeyId`. With `confirmKeyId` (that id): starts, or resumes, re-wrapping every row under it, and answers at
   * once. Errors: NEXT_KEY_MISSING, NEXT_KEY_MISMATCH.
   */
  rotateMasterKey: {
    params: { confirmKeyId?: string };
    result: EnclaveOps['masterKeyStatus']['result'];
  };
}

export type EnclaveOp = keyof EnclaveOps;

export interface EnclaveRequest<K extends EnclaveOp = EnclaveOp> {
  id: number;
  op: K;
  params: EnclaveOps[K]['params'];
}

export type EnclaveReply =
  | { id: number; ok: true; result: unknown }
  | { id: number; ok: false; error: { code: EnclaveErrorCode; message: string } };

/**
 * Codes the enclave answers with. `id` 0 is used for replies to frames whose id could not be read.
 * - BAD_FRAME: the frame was not valid JSON or not a request object (the connection stays open).
 * - FRAME_TOO_LARGE: the length prefix was 0 or above MAX_FRAME_BYTES (the connection is closed: it cannot resync).
 * - UNKNOWN_OP, BAD_REQUEST: the verb or its parameters were not acceptable (BAD_REQUEST also: a message of the
 *   wrong length, non-strict base64, or a `scheme` that is not the stored key's scheme).
 * - KEY_EXISTS: generateKey for a wallet id that already holds a key of another scheme.
 * - NO_KEY: sign or migrateShare for a wallet id that holds no key.
 * - SHARE_MISSING: sign for a pre-generated wallet whose user share is not in the enclave (not yet migrated).
 * - PAYLOAD_TOO_LARGE: migrateShare's `encryptedPayload` is over MAX_MIGRATION_PAYLOAD_BYTES.
 * - INVALID_PAYLOAD: the migration envelope or its plaintext is unusable: not JSON, wrong algorithm, a keyId that
 *   is not this enclave's key, a bad ephemeral key, a ciphertext that does not decrypt, a malformed share entry,
 *   a scheme mismatch, or a share that does not belong to the wallet's key. Nothing is stored.
 * - WRONG_WALLET: the payload decrypts but holds no share for this wallet id (a payload for another wallet).
 * - ALREADY_MIGRATED: the wallet's user share is already in the enclave (migrated before, or a managed wallet).
 * - HELLO_REQUIRED: the first frame on a connection was not `hello` (answered, then the connection closes).
 * - NEXT_KEY_MISSING: rotateMasterKey, but the master key is given from outside and no next key was given.
 * - NEXT_KEY_MISMATCH: rotateMasterKey's `confirmKeyId` is not the id of the prepared (or rotating-to) key.
 * - ALREADY_SIGNED: sign with an `effectKey` the enclave already signed for with another wallet or another message
 *   (the host never runs a signing effect twice: a bug, or a replayed frame). Nothing was signed.
 * - INTERNAL: anything else; the message is generic and the cause stays in the enclave's log.
 */
export type EnclaveErrorCode =
  | 'BAD_FRAME'
  | 'FRAME_TOO_LARGE'
  | 'UNKNOWN_OP'
  | 'BAD_REQUEST'
  | 'KEY_EXISTS'
  | 'NO_KEY'
  | 'SHARE_MISSING'
  | 'PAYLOAD_TOO_LARGE'
  | 'INVALID_PAYLOAD'
  | 'WRONG_WALLET'
  | 'ALREADY_MIGRATED'
  | 'HELLO_REQUIRED'
  | 'NEXT_KEY_MISSING'
  | 'NEXT_KEY_MISMATCH'
  | 'ALREADY_SIGNED'
  | 'INTERNAL';
