/** Strict base64 decoding, shared by the request checks (main thread) and the migration envelope (workers). */

/**
 * Decodes standard, padded base64 (RFC 4648 §4), or returns undefined when `text` is anything else: characters
 * outside the alphabet, the URL-safe alphabet, whitespace, missing or extra padding, non-zero trailing bits.
 * Node's decoder is lenient, so the decoded bytes are re-encoded and must give `text` back.
 *
 * The result owns an exact-size ArrayBuffer: a small Buffer from `Buffer.from` is a view on an 8 KB shared pool,
 * and posting such a view to a worker would copy the whole pool slab with it.
 */
export function decodeBase64Strict(text: string): Uint8Array | undefined {
  const decoded = Buffer.from(text, 'base64');
  if (decoded.toString('base64') !== text) return undefined;
  return new Uint8Array(decoded);
}
