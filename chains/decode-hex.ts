import { hexToBytes } from '@noble/hashes/utils.js';

const HEX = /^[0-9a-fA-F]*$/;

/**
 * Decodes a hex string (no `0x` prefix, either case) of exactly `byteLength` bytes.
 * Throws an `Error` naming `label` when the value is not a string, carries a `0x` prefix,
 * has the wrong length or holds a non-hex character.
 */
export function decodeHex(value: unknown, byteLength: number, label: string): Uint8Array {
  if (typeof value !== 'string') {
    throw new Error(`${label} must be a hex string, got ${value === null ? 'null' : typeof value}`);
  }
  if (value.startsWith('0x') || value.startsWith('0X')) {
    throw new Error(`${label} must be hex without a 0x prefix`);
  }
  if (value.length !== byteLength * 2) {
    throw new Error(
      `${label} must be ${byteLength} bytes (${byteLength * 2} hex characters), got ${value.length} characters`,
    );
  }
  if (!HEX.test(value)) {
    throw new Error(`${label} must contain only hex characters (0-9, a-f)`);
  }
  return hexToBytes(value);
}
