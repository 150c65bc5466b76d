import { ChainRpcError, type PaymentChain } from '../../chains/payment-chain.ts';
import { paymentFamilies } from '../../chains/payment-families.ts';
import type { BroadcastInput, BroadcastOutcome } from './payment.machine.ts';

/**
 * The payment actor's broadcast effect: sends a payment's signed bytes and turns every answer into an outcome for
 * the machine: `accepted`, `rejected` (a refusal its family's `sendVerdict` counts as proof that the node did not
 * take these bytes) or `unanswered` (the submission is unknown: no answer, or one that proves nothing). Whether a
 * proven refusal ends the payment is the machine's to decide: after an earlier send that may have reached a node, it
 * does not.
 */
export function createBroadcastEffect(deps: { chain(key: string): PaymentChain | undefined; now: () => number }) {
  /** `redelivered`: run again after a crash; the interrupted run may have sent the bytes (EffectContext). */
  return async (input: BroadcastInput, redelivered = false): Promise<BroadcastOutcome> => {
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
        // A refusal the payment may have caused itself (its own bytes already in, or mined): found, they were
        // accepted; not found, that proves nothing (the node's lookups may lag): the submission is unknown.
        try {
          const round = await chain.observe([
            { hash: input.hash, from: input.from, ...(input.nonce === null ? {} : { nonce: input.nonce }) },
          ]);
          if (round.observations.get(input.hash)?.status === 'included') return { outcome: 'accepted', at: deps.now() };
        } catch {
          // Unknown, as below.
        }
        return { outcome: 'unanswered', code: refusal.code, message: refusal.message, at: deps.now() };
      }
      if (redelivered) {
        // The run this one repeats may have reached a node before the service stopped: a refusal now proves nothing
        // of that copy (the machine's rule after any send whose answer was lost).
        return {
          outcome: 'unanswered',
          code: refusal.code,
          message: `${refusal.message} (a resend after a restart: the interrupted send may have reached a node)`,
          at: deps.now(),
        };
      }
      return { outcome: 'rejected', code: refusal.code, message: refusal.message, at: deps.now() };
    }
  };
}
