import {
  hexToBytes,
  serializeTransaction,
  type TransactionSerializable,
  type TransactionSerializableEIP1559,
  type TransactionSerializableLegacy,
} from 'viem';
import { ChainInputError } from '../chain-input-error.ts';
import { describeError } from '../describe-error.ts';
import { describeType } from '../describe-type.ts';
import { isPlainObject } from '../is-plain-object.ts';
import { keccak256 } from '../keccak-256.ts';
import { parseEvmAddress } from './parse-evm-address.ts';
import { parseEvmQuantity } from './parse-evm-quantity.ts';
import { parseSafeInteger } from './parse-safe-integer.ts';

/** An EVM transaction as a partner sends it to `sign-transaction`; amounts are decimal integer strings. */
export interface EvmTransactionInput {
  /** Recipient; absent for a contract creation, which then needs non-empty `data`. */
  to?: string;
  /** Wei. */
  value?: string;
  chainId: number;
  /** 0 (legacy, EIP-155 replay-protected) or 2 (EIP-1559). */
  type: number;
  nonce: number;
  gasLimit: string;
  /** Type 2 only, required there. */
  maxFeePerGas?: string;
  /** Type 2 only, required there; at most `maxFeePerGas`. */
  maxPriorityFeePerGas?: string;
  /** Type 0 only, required there. */
  gasPrice?: string;
  /** Calldata or init code, `0x`-prefixed hex. */
  data?: string;
}

/** A validated transaction, ready to be signed: `digest` is what the enclave signs. */
export interface PreparedEvmTransaction {
  transaction: TransactionSerializable;
  /** keccak256 of the unsigned serialization (EIP-155 for type 0, EIP-1559 for type 2). */
  digest: Uint8Array;
  chainId: number;
}

const FIELDS: ReadonlySet<string> = new Set([
  'to',
  'value',
  'chainId',
  'type',
  'nonce',
  'gasLimit',
  'maxFeePerGas',
  'maxPriorityFeePerGas',
  'gasPrice',
  'data',
]);
const DATA = /^0x(?:[0-9a-fA-F]{2})*$/;

function parseData(value: unknown): `0x${string}` {
  if (typeof value !== 'string') {
    throw new ChainInputError(`data must be a 0x-prefixed hex string, got ${describeType(value)}`, 'data');
  }
  if (!DATA.test(value)) {
    throw new ChainInputError('data must be 0x followed by an even number of hex characters', 'data');
  }
  return value.toLowerCase() as `0x${string}`;
}

function refuse(input: Record<string, unknown>, fields: readonly string[], type: number, instead: string): void {
  for (const field of fields) {
    if (input[field] !== undefined) {
      throw new ChainInputError(`${field} is not allowed on a type ${type} transaction; ${instead}`, field);
    }
  }
}

function requireQuantity(input: Record<string, unknown>, field: string, type: number): bigint {
  if (input[field] === undefined) {
    throw new ChainInputError(`${field} is required for a type ${type} transaction`, field);
  }
  return parseEvmQuantity(input[field], field);
}

/**
 * Validates a partner's EVM transaction and computes the digest to sign. Type 0 is a legacy transaction with
 * EIP-155 replay protection; type 2 an EIP-1559 one with an empty access list. Every value is kept exactly
 * (amounts as bigint); `to` is returned in its EIP-55 form and `data` in lowercase. Throws a `ChainInputError`
 * naming the field for anything missing, malformed, contradictory or unknown.
 */
export function prepareEvmTransaction(input: EvmTransactionInput): PreparedEvmTransaction {
  if (!isPlainObject(input)) {
    throw new ChainInputError(`transaction must be an object, got ${describeType(input)}`);
  }
  for (const key of Object.keys(input)) {
    if (!FIELDS.has(key)) {
      throw new ChainInputError(
        `${key.slice(0, 100)} is not a supported transaction field (allowed: ${[...FIELDS].join(', ')})`,
        key,
      );
    }
  }
  const { type } = input;
  if (type !== 0 && type !== 2) {
    const got = typeof type === 'number' ? String(type) : describeType(type);
    throw new ChainInputError(`type must be the number 0 (legacy) or 2 (EIP-1559), got ${got}`, 'type');
  }
  const chainId = parseSafeInteger(input.chainId, 'chainId', 1);
  const nonce = parseSafeInteger(input.nonce, 'nonce', 0);
  const gas = parseEvmQuantity(input.gasLimit, 'gasLimit');
  const value = input.value === undefined ? undefined : parseEvmQuantity(input.value, 'value');
  const to = input.to === undefined ? undefined : (parseEvmAddress(input.to, 'to') as `0x${string}`);
  const data = input.data === undefined ? undefined : parseData(input.data);
  if (to === undefined && (data === undefined || data === '0x')) {
    throw new ChainInputError(
      'to is required, unless the transaction creates a contract, in which case data must hold the init code',
      'to',
    );
  }

  // Absent fields stay absent (viem serializes a missing value or data as empty, which equals 0 and 0x).
  const optional = {
    ...(to === undefined ? {} : { to }),
    ...(value === undefined ? {} : { value }),
    ...(data === undefined ? {} : { data }),
  };
  let transaction: TransactionSerializableLegacy | TransactionSerializableEIP1559;
  if (type === 2) {
    refuse(input, ['gasPrice'], type, 'use maxFeePerGas and maxPriorityFeePerGas');
    const maxFeePerGas = requireQuantity(input, 'maxFeePerGas', type);
    const maxPriorityFeePerGas = requireQuantity(input, 'maxPriorityFeePerGas', type);
    if (maxPriorityFeePerGas > maxFeePerGas) {
      throw new ChainInputError(
        `maxPriorityFeePerGas (${maxPriorityFeePerGas}) must not exceed maxFeePerGas (${maxFeePerGas})`,
        'maxPriorityFeePerGas',
      );
    }
    transaction = { type: 'eip1559', chainId, nonce, gas, maxFeePerGas, maxPriorityFeePerGas, ...optional };
  } else {
    refuse(input, ['maxFeePerGas', 'maxPriorityFeePerGas'], type, 'use gasPrice, or send type 2');
    const gasPrice = requireQuantity(input, 'gasPrice', type);
    transaction = { type: 'legacy', chainId, nonce, gas, gasPrice, ...optional };
  }

  let unsigned: `0x${string}`;
  try {
    // EIP-155: a legacy payload ends with chainId, 0, 0. EIP-1559: 0x02 ‖ rlp([chainId, nonce, …, accessList]).
    unsigned = serializeTransaction(transaction);
  } catch (error) {
    throw new ChainInputError(`transaction cannot be serialized: ${describeError(error)}`);
  }
  return { transaction, digest: keccak256(hexToBytes(unsigned)), chainId };
}
