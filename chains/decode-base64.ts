import { ChainInputError } from './chain-input-error.ts';
import { describeType } from './describe-type.ts';

// RFC 4648 §4: the standard alphabet, padded with '=' to a multiple of four characters.
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * Decodes strict, canonical base64 (RFC 4648 §4: standard alphabet, `=` padding, no whitespace, zero unused bits
 * in the last character) of at most `maxBytes` bytes, refusing an empty value. Node's own decoder silently skips
 * foreign characters and accepts the URL-safe alphabet, so two different strings could name the same bytes;
 * this one throws a `ChainInputError` naming `field` instead.
 */
export function decodeBase64(value: unknown, field: string, maxBytes = Number.POSITIVE_INFINITY): Uint8Array {
  if (typeof value !== 'string') {
    throw new ChainInputError(`${field} must be a base64 string, got ${describeType(value)}`, field);
  }
  if (value.length === 0) throw new ChainInputError(`${field} must not be empty`, field);
  // Checked on the length first so that a huge string is refused before it is scanned or decoded.
  if (value.length > 4 * Math.ceil(maxBytes / 3)) {
    throw new ChainInputError(`${field} is too large: at most ${maxBytes} bytes are accepted`, field);
  }
  if (!BASE64.test(value)) {
    throw new ChainInputError(
      `${field} must be standard base64 (A-Z, a-z, 0-9, + and /, padded with = to a multiple of 4 characters, no whitespace)`,
      field,
    );
  }
  const bytes = Buffer.from(value, 'base64');
  if (bytes.toString('base64') !== value) {
    throw new ChainInputError(
      `${field} is not canonical base64 (the unused bits of its last character are not zero)`,
      field,
    );
  }
  if (bytes.length > maxBytes) {
    throw new ChainInputError(`${field} is too large: ${bytes.length} bytes, at most ${maxBytes} are accepted`, field);
  }
  // A copy, not the Buffer: small Buffers share Node's pool, and callers keep and compare these bytes.
  return new Uint8Array(bytes);
}
