import { ANY_NETWORK, type ChainFacts } from '../domain/policies.ts';
import type { PreparedEvmAuthorization } from './prepare-evm-authorization.ts';

/**
 * The policy facts of an EIP-7702 authorization (`sign-authorization`), from `prepareEvmAuthorization`:
 * `authorization.address` (lower-case) and `authorization.chainId`, and `network` `eip155:<chainId>`; chain id 0 is
 * valid on every chain (EIP-7702), so it matches every selector and names no network fact. What a delegation may
 * move is unknown: every spend leaf on it is indeterminate.
 */
export function extractAuthorizationFacts(
  authorization: Pick<PreparedEvmAuthorization, 'address' | 'chainId'>,
): ChainFacts {
  return {
    network: authorization.chainId === 0 ? ANY_NETWORK : `eip155:${authorization.chainId}`,
    facts: {
      'authorization.address': authorization.address.toLowerCase(),
      'authorization.chainId': String(authorization.chainId),
    },
    spend: { moved: [], complete: false },
  };
}
