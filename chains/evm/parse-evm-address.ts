import { ChainInputError } from '../chain-input-error.ts';
import { describeType } from '../describe-type.ts';
import { checksumEvmAddress } from './checksum-address.ts';

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

/**
 * Parses an EVM address (`0x` + 40 hex characters) and returns its EIP-55 checksummed form. All-lowercase and
 * all-uppercase hex carry no checksum and are accepted; mixed case is a checksum and must be correct (EIP-55),
 * since a wrong one means a mistyped address. Throws a `ChainInputError` naming `field`.
 */
export function parseEvmAddress(value: unknown, field: string): string {
  if (typeof value !== 'string') {
    throw new ChainInputError(`${field} must be an EVM address string, got ${describeType(value)}`, field);
  }
  if (!ADDRESS.test(value)) {
    throw new ChainInputError(`${field} must be an EVM address: 0x followed by 40 hex characters`, field);
  }
  const checksummed = checksumEvmAddress(value);
  const hex = value.slice(2);
  if (hex !== hex.toLowerCase() && hex !== hex.toUpperCase() && value !== checksummed) {
    throw new ChainInputError(
      `${field} has an invalid EIP-55 checksum (its mixed case does not match its hex): check it for a typo`,
      field,
    );
  }
  return checksummed;
}
