import { bcs } from '@mysten/sui/bcs';
import { blake2b256 } from '../blake2b-256.ts';
import { encodeUtf8 } from '../encode-utf8.ts';
import { prefixIntent } from './prefix-intent.ts';

const ULEB128 = bcs.uleb128();

/**
 * The digest a Sui wallet signs for a text message, exactly as `Keypair.signPersonalMessage` computes it:
 * BLAKE2b-256 of the PersonalMessage intent ([3, 0, 0]) followed by the BCS `vector<u8>` of the UTF-8 bytes.
 * Throws a `ChainInputError` (field `message`) for a non-string or a string that is not valid Unicode.
 */
export function hashSuiPersonalMessage(message: string): Uint8Array {
  const bytes = encodeUtf8(message, 'message');
  // BCS vector<u8> = ULEB128 length ‖ bytes, written in two parts: bcs.vector(bcs.u8()) serializes a byte at a
  // time (17 ms for 64 KiB).
  return blake2b256(prefixIntent('PersonalMessage', ULEB128.serialize(bytes.length).toBytes(), bytes));
}
