import { encodeUtf8 } from '../encode-utf8.ts';
import { keccak256 } from '../keccak-256.ts';

/**
 * The EIP-191 `personal_sign` digest of a UTF-8 text message:
 * keccak256("\x19Ethereum Signed Message:\n" ‖ decimal byte length ‖ message bytes). Throws a `ChainInputError`
 * (field `message`) for a non-string or a string that is not valid Unicode.
 */
export function hashEvmMessage(message: string): Uint8Array {
  const bytes = encodeUtf8(message, 'message');
  // EIP-191 version 0x45 ('E'): the length is the byte length of the UTF-8 encoding, not the string length.
  return keccak256(Buffer.from(`\x19Ethereum Signed Message:\n${bytes.length}`, 'latin1'), bytes);
}
