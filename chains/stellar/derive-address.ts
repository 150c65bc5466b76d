import { parseEd25519PublicKey } from '../parse-ed25519-public-key.ts';

// SEP-23 StrKey version byte for an ed25519 public key (account ID): 6 << 3, which encodes to 'G'.
const VERSION_ED25519_PUBLIC_KEY = 6 << 3;
const BASE32_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

/** CRC-16/XMODEM: polynomial 0x1021, initial value 0, no reflection, no final xor. */
function crc16XModem(bytes: Uint8Array, length: number): number {
  let crc = 0;
  for (let i = 0; i < length; i++) {
    crc ^= bytes[i]! << 8;
    for (let bit = 0; bit < 8; bit++) {
      crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    }
  }
  return crc;
}

/** RFC 4648 base32, no padding. */
function base32(bytes: Uint8Array): string {
  let out = '';
  let buffer = 0;
  let bits = 0;
  for (const byte of bytes) {
    buffer = ((buffer << 8) | byte) & 0xffff;
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      out += BASE32_ALPHABET[(buffer >> bits) & 0x1f];
    }
  }
  if (bits > 0) out += BASE32_ALPHABET[(buffer << (5 - bits)) & 0x1f];
  return out;
}

/**
 * Derives the Stellar account ID (StrKey starting `G`, 56 characters) of an ed25519 public key given as
 * 64 hex characters (no `0x`). Throws an `Error` on malformed input.
 */
export function deriveStellarAddress(publicKeyHex: string): string {
  const publicKey = parseEd25519PublicKey(publicKeyHex);
  // SEP-23: version byte ‖ 32-byte key ‖ CRC16-XModem of the first 33 bytes (little-endian), base32.
  const data = new Uint8Array(35);
  data[0] = VERSION_ED25519_PUBLIC_KEY;
  data.set(publicKey, 1);
  const checksum = crc16XModem(data, 33);
  data[33] = checksum & 0xff;
  data[34] = checksum >> 8;
  return base32(data);
}
