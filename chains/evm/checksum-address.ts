import { keccak256 } from '../keccak-256.ts';

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

/**
 * Returns the EIP-55 mixed-case checksum form of an EVM address (`0x` + 40 hex characters, any case).
 * Throws an `Error` on anything else. Existing capitalisation is not checked, only replaced.
 */
export function checksumEvmAddress(address: string): string {
  if (typeof address !== 'string' || !ADDRESS.test(address)) {
    throw new Error('EVM address must be 0x followed by 40 hex characters');
  }
  // EIP-55: hash the lowercase hex (without 0x) as ASCII; uppercase each letter whose hash nibble is ≥ 8.
  const lower = address.slice(2).toLowerCase();
  const hash = keccak256(Buffer.from(lower, 'latin1'));
  let out = '0x';
  for (let i = 0; i < 40; i++) {
    const char = lower[i]!;
    const nibble = i % 2 === 0 ? hash[i >> 1]! >> 4 : hash[i >> 1]! & 0x0f;
    out += nibble >= 8 ? char.toUpperCase() : char;
  }
  return out;
}
