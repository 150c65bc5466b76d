import { Type } from '@sinclair/typebox';
import { CHAIN_ENVIRONMENTS } from './domain/payments.ts';

/**
 * The fields every CHAINS_FILE entry shares, as JSON Schema: each payment family's entry (its adapter's
 * `chainsFile.entry`) is built from them.
 */
export const RpcUrlSchema = Type.String({ pattern: '^https?://[^\\s]+$', description: 'http(s) URL of the node' });

/** Which API keys may use the chain: `development` keys are the spec's beta environment. */
export const ChainEnvironmentSchema = Type.Union(
  CHAIN_ENVIRONMENTS.map((e) => Type.Literal(e)),
  { description: 'development | production | any' },
);
