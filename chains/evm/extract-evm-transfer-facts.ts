import { type ChainFacts, NATIVE_ASSET } from '../domain/policies.ts';
import type { TransferIntent } from '../payment-chain.ts';

/** `transfer(address,uint256)`, as the service calls an ERC-20 contract. */
const TRANSFER_SELECTOR = '0xa9059cbb';

/**
 * The policy facts of a transfer the service builds on EVM chain `chainRef` (its decimal chain id), from the
 * transfer's intent: the payment (`to`, `value`, `asset`: `native` or the token contract) and the `tx.*` facts of
 * the transaction it becomes (a native transfer to `to`, or a call of the token's `transfer`). Addresses lower-case.
 */
export function extractEvmTransferFacts(chainRef: string, intent: TransferIntent): ChainFacts {
  const to = intent.to.toLowerCase();
  const network = `eip155:${chainRef}`;
  const value = BigInt(intent.value).toString();
  if (intent.kind === 'NATIVE') {
    return {
      network,
      facts: {
        to,
        value,
        asset: NATIVE_ASSET,
        'tx.chainId': chainRef,
        'tx.to': to,
        'tx.value': value,
        'tx.selector': '0x',
      },
      spend: { moved: [{ asset: NATIVE_ASSET, amount: value }], complete: true },
    };
  }
  if (intent.tokenAddress === undefined) return { network, facts: {}, spend: { moved: [], complete: false } };
  const token = intent.tokenAddress.toLowerCase();
  return {
    network,
    facts: {
      to,
      value,
      asset: token,
      'tx.chainId': chainRef,
      'tx.to': token,
      'tx.value': '0',
      'tx.selector': TRANSFER_SELECTOR,
    },
    spend: {
      moved: [
        { asset: NATIVE_ASSET, amount: '0' },
        { asset: token, amount: value },
      ],
      complete: true,
    },
  };
}
