/**
 * Compresses an uncompressed secp256k1 public key (65 bytes, `04‖X‖Y`) to its 33-byte SEC 1 form:
 * `02‖X` when Y is even, `03‖X` when Y is odd. Does not check that the point is on the curve
 * (parse it with `parseSecp256k1PublicKey` first).
 */
export function compressSecp256k1PublicKey(publicKey: Uint8Array): Uint8Array {
  if (publicKey.length !== 65 || publicKey[0] !== 0x04) {
    throw new Error(`secp256k1 public key to compress must be 65 bytes starting 04, got ${publicKey.length} bytes`);
  }
  const compressed = new Uint8Array(33);
  compressed[0] = (publicKey[64]! & 1) === 0 ? 0x02 : 0x03;
  compressed.set(publicKey.subarray(1, 33), 1);
  return compressed;
}
