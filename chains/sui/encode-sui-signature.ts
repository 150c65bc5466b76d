import { toSerializedSignature } from '@mysten/sui/cryptography';
import { Ed25519PublicKey } from '@mysten/sui/keypairs/ed25519';
import { assertBytes } from '../assert-bytes.ts';
import type { Ed25519Signature } from '../signing-types.ts';

/**
 * Encodes an ed25519 signature as a Sui serialized signature: base64 of flag 0x00 ‖ signature (64 bytes) ‖
 * public key (32 bytes), the form Sui RPCs and `verifyTransactionSignature` take. Does not verify the
 * signature. Throws a `ChainInputError` for a signature that is not 64 bytes or a key that is not 32.
 */
export function encodeSuiSignature(sig: Ed25519Signature, publicKey: Uint8Array): string {
  assertBytes(sig, 64, 'signature');
  assertBytes(publicKey, 32, 'publicKey');
  return toSerializedSignature({
    signature: sig,
    signatureScheme: 'ED25519',
    publicKey: new Ed25519PublicKey(publicKey),
  });
}
