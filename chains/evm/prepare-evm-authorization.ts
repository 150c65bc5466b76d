import { hashAuthorization } from 'viem/utils';
import { ChainInputError } from '../chain-input-error.ts';
import { describeType } from '../describe-type.ts';
import { isPlainObject } from '../is-plain-object.ts';
import { parseEvmAddress } from './parse-evm-address.ts';
import { parseSafeInteger } from './parse-safe-integer.ts';

/** An EIP-7702 authorization as a partner sends it; `contractAddress` is an alias of `address`. */
export interface EvmAuthorizationInput {
  address?: string;
  contractAddress?: string;
  chainId: number;
  nonce: number;
}

/** A validated EIP-7702 authorization: `digest` is what the enclave signs. */
export interface PreparedEvmAuthorization {
  /** The contract to delegate to, EIP-55 checksummed. */
  address: string;
  chainId: number;
  nonce: number;
  digest: Uint8Array;
}

const FIELDS: ReadonlySet<string> = new Set(['address', 'contractAddress', 'chainId', 'nonce']);

/**
 * Validates an EIP-7702 authorization and computes its digest keccak256(0x05 ‖ rlp([chainId, address, nonce])).
 * `chainId` 0 is allowed (valid on every chain, per EIP-7702); `contractAddress` may stand in for `address`, but
 * both given and different is refused. Throws a `ChainInputError` naming the field.
 */
export function prepareEvmAuthorization(input: EvmAuthorizationInput): PreparedEvmAuthorization {
  if (!isPlainObject(input)) {
    throw new ChainInputError(`authorization must be an object, got ${describeType(input)}`);
  }
  for (const key of Object.keys(input)) {
    if (!FIELDS.has(key)) {
      throw new ChainInputError(
        `${key.slice(0, 100)} is not an authorization field (allowed: address or contractAddress, chainId, nonce)`,
        key,
      );
    }
  }
  const address = input.address === undefined ? undefined : parseEvmAddress(input.address, 'address');
  const alias =
    input.contractAddress === undefined ? undefined : parseEvmAddress(input.contractAddress, 'contractAddress');
  if (address !== undefined && alias !== undefined && address !== alias) {
    throw new ChainInputError(
      'address and contractAddress are the same field under two names, and they differ here: send only one',
      'contractAddress',
    );
  }
  const contract = address ?? alias;
  if (contract === undefined) {
    throw new ChainInputError('address (the contract the wallet delegates to) is required', 'address');
  }
  // EIP-7702: chain_id may be 0 (any chain); chain_id and nonce are RLP integers.
  const chainId = parseSafeInteger(input.chainId, 'chainId', 0);
  const nonce = parseSafeInteger(input.nonce, 'nonce', 0);
  // EIP-7702: the authority signs keccak(MAGIC ‖ rlp([chain_id, address, nonce])) with MAGIC = 0x05.
  const digest = hashAuthorization({ address: contract as `0x${string}`, chainId, nonce, to: 'bytes' });
  return { address: contract, chainId, nonce, digest };
}
