import { ChainInputError } from '../chain-input-error.ts';
import { describeType } from '../describe-type.ts';
import { encodeUtf8 } from '../encode-utf8.ts';
import { isPlainObject } from '../is-plain-object.ts';
import { keccak256 } from '../keccak-256.ts';
import { encodeTypedDataType } from './encode-typed-data-type.ts';
import { parseEvmAddress } from './parse-evm-address.ts';
import type { TypedDataType } from './parse-typed-data-type.ts';
import type { TypedDataField, TypedDataTypes } from './parse-typed-data-types.ts';
import { TYPED_DATA_LIMITS } from './typed-data-limits.ts';

/**
 * Where a value sits in the typed data, kept as a chain of links and written out only for an error message:
 * building a string per value would cost the length of its path each time.
 */
interface Path {
  parent: Path | undefined;
  key: string | number;
}

function render(path: Path): string {
  const keys: (string | number)[] = [];
  for (let link: Path | undefined = path; link; link = link.parent) keys.push(link.key);
  let out = '';
  for (let i = keys.length - 1; i >= 0; i--) {
    const key = keys[i]!;
    out += typeof key === 'number' ? `[${key}]` : out === '' ? key : `.${key.slice(0, 100)}`;
  }
  return out;
}

function refuse(path: Path, problem: string): ChainInputError {
  const at = render(path);
  return new ChainInputError(`${at} ${problem}`, at);
}

/** Runs a check written for a field name with the path written out only if it throws. */
function atPath<T>(path: Path, check: (field: string) => T): T {
  try {
    return check('');
  } catch (error) {
    if (!(error instanceof ChainInputError)) throw error;
    const at = render(path);
    throw new ChainInputError(`${at}${error.message}`, at);
  }
}

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const HEX_BYTES = /^0x(?:[0-9a-fA-F]{2})*$/;
const DECIMAL = /^(?:0|-?[1-9][0-9]*)$/;
const HEX_QUANTITY = /^0x[0-9a-fA-F]+$/;
const TWO_256 = 2n ** 256n;
const TWO_32 = 2 ** 32;

function parseInteger(value: unknown, type: Extract<TypedDataType, { kind: 'integer' }>, path: Path): bigint | number {
  const { signed, bits } = type;
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value)) {
      throw refuse(path, `must be an integer (${type.text}); send integers above 2^53 - 1 as decimal strings`);
    }
    // Every safe integer fits 56 bits and more (signed or not): only narrower types need the range check here.
    const fits = signed
      ? bits >= 56 || (value >= -(2 ** (bits - 1)) && value < 2 ** (bits - 1))
      : value >= 0 && (bits >= 56 || value < 2 ** bits);
    if (!fits) throw refuse(path, `is out of range for ${type.text}`);
    return value;
  }
  if (typeof value !== 'string' || value.length > 80 || !(DECIMAL.test(value) || HEX_QUANTITY.test(value))) {
    throw refuse(
      path,
      `must be an integer (${type.text}) as a number, a decimal string or a 0x-hex string, got ${describeType(value)}`,
    );
  }
  const integer = BigInt(value);
  const min = signed ? -(2n ** BigInt(bits - 1)) : 0n;
  const max = signed ? 2n ** BigInt(bits - 1) - 1n : 2n ** BigInt(bits) - 1n;
  if (integer < min || integer > max) throw refuse(path, `is out of range for ${type.text}`);
  return integer;
}

/** `integer` as a 256-bit two's complement big-endian word at `offset` (ABI encoding of intN and uintN). */
function writeInteger(out: Buffer, offset: number, integer: bigint | number): void {
  if (typeof integer === 'number' && integer >= 0) {
    out.writeUInt32BE(Math.floor(integer / TWO_32), offset + 24);
    out.writeUInt32BE(integer % TWO_32, offset + 28);
    return;
  }
  const big = BigInt(integer);
  out.write((big < 0n ? big + TWO_256 : big).toString(16).padStart(64, '0'), offset, 32, 'hex');
}

