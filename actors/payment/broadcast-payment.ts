import { ChainRpcError, type PaymentChain } from '../../chains/payment-chain.ts';
import { paymentFamilies } from '../../chains/payment-families.ts';
import type { BroadcastInput, BroadcastOutcome } from './payment.machine.ts';

/**
 * The payment actor's broadcast effect: sends a payment's signed bytes and turns every answer into an outcome for
 * the machine: `accepted`, `rejected` (the node's final verdict) or `unanswered` (it may or may not have the bytes).
 * A refusal the payment may have caused itself (its family's `sendVerdict` says which) counts only once a lookup
 * shows the transaction is not in.
 */
export function createBroadcastEffect(deps: { chain(key: string): PaymentChain | undefined; now: () => number }) {
  return async (input: BroadcastInput): Promise<BroadcastOutcome> => {
    const chain = deps.chain(input.chainKey);
    if (!chain) {
      return {
        outcome: 'unanswered',
        code: 'CHAIN_NOT_CONFIGURED',
        message: `the chain ${input.chainKey} is no longer in CHAINS_FILE; the payment waits for it`,
        at: deps.now(),
      };
    }
    try {
      await chain.broadcast(input.signedTransaction);
      return { outcome: 'accepted', at: deps.now() };
    } catch (err) {
      const verdict = err instanceof ChainRpcError ? paymentFamilies[chain.family].sendVerdict(err) : 'unanswered';
      if (verdict === 'unanswered') {
        const message = err instanceof ChainRpcError ? err.message : 'the node did not answer usably';
        return { outcome: 'unanswered', code: 'RPC_UNAVAILABLE', message, at: deps.now() };
      }
      const refusal = err as ChainRpcError;
      if (verdict === 'look-up') {
        try {
          const round = await chain.observe([
            { hash: input.hash, from: input.from, ...(input.nonce === null ? {} : { nonce: input.nonce }) },
          ]);
          if (round.observations.get(input.hash)?.status === 'included') return { outcome: 'accepted', at: deps.now() };
        } catch {
          return { outcome: 'unanswered', code: 'RPC_UNAVAILABLE', message: refusal.message, at: deps.now() };
        }
      }
      return { outcome: 'rejected', code: refusal.code, message: refusal.message, at: deps.now() };
    }
  };
}
