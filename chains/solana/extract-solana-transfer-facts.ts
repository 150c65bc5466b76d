import type { SolanaNetwork } from '../domain/payments.ts';
import { type ChainFacts, NATIVE_ASSET } from '../domain/policies.ts';
import type { TransferIntent } from '../payment-chain.ts';
import { solanaPolicyNetwork } from './solana-policy-network.ts';

/**
 * The policy facts of a transfer the service builds on Solana `network`, from its intent: `to` (the recipient's
 * wallet), `value` (lamports or token units) and `asset` (`native` or the SPL mint). The rent of a token account the
 * transfer creates for the recipient is, like the fee, not counted.
 */
export function extractSolanaTransferFacts(network: SolanaNetwork, intent: TransferIntent): ChainFacts {
  const selector = solanaPolicyNetwork(network);
  const value = BigInt(intent.value).toString();
  if (intent.kind === 'NATIVE') {
    return {
      network: selector,
      facts: { to: intent.to, value, asset: NATIVE_ASSET },
      spend: { moved: [{ asset: NATIVE_ASSET, amount: value }], complete: true },
    };
  }
  if (intent.tokenAddress === undefined) return { network: selector, facts: {}, spend: { moved: [], complete: false } };
  return {
    network: selector,
    facts: { to: intent.to, value, asset: intent.tokenAddress },
    spend: {
      moved: [
        { asset: NATIVE_ASSET, amount: '0' },
        { asset: intent.tokenAddress, amount: value },
      ],
      complete: true,
    },
  };
}
