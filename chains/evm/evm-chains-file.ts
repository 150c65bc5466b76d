import { Type } from '@sinclair/typebox';
import { ChainEnvironmentSchema, RpcUrlSchema } from '../chains-file-entry.ts';
import type { ChainEnvironment } from '../domain/payments.ts';
import type { ChainsFileSection } from '../payment-family.ts';

/**
 * The `evm` section of CHAINS_FILE: a chain id, its RPC URL and which keys may use it. Kept apart from the payment
 * adapter so that reading the configuration loads no chain library.
 */
export const evmChainsFile: ChainsFileSection = {
  section: 'evm',
  entry: Type.Object(
    { chainId: Type.Integer({ minimum: 1 }), rpcUrl: RpcUrlSchema, environment: ChainEnvironmentSchema },
    { additionalProperties: false },
  ),
  read: (entry) => ({
    chainRef: String(entry['chainId']),
    rpcUrl: entry['rpcUrl'] as string,
    environment: entry['environment'] as ChainEnvironment,
  }),
};
