import { hashMessage } from 'viem';
import { encodeUtf8 } from '../encode-utf8.ts';

/**
 * The EIP-191 `personal_sign` digest of a UTF-8 text message:
 * keccak256("\x19Ethereum Signed Message:\n" ‖ decimal byte length ‖ message bytes). Throws a `ChainInputError`
 * (field `message`) for a non-string or a string that is not valid Unicode.
 */
export function hashEvmMessage(message: string): Uint8Array {
  // EIP-191 version 0x45 ('E'): the length is the byte length of the UTF-8 encoding, not the string length.
  return hashMessage({ raw: encodeUtf8(message, 'message') }, 'bytes');
}
