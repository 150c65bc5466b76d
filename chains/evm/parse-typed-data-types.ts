import { ChainInputError } from '../chain-input-error.ts';
import { describeType } from '../describe-type.ts';
import { isPlainObject } from '../is-plain-object.ts';

/** One member of an EIP-712 struct. */
export interface TypedDataField {
  name: string;
  type: string;
}

/** EIP-712 struct definitions by name, as checked by `parseTypedDataTypes`. */
export type TypedDataTypes = Record<string, TypedDataField[]>;

// Struct names as viem accepts them: letters, digits, _, $ and :, and nothing that reads as an atomic type.
// Names and types longer than this are refused before any pattern runs on them.
const MAX_NAME = 256;
const STRUCT_NAME = /^[A-Za-z0-9_$:]+$/;
const ATOMIC_LOOKALIKE = /^(?:address|bool|string|(?:u?int|bytes)[0-9]*)$/;
// Member names are identifiers, so that encodeType's "Name(type name,…)" string cannot be made ambiguous.
const MEMBER_NAME = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
const ARRAY_SUFFIXES = /(?:\[(?:[1-9][0-9]{0,8})?\])*$/;
const INTEGER = /^u?int([1-9][0-9]{0,2})$/;
const FIXED_BYTES = /^bytes([1-9][0-9]?)$/;

/** Whether `type` is an EIP-712 atomic or dynamic type: address, bool, string, bytes, bytes1…32, (u)int8…256. */
function isAtomic(type: string): boolean {
  if (type === 'address' || type === 'bool' || type === 'string' || type === 'bytes') return true;
  const integer = INTEGER.exec(type);
  if (integer) return Number(integer[1]) % 8 === 0 && Number(integer[1]) <= 256;
  const bytes = FIXED_BYTES.exec(type);
  return bytes !== null && Number(bytes[1]) <= 32;
}

/**
 * Checks the `types` of EIP-712 typed data: an object mapping struct names to arrays of `{ name, type }`
 * members, where each member type is an atomic type, a struct defined here, or an array (`T[]`, `T[n]`) of
 * either. `EIP712Domain` must be absent: the service derives it from the domain. Returns a copy holding only
 * names and types. Throws a `ChainInputError` whose field is the path inside the typed data (`types.Mail[1].type`).
 */
export function parseTypedDataTypes(types: unknown): TypedDataTypes {
  if (!isPlainObject(types)) {
    throw new ChainInputError(`types must be an object of struct definitions, got ${describeType(types)}`, 'types');
  }
  if (Object.hasOwn(types, 'EIP712Domain')) {
    throw new ChainInputError(
      'types must not include EIP712Domain: the service derives it from the fields present in domain',
      'types.EIP712Domain',
    );
  }
  const structNames = Object.keys(types);
  if (structNames.length === 0) throw new ChainInputError('types must define at least one struct', 'types');
  const parsed: [string, TypedDataField[]][] = [];
  for (const structName of structNames) {
    const path = `types.${structName.slice(0, MAX_NAME)}`;
    if (structName.length > MAX_NAME || !STRUCT_NAME.test(structName) || ATOMIC_LOOKALIKE.test(structName)) {
      throw new ChainInputError(
        `${path}: a struct name must use letters, digits, _, $ or : and must not look like an atomic type`,
        path,
      );
    }
    const members = types[structName];
    if (!Array.isArray(members)) {
      throw new ChainInputError(
        `${path} must be an array of { name, type } members, got ${describeType(members)}`,
        path,
      );
    }
    const seen = new Set<string>();
    parsed.push([
      structName,
      members.map((member: unknown, index) => {
        const memberPath = `${path}[${index}]`;
        if (!isPlainObject(member)) {
          throw new ChainInputError(
            `${memberPath} must be an object { name, type }, got ${describeType(member)}`,
            memberPath,
          );
        }
        const { name, type } = member;
        if (typeof name !== 'string' || name.length > MAX_NAME || !MEMBER_NAME.test(name)) {
          throw new ChainInputError(
            `${memberPath}.name must be an identifier (letters, digits, _ or $)`,
            `${memberPath}.name`,
          );
        }
        if (seen.has(name)) throw new ChainInputError(`${path} declares ${name} twice`, `${memberPath}.name`);
        seen.add(name);
        if (typeof type !== 'string') {
          throw new ChainInputError(
            `${memberPath}.type must be a string, got ${describeType(type)}`,
            `${memberPath}.type`,
          );
        }
        const baseType = type.length > MAX_NAME ? '' : type.replace(ARRAY_SUFFIXES, '');
        if (!isAtomic(baseType) && !(Object.hasOwn(types, baseType) && baseType !== '')) {
          throw new ChainInputError(
            `${memberPath}.type ${JSON.stringify(type.slice(0, 80))} is neither an EIP-712 atomic type nor a struct defined in types`,
            `${memberPath}.type`,
          );
        }
        return { name, type };
      }),
    ]);
  }
  return Object.fromEntries(parsed);
}
