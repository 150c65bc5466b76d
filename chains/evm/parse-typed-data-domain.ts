import { ChainInputError } from '../chain-input-error.ts';
import { describeType } from '../describe-type.ts';
import { encodeUtf8 } from '../encode-utf8.ts';
import { isPlainObject } from '../is-plain-object.ts';
import { parseEvmAddress } from './parse-evm-address.ts';
import { parseEvmQuantity } from './parse-evm-quantity.ts';

/** An EIP-712 domain with each present field in the form viem hashes. */
export interface ParsedTypedDataDomain {
  name?: string;
  version?: string;
  chainId?: bigint;
  verifyingContract?: `0x${string}`;
  salt?: `0x${string}`;
}

const SALT = /^0x[0-9a-fA-F]{64}$/;
const DOMAIN_FIELDS = ['name', 'version', 'chainId', 'verifyingContract', 'salt'];

/**
 * Checks an EIP-712 domain: any of `name` and `version` (strings), `chainId` (a non-negative integer as a
 * number or a decimal string), `verifyingContract` (an address) and `salt` (32 bytes of hex), and nothing else,
 * since EIP712Domain is derived from the fields present and any other field would not be signed. Returns the
 * fields present with chainId as bigint and hex in lowercase. Throws a `ChainInputError` whose field is
 * `domain` or `domain.<field>`.
 */
export function parseTypedDataDomain(domain: unknown): ParsedTypedDataDomain {
  if (!isPlainObject(domain))
    throw new ChainInputError(`domain must be an object, got ${describeType(domain)}`, 'domain');
  const parsed: ParsedTypedDataDomain = {};
  for (const [field, value] of Object.entries(domain)) {
    const path = `domain.${field}`;
    switch (field) {
      case 'name':
      case 'version':
        encodeUtf8(value, path);
        parsed[field] = value as string;
        break;
      case 'chainId':
        if (typeof value === 'number') {
          if (!Number.isSafeInteger(value) || value < 0) {
            throw new ChainInputError(
              `${path} must be a non-negative integer (send large ones as decimal strings)`,
              path,
            );
          }
          parsed.chainId = BigInt(value);
        } else {
          parsed.chainId = parseEvmQuantity(value, path);
        }
        break;
      case 'verifyingContract':
        parsed.verifyingContract = parseEvmAddress(value, path).toLowerCase() as `0x${string}`;
        break;
      case 'salt':
        if (typeof value !== 'string' || !SALT.test(value)) {
          throw new ChainInputError(`${path} must be 32 bytes as 0x followed by 64 hex characters (bytes32)`, path);
        }
        parsed.salt = value.toLowerCase() as `0x${string}`;
        break;
      default:
        throw new ChainInputError(
          `${path.slice(0, 100)} is not an EIP-712 domain field (allowed: ${DOMAIN_FIELDS.join(', ')})`,
          path,
        );
    }
  }
  return parsed;
}
