/** A member type of EIP-712 typed data, taken apart once so that values are encoded without re-reading it. */
export type TypedDataType =
  | { kind: 'struct'; text: string; name: string }
  | { kind: 'array'; text: string; item: TypedDataType; length: number | undefined }
  | { kind: 'address' | 'bool' | 'string' | 'bytes'; text: string }
  | { kind: 'integer'; text: string; signed: boolean; bits: number }
  | { kind: 'fixed-bytes'; text: string; size: number };

const INTEGER = /^(u?)int([1-9][0-9]{0,2})$/;
const FIXED_BYTES = /^bytes([1-9][0-9]?)$/;
// A fixed array length: no leading zero, at most nine digits (the grammar viem and ethers accept).
const LENGTH = /^[1-9][0-9]{0,8}$/;

function parseBase(text: string, isStruct: (name: string) => boolean): TypedDataType | undefined {
  if (text === 'address' || text === 'bool' || text === 'string' || text === 'bytes') return { kind: text, text };
  const integer = INTEGER.exec(text);
  if (integer) {
    const bits = Number(integer[2]);
    return bits % 8 === 0 && bits <= 256 ? { kind: 'integer', text, signed: integer[1] === '', bits } : undefined;
  }
  const bytes = FIXED_BYTES.exec(text);
  if (bytes) {
    const size = Number(bytes[1]);
    return size <= 32 ? { kind: 'fixed-bytes', text, size } : undefined;
  }
  return text !== '' && !text.includes('[') && !text.includes(']') && isStruct(text)
    ? { kind: 'struct', text, name: text }
    : undefined;
}

/**
 * Takes apart an EIP-712 member type: an atomic type (address, bool, string, bytes, bytes1…32, (u)int8…256), a
 * struct for which `isStruct` answers true, or an array of either (`T[]`, `T[n]`, nested). Reads the text once
 * from its end, so the work is linear in its length whatever its shape. Returns `undefined` for anything else.
 */
export function parseTypedDataType(text: string, isStruct: (name: string) => boolean): TypedDataType | undefined {
  // EIP-712: an array type is its item type followed by `[]` (dynamic) or `[n]` (fixed); the last suffix is the
  // outermost array.
  const suffixes: { end: number; length: number | undefined }[] = [];
  let end = text.length;
  while (end > 0 && text.charCodeAt(end - 1) === 0x5d /* ] */) {
    const open = text.lastIndexOf('[', end - 1);
    if (open === -1) return undefined;
    const digits = text.slice(open + 1, end - 1);
    if (digits !== '' && !LENGTH.test(digits)) return undefined;
    suffixes.push({ end, length: digits === '' ? undefined : Number(digits) });
    end = open;
  }
  let type = parseBase(text.slice(0, end), isStruct);
  for (let i = suffixes.length - 1; i >= 0 && type !== undefined; i--) {
    const suffix = suffixes[i]!;
    type = { kind: 'array', text: text.slice(0, suffix.end), item: type, length: suffix.length };
  }
  return type;
}