function hexBytes(value: unknown, type: string, path: Path, size?: number): string {
  if (typeof value !== 'string' || !HEX_BYTES.test(value)) {
    throw refuse(path, `must be 0x-prefixed hex with an even number of digits (${type})`);
  }
  if (size !== undefined && value.length !== 2 + size * 2) {
    throw refuse(path, `must be exactly ${size} bytes (${type}), got ${(value.length - 2) / 2}`);
  }
  return value.slice(2);
}

/**
 * The EIP-712 `hashStruct` of partner values for the struct types `types` (from `parseTypedDataTypes`), within
 * `TYPED_DATA_LIMITS`. One hasher serves one request: it computes each struct's type hash once, the first time a
 * value of that struct is hashed, and counts the values, array items and type encodings hashed against the limits.
 * Every value is checked against its type as it is encoded: integers (numbers, decimal or 0x-hex strings) within
 * their size, addresses (an EIP-55 checksum when mixed case), hex bytes, UTF-8 text; a struct value must hold
 * exactly its declared members. Throws a `ChainInputError` whose field is the path of the offending value.
 */
export function createTypedDataHasher(types: TypedDataTypes) {
  const typeHashes = new Map<string, Uint8Array>();
  let values = 0;
  let items = 0;
  let typeEncodingChars = 0;

  function typeHash(name: string): Uint8Array {
    let hash = typeHashes.get(name);
    if (hash === undefined) {
      const encoded = encodeTypedDataType(name, types);
      typeEncodingChars += encoded.length;
      if (typeEncodingChars > TYPED_DATA_LIMITS.typeEncodingChars) {
        throw new ChainInputError(
          `the type encodings of the structs the message uses reach ${typeEncodingChars} characters at ${name}; at most ${TYPED_DATA_LIMITS.typeEncodingChars} are accepted`,
          `types.${name}`,
        );
      }
      // EIP-712: typeHash = keccak256(encodeType(typeOf(s))).
      hash = keccak256(Buffer.from(encoded, 'latin1'));
      typeHashes.set(name, hash);
    }
    return hash;
  }

  function checkMembers(value: Record<string, unknown>, fields: TypedDataField[], name: string, path: Path): void {
    for (const field of fields) {
      if (!Object.hasOwn(value, field.name) || value[field.name] === undefined) {
        throw refuse({ parent: path, key: field.name }, `is missing (${field.type})`);
      }
    }
    const keys = Object.keys(value);
    if (keys.length === fields.length) return;
    // Every declared member is present, so some key is not one: EIP-712 would drop it unsigned, which a partner
    // would not expect, so it is refused.
    const declared = new Set(fields.map((field) => field.name));
    const undeclared = keys.find((key) => !declared.has(key)) ?? '';
    const list = fields.map((field) => field.name).join(', ');
    throw refuse(
      { parent: path, key: undeclared },
      `is not a member of ${name} (declared: ${list.length > 200 ? `${list.slice(0, 200)}…` : list || 'none'}); remove it or declare it in types`,
    );
  }

  function hashStruct(name: string, value: unknown, path: Path, depth: number): Uint8Array {
    if (!isPlainObject(value)) throw refuse(path, `must be an object (${name}), got ${describeType(value)}`);
    const fields = types[name] ?? [];
    checkMembers(value, fields, name, path);
    // EIP-712: encodeData(s) = typeHash ‖ enc(value₁) ‖ … ‖ enc(valueₙ), each a 32-byte word, in declared order.
    const encoded = Buffer.alloc(32 * (fields.length + 1));
    encoded.set(typeHash(name), 0);
    for (let i = 0; i < fields.length; i++) {
      const field = fields[i]!;
      encodeValue(encoded, 32 * (i + 1), field.parsed, value[field.name], { parent: path, key: field.name }, depth + 1);
    }
    // hashStruct(s) = keccak256(typeHash ‖ encodeData(s)).
    return keccak256(encoded);
  }

  /** Writes the 32-byte encoding of one value at `offset` of `out` (EIP-712 `encodeData` of a member). */
  function encodeValue(
    out: Buffer,
    offset: number,
    type: TypedDataType,
    value: unknown,
    path: Path,
    depth: number,
  ): void {
    if (depth > TYPED_DATA_LIMITS.depth) {
      throw refuse(path, `is nested more than ${TYPED_DATA_LIMITS.depth} levels deep`);
    }
    if (++values > TYPED_DATA_LIMITS.values) {
      throw refuse(path, `is value number ${values} of the message; at most ${TYPED_DATA_LIMITS.values} are accepted`);
    }
    switch (type.kind) {
      case 'struct':
        // Struct values are encoded as their hashStruct.
        out.set(hashStruct(type.name, value, path, depth), offset);
        return;
      case 'array': {
        if (!Array.isArray(value)) throw refuse(path, `must be an array (${type.text}), got ${describeType(value)}`);
        if (type.length !== undefined && value.length !== type.length) {
          throw refuse(path, `must hold exactly ${type.length} items (${type.text}), got ${value.length}`);
        }
        if (value.length > TYPED_DATA_LIMITS.arrayItems) {
          throw refuse(path, `holds ${value.length} items; at most ${TYPED_DATA_LIMITS.arrayItems} are accepted`);
        }
        items += value.length;
        if (items > TYPED_DATA_LIMITS.totalItems) {
          throw refuse(
            path,
            `brings the message's array items to ${items}; at most ${TYPED_DATA_LIMITS.totalItems} are accepted in all`,
          );
        }
        // Arrays are encoded as the keccak256 of the concatenated encodings of their items.
        const encoded = Buffer.alloc(32 * value.length);
        for (let i = 0; i < value.length; i++) {
          encodeValue(encoded, 32 * i, type.item, value[i], { parent: path, key: i }, depth + 1);
        }
        out.set(keccak256(encoded), offset);
        return;
      }
      case 'string':
        // Dynamic values (string, bytes) are encoded as the keccak256 of their contents.
        out.set(keccak256(atPath(path, (field) => encodeUtf8(value, field))), offset);
        return;
      case 'bytes':
        out.set(keccak256(Buffer.from(hexBytes(value, type.text, path), 'hex')), offset);
        return;
      case 'fixed-bytes':
        // bytes1…bytes32: left-aligned, zero-padded on the right.
        out.write(hexBytes(value, type.text, path, type.size), offset, type.size, 'hex');
        return;
      case 'bool':
        if (typeof value !== 'boolean') throw refuse(path, `must be true or false (bool), got ${describeType(value)}`);
        out[offset + 31] = value ? 1 : 0;
        return;
      case 'address': {
        const hex = typeof value === 'string' && ADDRESS.test(value) ? value.slice(2) : undefined;
        // Mixed case is an EIP-55 checksum and must be right: parseEvmAddress checks it, and explains a bad value.
        if (hex === undefined || (hex !== hex.toLowerCase() && hex !== hex.toUpperCase())) {
          atPath(path, (field) => parseEvmAddress(value, field));
        }
        if (hex === undefined) throw refuse(path, 'must be an EVM address');
        // Addresses are uint160: right-aligned in the word.
        out.write(hex, offset + 12, 20, 'hex');
        return;
      }
      case 'integer':
        writeInteger(out, offset, parseInteger(value, type, path));
        return;
    }
  }

  return {
    /** hashStruct of the struct `name` for `value`, found at `path` (for error fields) in the typed data. */
    hashStruct(name: string, value: unknown, path: string): Uint8Array {
      values++;
      return hashStruct(name, value, { parent: undefined, key: path }, 0);
    },
  };
}
