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

let lastNumber = Number.NaN;
let lastNumberJson = 'null';

/**
 * `JSON.stringify(n)` for a number: `null` for NaN and the infinities. The last number written is remembered: a
 * timestamp past 2^31 takes about 250 ns to write, and a decision writes its time twice (its request and its log
 * entry), as do the decisions of one millisecond.
 */
export function jsonNumber(n: number): string {
  if (n === lastNumber) return lastNumberJson;
  if (!Number.isFinite(n)) return 'null';
  lastNumber = n;
  lastNumberJson = String(n);
  return lastNumberJson;
}
