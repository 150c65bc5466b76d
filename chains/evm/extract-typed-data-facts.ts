import { ANY_NETWORK, type ChainFacts } from '../domain/policies.ts';
import { isPlainObject } from '../is-plain-object.ts';
import { parseTypedDataDomain } from './parse-typed-data-domain.ts';

/**
 * The policy facts of EIP-712 typed data (`sign-typed-data`), read once `hashEvmTypedData` accepted it:
 * `typedData.domain.name|version|chainId|verifyingContract` for the domain fields present (chain id in decimal, the
 * contract lower-case), `typedData.primaryType`, and `network` `eip155:<chainId>`; without a chain id the request names
 * no network (it matches only selector-less policies), and chain id 0, which a contract on any chain may accept,
 * matches every selector. What a signature moves is unknown (a permit may move anything). Throws ChainInputError for
 * a domain `hashEvmTypedData` would refuse.
 */
export function extractTypedDataFacts(typedData: unknown): ChainFacts {
  const record = isPlainObject(typedData) ? typedData : {};
  const domain = parseTypedDataDomain(record['domain']);
  const facts: ChainFacts['facts'] = {};
  if (domain.name !== undefined) facts['typedData.domain.name'] = domain.name;
  if (domain.version !== undefined) facts['typedData.domain.version'] = domain.version;
  if (domain.chainId !== undefined) facts['typedData.domain.chainId'] = domain.chainId.toString();
  if (domain.verifyingContract !== undefined) facts['typedData.domain.verifyingContract'] = domain.verifyingContract;
  if (typeof record['primaryType'] === 'string') facts['typedData.primaryType'] = record['primaryType'];
  const network =
    domain.chainId === undefined ? null : domain.chainId === 0n ? ANY_NETWORK : `eip155:${domain.chainId}`;
  return { network, facts, spend: { moved: [], complete: false } };
}
