import { keccak256 } from '../keccak-256.ts';
import type { ParsedTypedDataDomain } from './parse-typed-data-domain.ts';

const utf8 = new TextEncoder();

function uint256(value: bigint): Uint8Array {
  return Buffer.from(value.toString(16).padStart(64, '0'), 'hex');
}

/**
 * The EIP-712 domain separator, hashStruct(eip712Domain), of a domain from `parseTypedDataDomain`. EIP712Domain
 * holds exactly the fields present, in the order EIP-712 lists them: name, version, chainId, verifyingContract,
 * salt (as `eth_signTypedData_v4` and viem derive it).
 */
export function hashTypedDataDomain(domain: ParsedTypedDataDomain): Uint8Array {
  const members: string[] = [];
  const words: Uint8Array[] = [];
  // string and bytes members are encoded as the keccak256 of their contents; chainId as uint256; the address
  // right-aligned in its word; the salt as bytes32.
  if (domain.name !== undefined) {
    members.push('string name');
    words.push(keccak256(utf8.encode(domain.name)));
  }
  if (domain.version !== undefined) {
    members.push('string version');
    words.push(keccak256(utf8.encode(domain.version)));
  }
  if (domain.chainId !== undefined) {
    members.push('uint256 chainId');
    words.push(uint256(domain.chainId));
  }
  if (domain.verifyingContract !== undefined) {
    members.push('address verifyingContract');
    words.push(uint256(BigInt(domain.verifyingContract)));
  }
  if (domain.salt !== undefined) {
    members.push('bytes32 salt');
    words.push(Buffer.from(domain.salt.slice(2), 'hex'));
  }
  // hashStruct(eip712Domain) = keccak256(typeHash ‖ encodeData), typeHash = keccak256("EIP712Domain(…)").
  const typeHash = keccak256(Buffer.from(`EIP712Domain(${members.join(',')})`, 'latin1'));
  return keccak256(typeHash, ...words);
}
