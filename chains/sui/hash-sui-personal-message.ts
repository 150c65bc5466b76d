import { bcs } from '@mysten/sui/bcs';
import { messageWithIntent } from '@mysten/sui/cryptography';
import { blake2b } from '@noble/hashes/blake2.js';
import { encodeUtf8 } from '../encode-utf8.ts';

/**
 * The digest a Sui wallet signs for a text message, exactly as `Keypair.signPersonalMessage` computes it:
 * BLAKE2b-256 of the PersonalMessage intent ([3, 0, 0]) followed by the BCS `vector<u8>` of the UTF-8 bytes.
 * Throws a `ChainInputError` (field `message`) for a non-string or a string that is not valid Unicode.
 */
export function hashSuiPersonalMessage(message: string): Uint8Array {
  // Sui intent signing: intent ‖ BCS(vector<u8>) (ULEB128 length, then the bytes), hashed to 32 bytes.
  const payload = bcs.vector(bcs.u8()).serialize(encodeUtf8(message, 'message')).toBytes();
  return blake2b(messageWithIntent('PersonalMessage', payload), { dkLen: 32 });
}
