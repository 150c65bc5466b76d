import type { PaymentFamily } from './domain/payments.ts';
import { evmChainsFile } from './evm/evm-chains-file.ts';
import type { ChainsFileSection } from './payment-family.ts';
import { solanaChainsFile } from './solana/solana-chains-file.ts';

/**
 * Each payment family's CHAINS_FILE section, apart from the adapters (chains/payment-families.ts) so that reading the
 * configuration (the CLI, the API's start) loads no chain library. A new payment family adds its line here too.
 */
export const chainsFileSections: Readonly<Record<PaymentFamily, ChainsFileSection>> = {
  EVM: evmChainsFile,
  SOLANA: solanaChainsFile,
};
