import { assertBytes } from './assert-bytes.ts';
import type { Ed25519Signature } from './signing-types.ts';

/**
 * Encodes an ed25519 signature as the spec's plain signature for SOLANA and STELLAR (and any type's sign-raw):
 * the 64 bytes `R‖S` as 128 lowercase hex characters without `0x`. Throws a `ChainInputError` for a signature that
 * is not 64 bytes.
 */
export function encodeEd25519Signature(sig: Ed25519Signature): string {
  assertBytes(sig, 64, 'signature');
  return Buffer.from(sig.buffer, sig.byteOffset, sig.byteLength).toString('hex');
}
