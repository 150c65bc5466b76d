import { ServiceError } from '../chains/domain/errors.ts';
import type { ChainEnvironment, PaymentFamily, SolanaNetwork } from '../chains/domain/payments.ts';
import type { KeyEnvironment } from '../chains/domain/projects.ts';
import type { PaymentChain } from '../chains/payment-chain.ts';
import type { ChainsFile } from './chains-config.ts';

/** How a configured chain entry becomes a PaymentChain (the families' factories; tests may pass others). */
export interface ChainFactories {
  evm(config: { chainId: number; rpcUrl: string; environment: ChainEnvironment }): PaymentChain;
  solana(config: { network: SolanaNetwork; rpcUrl: string; environment: ChainEnvironment }): PaymentChain;
}

/** The chains of CHAINS_FILE, as payments, fee estimates and the pollers use them. */
export interface ChainRegistry {
  /** The chain a request names, if this key may use it; otherwise the 400/403 explaining why not. */
  resolve(environment: KeyEnvironment, family: PaymentFamily, ref: string): PaymentChain;
  /** By key (`evm:<chainId>`, `solana:<network>`), for the payment actors and pollers. */
  get(key: string): PaymentChain | undefined;
  all(): PaymentChain[];
}

export const evmChainKey = (chainId: number | string) => `evm:${chainId}`;
export const solanaChainKey = (network: string) => `solana:${network}`;

/** Whether a key of `environment` may use a chain of `chain` (development keys are the spec's beta). */
function allows(chain: ChainEnvironment, environment: KeyEnvironment): boolean {
  return chain === 'any' || chain === environment;
}

export function createChainRegistry(file: ChainsFile, factories: ChainFactories): ChainRegistry {
  const byKey = new Map<string, PaymentChain>();
  for (const c of file.evm ?? []) byKey.set(evmChainKey(c.chainId), factories.evm(c));
  for (const c of file.solana ?? []) {
    const environment = c.environment ?? (c.network === 'SOLANA_DEVNET' ? 'any' : 'production');
    byKey.set(solanaChainKey(c.network), factories.solana({ ...c, environment }));
  }
  return {
    resolve(environment, family, ref) {
      const key = family === 'EVM' ? evmChainKey(ref) : solanaChainKey(ref);
      const chain = byKey.get(key);
      const what = family === 'EVM' ? `EVM chain ${ref}` : `Solana network ${ref}`;
      if (!chain) {
        throw new ServiceError('CHAIN_NOT_CONFIGURED', 400, `${what} is not configured on this service`, {
          details: { field: family === 'EVM' ? 'body.chainId' : 'body.network' },
        });
      }
      if (!allows(chain.environment, environment)) {
        throw new ServiceError(
          'CHAIN_NOT_ALLOWED',
          403,
          `${what} is not available to ${environment} API keys (it is configured for ${chain.environment})`,
          { details: { field: family === 'EVM' ? 'body.chainId' : 'body.network' } },
        );
      }
      return chain;
    },
    get: (key) => byKey.get(key),
    all: () => [...byKey.values()],
  };
}
