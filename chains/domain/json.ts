/**
 * Pieces of JSON text, as `JSON.stringify` writes them, for serializers of known shapes on hot paths: a call of
 * `JSON.stringify` costs about a thousand instructions even for a short string (callgrind, Node 20), most of it the
 * generic serializer's setup.
 */

/**
 * What may need escaping in a string: `"`, `\`, control characters (JSON escapes those below U+0020) and lone
 * surrogates. A string holding none is written by `JSON.stringify` as it is, between quotes.
 */
const NEEDS_ESCAPE = /["\\\p{Cc}\p{Cs}]/u;

/** `JSON.stringify(s)` for a string: quoted as it is when nothing in it needs escaping. */
export function jsonString(s: string): string {
  return NEEDS_ESCAPE.test(s) ? JSON.stringify(s) : `"${s}"`;
}

/** `JSON.stringify(n)` for a number: `null` for NaN and the infinities. */
export function jsonNumber(n: number): string {
  return Number.isFinite(n) ? String(n) : 'null';
}
