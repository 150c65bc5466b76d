import { blake2b256 } from '../blake2b-256.ts';
import { encodeUtf8 } from '../encode-utf8.ts';

/** Sui's PersonalMessage intent: scope 3, version 0, app id 0 (Sui). */
const PERSONAL_MESSAGE_INTENT = [3, 0, 0];

/** ULEB128 of a length, as BCS prefixes a vector. */
function uleb128(value: number): number[] {
  const out: number[] = [];
  do {
    let byte = value & 0x7f;
    value = Math.floor(value / 128);
    if (value > 0) byte |= 0x80;
    out.push(byte);
  } while (value > 0);
  return out;
}

/**
 * The digest a Sui wallet signs for a text message, exactly as `Keypair.signPersonalMessage` computes it:
 * BLAKE2b-256 of the PersonalMessage intent ([3, 0, 0]) followed by the BCS `vector<u8>` of the UTF-8 bytes.
 * Throws a `ChainInputError` (field `message`) for a non-string or a string that is not valid Unicode.
 */
export function hashSuiPersonalMessage(message: string): Uint8Array {
  const bytes = encodeUtf8(message, 'message');
  // Sui intent signing: intent ‖ BCS(vector<u8>) = ULEB128 length, then the bytes; hashed to 32 bytes. Built by
  // hand because the BCS library writes the vector a byte at a time (17 ms for 64 KiB).
  const header = [...PERSONAL_MESSAGE_INTENT, ...uleb128(bytes.length)];
  const payload = new Uint8Array(header.length + bytes.length);
  payload.set(header, 0);
  payload.set(bytes, header.length);
  return blake2b256(payload);
}
