import { assertBytes } from '../assert-bytes.ts';
import { ChainInputError } from '../chain-input-error.ts';
import { isPlainObject } from '../is-plain-object.ts';
import type { Ed25519Signature } from '../signing-types.ts';
import { decodeShortVec } from './decode-short-vec.ts';
import type { PreparedSolanaTransaction } from './prepare-solana-transaction.ts';

const SIGNATURE_BYTES = 64;

/**
 * Writes the wallet's ed25519 signature of `prepared.messageBytes` into its slot of a copy of the transaction
 * and returns it as base64, ready for `sendTransaction`. Every other byte, including other signers'
 * signatures, is unchanged. Does not verify the signature. Throws a `ChainInputError` for a signature that is
 * not 64 bytes or a `prepared` value that does not hang together.
 */
export function attachSolanaSignature(prepared: PreparedSolanaTransaction, sig: Ed25519Signature): string {
  assertBytes(sig, SIGNATURE_BYTES, 'signature');
  if (
    !isPlainObject(prepared) ||
    !(prepared.wire instanceof Uint8Array) ||
    !(prepared.messageBytes instanceof Uint8Array)
  ) {
    throw new ChainInputError('prepared must be the result of prepareSolanaTransaction');
  }
  const { wire, messageBytes, signerIndex } = prepared;
  const count = decodeShortVec(wire, 0);
  const messageStart = count === undefined ? -1 : count.length + count.value * SIGNATURE_BYTES;
  if (
    count === undefined ||
    !Number.isSafeInteger(signerIndex) ||
    signerIndex < 0 ||
    signerIndex >= count.value ||
    Buffer.compare(wire.subarray(messageStart), messageBytes) !== 0
  ) {
    throw new ChainInputError('prepared must be the result of prepareSolanaTransaction');
  }
  const signed = Uint8Array.from(wire);
  signed.set(sig, count.length + signerIndex * SIGNATURE_BYTES);
  return Buffer.from(signed).toString('base64');
}
