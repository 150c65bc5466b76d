import { ChainInputError } from './chain-input-error.ts';
import { describeType } from './describe-type.ts';

// A UTF-16 surrogate that is not part of a pair: with the u flag, pairs match as one astral code point instead.
const LONE_SURROGATE = /\p{Surrogate}/u;
const encoder = new TextEncoder();

/**
 * Encodes a string as UTF-8. Refuses a non-string and a string holding an unpaired surrogate (which JSON can
 * carry as `\ud800`): `TextEncoder` would silently replace it with U+FFFD, so the bytes signed would not be the
 * text sent. Throws a `ChainInputError` naming `field`.
 */
export function encodeUtf8(value: unknown, field: string): Uint8Array {
  if (typeof value !== 'string') {
    throw new ChainInputError(`${field} must be a string, got ${describeType(value)}`, field);
  }
  if (LONE_SURROGATE.test(value)) {
    throw new ChainInputError(`${field} is not valid Unicode text (it holds an unpaired UTF-16 surrogate)`, field);
  }
  return encoder.encode(value);
}
