import { createHash } from 'node:crypto';
import { encodeUtf8 } from '../encode-utf8.ts';

/**
 * The digest a Cosmos SDK secp256k1 key signs for a text message: SHA-256 of its raw UTF-8 bytes, as
 * `PrivKey.Sign` hashes internally (no ADR-36 sign document, no transaction envelope). Throws a
 * `ChainInputError` (field `message`) for a non-string or a string that is not valid Unicode.
 */
export function hashCosmosMessage(message: string): Uint8Array {
  const digest = createHash('sha256').update(encodeUtf8(message, 'message')).digest();
  return new Uint8Array(digest.buffer, digest.byteOffset, digest.length);
}
