import { Type } from '@sinclair/typebox';
import { ChainEnvironmentSchema, RpcUrlSchema } from '../chains-file-entry.ts';
import { type ChainEnvironment, SOLANA_NETWORKS } from '../domain/payments.ts';
import type { ChainsFileSection } from '../payment-family.ts';

/**
 * The `solana` section of CHAINS_FILE: a network, its RPC URL and which keys may use it. Kept apart from the payment
 * adapter so that reading the configuration loads no chain library.
 */
export const solanaChainsFile: ChainsFileSection = {
  section: 'solana',
  entry: Type.Object(
    {
      network: Type.Union(
        SOLANA_NETWORKS.map((n) => Type.Literal(n)),
        { description: SOLANA_NETWORKS.join(' | ') },
      ),
      rpcUrl: RpcUrlSchema,
      /** Default: `any` for SOLANA_DEVNET (the beta network), `production` for SOLANA. */
      environment: Type.Optional(ChainEnvironmentSchema),
    },
    { additionalProperties: false },
  ),
  read: (entry) => ({
    chainRef: entry['network'] as string,
    rpcUrl: entry['rpcUrl'] as string,
    environment:
      (entry['environment'] as ChainEnvironment | undefined) ??
      (entry['network'] === 'SOLANA_DEVNET' ? 'any' : 'production'),
  }),
};
