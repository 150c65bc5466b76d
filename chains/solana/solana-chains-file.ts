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
      expiryProofAfterMs: Type.Optional(
        Type.Integer({
          minimum: 0,
          maximum: 3_600_000,
          description:
            'How long a signature must stay absent once its blockhash expired at finalized commitment before that proves it never landed (default 20000): a node whose status index lags its blocks needs more.',
        }),
      ),
    },
    { additionalProperties: false },
  ),
  read: (entry) => ({
    chainRef: entry['network'] as string,
    rpcUrl: entry['rpcUrl'] as string,
    environment:
      (entry['environment'] as ChainEnvironment | undefined) ??
      (entry['network'] === 'SOLANA_DEVNET' ? 'any' : 'production'),
    ...(typeof entry['expiryProofAfterMs'] === 'number' ? { expiryProofAfterMs: entry['expiryProofAfterMs'] } : {}),
  }),
};
