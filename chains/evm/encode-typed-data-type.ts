import type { TypedDataTypes } from './parse-typed-data-types.ts';

function definition(name: string, types: TypedDataTypes): string {
  return `${name}(${(types[name] ?? []).map((field) => `${field.type} ${field.name}`).join(',')})`;
}

function collectStructs(name: string, types: TypedDataTypes, found: Set<string>): void {
  for (const field of types[name] ?? []) {
    let type = field.parsed;
    while (type.kind === 'array') type = type.item;
    if (type.kind === 'struct' && !found.has(type.name)) {
      found.add(type.name);
      collectStructs(type.name, types, found);
    }
  }
}

/**
 * EIP-712 `encodeType` of the struct `name`: `Name(type1 name1,…)` followed by the definitions of every struct it
 * references, directly or not, sorted by name, each once. `types` must come from `parseTypedDataTypes` (no
 * recursive structs, so the walk is as deep as the number of types at most).
 */
export function encodeTypedDataType(name: string, types: TypedDataTypes): string {
  const referenced = new Set<string>();
  collectStructs(name, types, referenced);
  referenced.delete(name);
  // EIP-712: "the set of referenced struct types is collected, sorted by name and appended to the encoding".
  let encoded = definition(name, types);
  for (const dependency of [...referenced].sort()) encoded += definition(dependency, types);
  return encoded;
}
