import createKeccakHash from 'keccak';

/** The sponge the `keccak` package's hash objects wrap (its native build, or its JavaScript one). */
interface KeccakState {
  initialize(rate: number, capacity: number): void;
  absorb(data: Buffer): void;
  squeeze(length: number): Buffer;
}

// Keccak-256: rate 1088 bits, capacity 512 bits, Keccak's own padding (the package's `keccak256` parameters).
const RATE = 1088;
const CAPACITY = 512;

/**
 * One sponge, reused for every hash (hashing is synchronous, so calls never interleave). The package's public
 * `createKeccakHash` builds a stream Transform around a fresh sponge per hash, which costs more than hashing a
 * struct's few words: EIP-712 hashes one per struct, array and string. The sponge is the package's own object,
 * reached through the hash object (pinned version); if its shape ever differs, the public path is used.
 */
const sponge: KeccakState | undefined = (() => {
  const state = (createKeccakHash('keccak256') as unknown as { _state?: Partial<KeccakState> })._state;
  return typeof state?.initialize === 'function' &&
    typeof state.absorb === 'function' &&
    typeof state.squeeze === 'function'
    ? (state as KeccakState)
    : undefined;
})();

/**
 * Keccak-256 (the pre-standard SHA-3 padding Ethereum uses) of the concatenation of `parts`, without copying
 * them together. It runs on the `keccak` package's native build (its own JavaScript build where no binary loads),
 * much faster than @noble/hashes on large inputs, whose speed let one large message hold the API's event loop,
 * and every other wallet's request with it, for milliseconds.
 */
export function keccak256(...parts: Uint8Array[]): Uint8Array {
  if (sponge === undefined) {
    const hash = createKeccakHash('keccak256');
    for (const part of parts) hash.update(Buffer.from(part.buffer, part.byteOffset, part.byteLength));
    const digest = hash.digest();
    return new Uint8Array(digest.buffer, digest.byteOffset, digest.length);
  }
  sponge.initialize(RATE, CAPACITY);
  for (const part of parts) sponge.absorb(Buffer.from(part.buffer, part.byteOffset, part.byteLength));
  const digest = sponge.squeeze(32);
  return new Uint8Array(digest.buffer, digest.byteOffset, digest.length);
}
