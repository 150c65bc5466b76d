import { ServiceError } from '../chains/domain/errors.ts';
import type { ChainEnvironment, PaymentFamily } from '../chains/domain/payments.ts';
import { chainKey } from '../chains/domain/payments.ts';
import type { KeyEnvironment } from '../chains/domain/projects.ts';
import type { PaymentChain } from '../chains/payment-chain.ts';
import { paymentFamilies } from '../chains/payment-families.ts';
import type { ChainConfig } from '../chains/payment-family.ts';
import type { ChainsFile } from './chains-config.ts';

/** How a configured chain becomes a PaymentChain: by default its family's adapter; tests may pass another. */
export type CreateChain = (family: PaymentFamily, config: ChainConfig) => PaymentChain;

/** The chains of CHAINS_FILE, as payments, fee estimates and the pollers use them. */
export interface ChainRegistry {
  /** The chain a request names, if this key may use it; otherwise the 400/403 explaining why not. */
  resolve(environment: KeyEnvironment, family: PaymentFamily, ref: string): PaymentChain;
  /** By key (`evm:<chainId>`, `solana:<network>`), for the payment actors and pollers. */
  get(key: string): PaymentChain | undefined;
  all(): PaymentChain[];
}

/** Whether a key of `environment` may use a chain of `chain` (development keys are the spec's beta). */
function allows(chain: ChainEnvironment, environment: KeyEnvironment): boolean {
  return chain === 'any' || chain === environment;
}

export function createChainRegistry(
  file: ChainsFile,
  create: CreateChain = (family, config) => paymentFamilies[family].createChain(config),
): ChainRegistry {
  const byKey = new Map<string, { chain: PaymentChain; ref: string }>();
  for (const adapter of Object.values(paymentFamilies)) {
    for (const entry of file[adapter.chainsFile.section] ?? []) {
      const config = adapter.chainsFile.read(entry);
      byKey.set(chainKey(adapter.family, config.chainRef), {
        chain: create(adapter.family, config),
        ref: config.chainRef,
      });
    }
  }

  /** The chains a key of `environment` may use, for the answer that names none of them. */
  function available(environment: KeyEnvironment) {
    return [...byKey.values()]
      .filter(({ chain }) => allows(chain.environment, environment))
      .map(({ chain, ref }) => ({ type: chain.family, ...paymentFamilies[chain.family].recordChain(ref) }))
      .map(({ type, chainId, network }) => ({ type, ...(chainId !== null ? { chainId } : { network }) }));
  }

  return {
    resolve(environment, family, ref) {
      const adapter = paymentFamilies[family];
      const found = byKey.get(chainKey(family, ref));
      const what = adapter.describeChain(ref);
      const field = `body.${adapter.chainField}`;
      if (!found) {
        const chains = available(environment);
        const listed = chains.map((c) =>
          paymentFamilies[c.type].describeChain('chainId' in c ? c.chainId! : c.network!),
        );
        throw new ServiceError(
          'CHAIN_NOT_CONFIGURED',
          400,
          `${what} is not configured on this service; ${
            listed.length > 0 ? `this key may use: ${listed.join(', ')}` : 'no chain is configured for this key'
          }`,
          { details: { field, availableChains: chains } },
        );
      }
      if (!allows(found.chain.environment, environment)) {
        throw new ServiceError(
          'CHAIN_NOT_ALLOWED',
          403,
          `${what} is not available to ${environment} API keys (it is configured for ${found.chain.environment})`,
          { details: { field } },
        );
      }
      return found.chain;
    },
    get: (key) => byKey.get(key)?.chain,
    all: () => [...byKey.values()].map(({ chain }) => chain),
  };
}
