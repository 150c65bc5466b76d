/**
 * Chain factories for specs that need a chain's proof delays shortened (the service's defaults wait seconds on
 * purpose: a node's indexes can lag its state). What is not given keeps the family's default.
 */
import type { CreateChain } from '../../api/chain-registry.ts';
import type { SolanaNetwork } from '../../chains/domain/payments.ts';
import { createEvmChain } from '../../chains/evm/evm-chain.ts';
import { paymentFamilies } from '../../chains/payment-families.ts';
import { createSolanaChain } from '../../chains/solana/solana-chain.ts';

export function chainsWithDelays(delays: {
  /** EVM: how long a transaction without a receipt waits before its finalized nonce is read (default 10 s). */
  evmNonceCheckAfterMs?: number;
  /** Solana: how long an absence after expiry must last to prove a drop (default 20 s). */
  solanaExpiryProofAfterMs?: number;
}): CreateChain {
  return (family, config) => {
    if (family === 'EVM' && delays.evmNonceCheckAfterMs !== undefined) {
      return createEvmChain({
        chainId: Number(config.chainRef),
        rpcUrl: config.rpcUrl,
        environment: config.environment,
        nonceCheckAfterMs: delays.evmNonceCheckAfterMs,
      });
    }
    if (family === 'SOLANA' && delays.solanaExpiryProofAfterMs !== undefined) {
      return createSolanaChain({
        network: config.chainRef as SolanaNetwork,
        rpcUrl: config.rpcUrl,
        environment: config.environment,
        expiryProofAfterMs: delays.solanaExpiryProofAfterMs,
      });
    }
    return paymentFamilies[family].createChain(config);
  };
}
