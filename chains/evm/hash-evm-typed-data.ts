import { ChainInputError } from '../chain-input-error.ts';
import { describeType } from '../describe-type.ts';
import { isPlainObject } from '../is-plain-object.ts';
import { keccak256 } from '../keccak-256.ts';
import { createTypedDataHasher } from './create-typed-data-hasher.ts';
import { hashTypedDataDomain } from './hash-typed-data-domain.ts';
import { parseTypedDataDomain } from './parse-typed-data-domain.ts';
import { parseTypedDataTypes } from './parse-typed-data-types.ts';

const TYPED_DATA_FIELDS: ReadonlySet<string> = new Set(['domain', 'types', 'primaryType', 'message']);
const PREFIX = Uint8Array.of(0x19, 0x01);

/**
 * The EIP-712 digest of partner typed data `{ domain, types, primaryType, message }`:
 * keccak256(0x19 ‖ 0x01 ‖ hashStruct(domain) ‖ hashStruct(message)), as `eth_signTypedData_v4` signs it.
 * `types` must not contain EIP712Domain (field `types.EIP712Domain`): it is derived from the domain fields
 * present. The work is bounded by `TYPED_DATA_LIMITS` (types, members, depth, array items, values): each struct's
 * type hash is computed once, and every value is checked against its type as it is encoded; a message member its
 * type does not declare is refused, since it would not be signed. Throws a `ChainInputError` whose field is the
 * path inside the typed data.
 */
export function hashEvmTypedData(typedData: unknown): Uint8Array {
  if (!isPlainObject(typedData)) {
    throw new ChainInputError(
      `typedData must be an object with domain, types, primaryType and message, got ${describeType(typedData)}`,
    );
  }
  for (const key of Object.keys(typedData)) {
    if (!TYPED_DATA_FIELDS.has(key)) {
      throw new ChainInputError(
        `${key.slice(0, 100)} is not a typed data field (expected domain, types, primaryType, message)`,
        key,
      );
    }
  }
  const types = parseTypedDataTypes(typedData.types);
  const { primaryType } = typedData;
  if (typeof primaryType !== 'string' || !Object.hasOwn(types, primaryType)) {
    throw new ChainInputError(
      `primaryType must name a struct defined in types (${Object.keys(types).join(', ').slice(0, 200)})`,
      'primaryType',
    );
  }
  const domain = parseTypedDataDomain(typedData.domain);
  if (!isPlainObject(typedData.message)) {
    throw new ChainInputError(`message must be an object, got ${describeType(typedData.message)}`, 'message');
  }
  const messageHash = createTypedDataHasher(types).hashStruct(primaryType, typedData.message, 'message');
  // EIP-712: encode(domainSeparator, message) = "\x19\x01" ‖ hashStruct(eip712Domain) ‖ hashStruct(message).
  return keccak256(PREFIX, hashTypedDataDomain(domain), messageHash);
}
