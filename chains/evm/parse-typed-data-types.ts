import { ChainInputError } from '../chain-input-error.ts';
import { describeType } from '../describe-type.ts';
import { isPlainObject } from '../is-plain-object.ts';
import { parseTypedDataType, type TypedDataType } from './parse-typed-data-type.ts';
import { TYPED_DATA_LIMITS } from './typed-data-limits.ts';

/** One member of an EIP-712 struct: its name, its type as written, and that type taken apart. */
export interface TypedDataField {
  name: string;
  type: string;
  parsed: TypedDataType;
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

/** How many levels below a value of this type its deepest part lies (0 for an atomic value). */
function levelsBelow(type: TypedDataType, structLevels: (name: string) => number): number {
  if (type.kind === 'array') return 1 + levelsBelow(type.item, structLevels);
  if (type.kind === 'struct') return structLevels(type.name);
  return 0;
}

/** The struct a member type names, through any arrays. */
function structOf(type: TypedDataType): string | undefined {
  if (type.kind === 'array') return structOf(type.item);
  return type.kind === 'struct' ? type.name : undefined;
}

/**
 * Refuses struct types that refer back to themselves, directly or through others, and types whose values would
 * nest deeper than the limit. Recursive types are refused as ethers refuses them ("circular type reference"):
 * EIP-712 leaves cyclical data undefined, and without them a type's depth is finite and checked here, once.
 */
function checkNesting(types: TypedDataTypes): void {
  const levels = new Map<string, number>();
  const visiting: string[] = [];
  // Depth-first over at most TYPED_DATA_LIMITS.types structs, so the recursion is that deep at most.
  const structLevels = (name: string): number => {
    const known = levels.get(name);
    if (known !== undefined) return known;
    visiting.push(name);
    let deepest = 0;
    const fields = types[name] ?? [];
    for (let index = 0; index < fields.length; index++) {
      const field = fields[index]!;
      const path = `types.${name}[${index}].type`;
      const target = structOf(field.parsed);
      if (target !== undefined && visiting.includes(target)) {
        const ring = [...visiting.slice(visiting.indexOf(target)), target].join(' → ');
        throw new ChainInputError(
          `${path}: ${target} refers back to itself (${ring}); recursive struct types are not accepted`,
          path,
        );
      }
      const below = 1 + levelsBelow(field.parsed, structLevels);
      if (below > TYPED_DATA_LIMITS.depth) {
        throw new ChainInputError(
          `${path} ${JSON.stringify(field.type.slice(0, 80))} makes ${name} values nest ${below} levels deep; at most ${TYPED_DATA_LIMITS.depth} are accepted`,
          path,
        );
      }
      deepest = Math.max(deepest, below);
    }
    visiting.pop();
    levels.set(name, deepest);
    return deepest;
  };
  for (const name of Object.keys(types)) structLevels(name);
}

/**
 * Checks the `types` of EIP-712 typed data: an object mapping struct names to arrays of `{ name, type }`
 * members, where each member type is an atomic type, a struct defined here, or an array (`T[]`, `T[n]`) of
 * either. `EIP712Domain` must be absent: the service derives it from the domain. At most
 * `TYPED_DATA_LIMITS.types` structs of at most `fieldsPerType` members, no recursive struct, and no type whose
 * values would nest deeper than `depth`. Returns a copy holding only names and types (each also taken apart).
 * Throws a `ChainInputError` whose field is the path inside the typed data (`types.Mail[1].type`).
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
  if (structNames.length > TYPED_DATA_LIMITS.types) {
    throw new ChainInputError(
      `types defines ${structNames.length} struct types; at most ${TYPED_DATA_LIMITS.types} are accepted`,
      'types',
    );
  }
  const isStruct = (name: string) => Object.hasOwn(types, name);
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
    if (members.length > TYPED_DATA_LIMITS.fieldsPerType) {
      throw new ChainInputError(
        `${path} has ${members.length} members; at most ${TYPED_DATA_LIMITS.fieldsPerType} are accepted`,
        path,
      );
    }
    const seen = new Set<string>();
    parsed.push([
      structName,
      members.map((member: unknown, index): TypedDataField => {
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
        const parsedType = type.length > MAX_NAME ? undefined : parseTypedDataType(type, isStruct);
        if (parsedType === undefined) {
          throw new ChainInputError(
            `${memberPath}.type ${JSON.stringify(type.slice(0, 80))} is neither an EIP-712 atomic type nor a struct defined in types`,
            `${memberPath}.type`,
          );
        }
        return { name, type, parsed: parsedType };
      }),
    ]);
  }
  const result: TypedDataTypes = Object.fromEntries(parsed);
  checkNesting(result);
  return result;
}
