/**
 * Wire protocol between the API process (enclave/client) and the enclave process.
 *
 * A frame is a 4-byte big-endian unsigned length N (1 ≤ N ≤ MAX_FRAME_BYTES) followed by N bytes of
 * UTF-8 JSON. Requests carry a numeric `id` chosen by the client, unique among its in-flight requests,
 * so many requests are in flight on one connection at once; replies carry the same `id` and may come
 * back in any order. A reply carries a result or `{code, message}`: never a stack, never a secret.
 */

export const MAX_FRAME_BYTES = 1024 * 1024;

export type Scheme = 'DKLS' | 'ED25519';

/** Parameters and results of every verb the enclave answers. There is no export verb. */
export interface EnclaveOps {
  /** Liveness and readiness: the enclave answers once its key store is open. */
  ping: { params: Record<string, never>; result: { status: 'ok' } };
  /**
   * Generate a key for `walletId`, held as two shares (service share and user share), both sealed in the
   * enclave store and fsynced before the reply. Idempotent: the same walletId and scheme answer the
   * existing public key; the same walletId with another scheme answers `KEY_EXISTS`.
   * `publicKey` is hex without 0x: secp256k1 uncompressed (65 bytes, 04…) for DKLS, 32 raw bytes for ED25519.
   */
  generateKey: { params: { walletId: string; scheme: Scheme }; result: { publicKey: string; created: boolean } };
  /** The enclave's P-256 ECIES public key, generated and sealed at first start. */
  getEciesPublicKey: {
    params: Record<string, never>;
    result: { publicKeyPem: string; keyFingerprint: string; generatedAt: string };
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
 * - UNKNOWN_OP, BAD_REQUEST: the verb or its parameters were not acceptable.
 * - KEY_EXISTS: generateKey for a wallet id that already holds a key of another scheme.
 * - INTERNAL: anything else; the message is generic and the cause stays in the enclave's log.
 */
export type EnclaveErrorCode =
  | 'BAD_FRAME'
  | 'FRAME_TOO_LARGE'
  | 'UNKNOWN_OP'
  | 'BAD_REQUEST'
  | 'KEY_EXISTS'
  | 'INTERNAL';
