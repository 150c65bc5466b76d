import { createEvmChain } from '../chains/evm/evm-chain.ts';
import { createSolanaChain } from '../chains/solana/solana-chain.ts';
import type { ChainFactories } from './chain-registry.ts';

/** The production chain adapters: viem for EVM chains, @solana/web3.js for Solana networks. */
export const chainFactories: ChainFactories = {
  evm: (c) => createEvmChain(c),
  solana: (c) => createSolanaChain(c),
};
