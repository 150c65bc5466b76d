import { secp256k1 } from '@noble/curves/secp256k1.js';
import { decodeHex } from './decode-hex.ts';

const UNCOMPRESSED_BYTES = 65;
const LABEL = 'secp256k1 public key';

/**
 * Decodes an uncompressed secp256k1 public key as the enclave returns it (130 hex characters, `04‖X‖Y`,
 * no `0x`) and checks that it is a point on the curve, so that every address derived from it (EVM from
 * X‖Y, Cosmos from X and the parity of Y) belongs to the same key. Returns the 65 bytes.
 */
export function parseSecp256k1PublicKey(publicKeyHex: string): Uint8Array {
  if (typeof publicKeyHex === 'string' && publicKeyHex.length === 66 && /^0[23]/.test(publicKeyHex)) {
    throw new Error(`${LABEL} must be uncompressed (65 bytes, starting 04), got a 33-byte compressed key`);
  }
  const bytes = decodeHex(publicKeyHex, UNCOMPRESSED_BYTES, LABEL);
  if (bytes[0] !== 0x04) {
    throw new Error(`${LABEL} must start with 04 (uncompressed form), got ${publicKeyHex.slice(0, 2)}`);
  }
  try {
    // SEC 1 §2.3.4: decoding an uncompressed point checks y² = x³ + 7 (mod p).
    secp256k1.Point.fromBytes(bytes);
  } catch {
    throw new Error(`${LABEL} is not a point on the secp256k1 curve`);
  }
  return bytes;
}
