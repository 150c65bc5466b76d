/**
 * Bounds on a partner's EIP-712 typed data (`sign-typed-data`). Every cost of hashing grows with one of them,
 * so together they bound the work one request can cause; each refusal is a 400 naming the path that broke it.
 * Real typed data stays inside them: a Seaport bulk order of 256 orders uses 5 types of at most 11 members, 13
 * levels, about 1,300 array items and 9,000 values.
 */
export const TYPED_DATA_LIMITS = {
  /** Struct types in `types` (EIP712Domain, which the service derives, not counted). */
  types: 64,
  /** Members of one struct type. */
  fieldsPerType: 64,
  /**
   * Levels of nesting below `message`: a struct member or an array item is one level deeper than what holds it.
   * Checked on the types (the deepest value a type allows), so a value can never go deeper.
   */
  depth: 32,
  /** Items in one array. */
  arrayItems: 4096,
  /** Array items in the whole message. */
  totalItems: 8192,
  /** Values in the whole message (each struct, array and atomic value once), the total work of encoding it. */
  values: 16_384,
  /** Characters of the type encodings (EIP-712 `encodeType`) hashed for the struct types the message uses. */
  typeEncodingChars: 64 * 1024,
} as const;
