import { ChainInputError } from '../chain-input-error.ts';
import { describeType } from '../describe-type.ts';
import { encodeUtf8 } from '../encode-utf8.ts';
import { isPlainObject } from '../is-plain-object.ts';
import { parseEvmAddress } from './parse-evm-address.ts';
import type { TypedDataTypes } from './parse-typed-data-types.ts';

// Deeper values are refused rather than risking the stack: real typed data nests a few levels.
const MAX_DEPTH = 32;
const ARRAY = /^(.*)\[([0-9]*)\]$/;
const INTEGER = /^(u?)int([0-9]+)$/;
const FIXED_BYTES = /^bytes([0-9]+)$/;
const HEX_BYTES = /^0x(?:[0-9a-fA-F]{2})*$/;
const DECIMAL = /^(?:0|-?[1-9][0-9]*)$/;
const HEX_QUANTITY = /^0x[0-9a-fA-F]+$/;

function parseInteger(value: unknown, signed: boolean, bits: number, path: string, type: string): bigint {
  let integer: bigint;
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value)) {
      throw new ChainInputError(
        `${path} must be an integer (${type}); send integers above 2^53 - 1 as decimal strings`,
        path,
      );
    }
    integer = BigInt(value);
  } else if (typeof value === 'bigint') {
    integer = value;
  } else if (typeof value === 'string' && value.length <= 80 && (DECIMAL.test(value) || HEX_QUANTITY.test(value))) {
    integer = BigInt(value);
  } else {
    throw new ChainInputError(
      `${path} must be an integer (${type}) as a number, a decimal string or a 0x-hex string, got ${describeType(value)}`,
      path,
    );
  }
  const min = signed ? -(2n ** BigInt(bits - 1)) : 0n;
  const max = signed ? 2n ** BigInt(bits - 1) - 1n : 2n ** BigInt(bits) - 1n;
  if (integer < min || integer > max) throw new ChainInputError(`${path} is out of range for ${type}`, path);
  return integer;
}

function parseHexBytes(value: unknown, path: string, type: string, size?: number): `0x${string}` {
  if (typeof value !== 'string' || !HEX_BYTES.test(value)) {
    throw new ChainInputError(`${path} must be 0x-prefixed hex with an even number of digits (${type})`, path);
  }
  if (size !== undefined && value.length !== 2 + size * 2) {
    throw new ChainInputError(`${path} must be exactly ${size} bytes (${type}), got ${(value.length - 2) / 2}`, path);
  }
  return value.toLowerCase() as `0x${string}`;
}

/**
 * Checks one EIP-712 value against its type and returns it in the form viem hashes without surprises:
 * integers as bigint (range-checked for their size), addresses and hex bytes in lowercase, structs as new
 * objects holding exactly their declared members (every one required). Members a struct does not declare are
 * not part of EIP-712's encodeData and are left out. `types` must come from `parseTypedDataTypes`. Throws a
 * `ChainInputError` whose field is `path` extended to the offending value (`message.to.wallets[1]`).
 */
export function normalizeTypedDataValue(
  type: string,
  value: unknown,
  path: string,
  types: TypedDataTypes,
  depth = 0,
): unknown {
  if (depth > MAX_DEPTH) throw new ChainInputError(`${path} is nested more than ${MAX_DEPTH} levels deep`, path);
  const array = ARRAY.exec(type);
  if (array) {
    const [, itemType = '', length = ''] = array;
    if (!Array.isArray(value))
      throw new ChainInputError(`${path} must be an array (${type}), got ${describeType(value)}`, path);
    if (length !== '' && value.length !== Number(length)) {
      throw new ChainInputError(`${path} must hold exactly ${length} items (${type}), got ${value.length}`, path);
    }
    return value.map((item, index) => normalizeTypedDataValue(itemType, item, `${path}[${index}]`, types, depth + 1));
  }
  if (Object.hasOwn(types, type)) {
    if (!isPlainObject(value))
      throw new ChainInputError(`${path} must be an object (${type}), got ${describeType(value)}`, path);
    return Object.fromEntries(
      (types[type] ?? []).map(({ name, type: memberType }) => {
        const memberPath = `${path}.${name}`;
        if (!Object.hasOwn(value, name) || value[name] === undefined) {
          throw new ChainInputError(`${memberPath} is missing (${memberType})`, memberPath);
        }
        return [name, normalizeTypedDataValue(memberType, value[name], memberPath, types, depth + 1)];
      }),
    );
  }
  if (type === 'address') return parseEvmAddress(value, path).toLowerCase();
  if (type === 'bool') {
    if (typeof value !== 'boolean')
      throw new ChainInputError(`${path} must be true or false (bool), got ${describeType(value)}`, path);
    return value;
  }
  if (type === 'string') {
    encodeUtf8(value, path);
    return value;
  }
  if (type === 'bytes') return parseHexBytes(value, path, type);
  const fixedBytes = FIXED_BYTES.exec(type);
  if (fixedBytes) return parseHexBytes(value, path, type, Number(fixedBytes[1]));
  const integer = INTEGER.exec(type);
  if (integer) return parseInteger(value, integer[1] === '', Number(integer[2]), path, type);
  // parseTypedDataTypes admits no other type; this guards against a caller that skipped it.
  throw new ChainInputError(`${path} has an unknown type ${JSON.stringify(type.slice(0, 80))}`, path);
}
