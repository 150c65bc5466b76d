import { createEvmChain } from '../chains/evm/evm-chain.ts';
import type { ChainFactories } from './chain-registry.ts';

/** The production chain adapters: viem for EVM chains. */
export const chainFactories: ChainFactories = {
  evm: (c) => createEvmChain(c),
  solana: (c) => {
    throw new Error(`CHAINS_FILE lists Solana network ${c.network}, but this build has no Solana adapter yet`);
  },
};
