import type { SolanaNetwork } from '../domain/payments.ts';

/** A Solana network as policy selectors name it: `SOLANA` is `solana:mainnet`, `SOLANA_DEVNET` is `solana:devnet`. */
export function solanaPolicyNetwork(network: SolanaNetwork): string {
  return network === 'SOLANA' ? 'solana:mainnet' : 'solana:devnet';
}
