/**
 * Decodes a Solana compact-u16 ("short vec") length at `offset`: 7 bits per byte, least significant first,
 * high bit set on every byte but the last, at most 3 bytes. Returns the value and the number of bytes read,
 * or `undefined` when the bytes run out, overflow 16 bits or use more bytes than needed (non-canonical), all
 * of which the Solana runtime refuses.
 */
export function decodeShortVec(bytes: Uint8Array, offset: number): { value: number; length: number } | undefined {
  let value = 0;
  for (let index = 0; index < 3; index++) {
    const byte = bytes[offset + index];
    if (byte === undefined) return undefined;
    value |= (byte & 0x7f) << (7 * index);
    if ((byte & 0x80) === 0) {
      // A zero final byte after the first one means a shorter encoding existed.
      if (index > 0 && byte === 0) return undefined;
      if (value > 0xffff) return undefined;
      return { value, length: index + 1 };
    }
  }
  return undefined;
}
