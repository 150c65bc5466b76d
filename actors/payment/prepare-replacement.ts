import type { EvmPaymentPayload } from '../../chains/evm/evm-payments.ts';
import { type EvmFees, replacementFees } from '../../chains/evm/replacement-fees.ts';
import { ChainRpcError, type PaymentChain, type TransferIntent } from '../../chains/payment-chain.ts';
import { paymentFamilies } from '../../chains/payment-families.ts';
import { readComputeUnitPrice } from '../../chains/solana/read-compute-unit-price.ts';
import type { SolanaPaymentPayload } from '../../chains/solana/solana-payments.ts';
import type { ReplacementInput, ReplacementPlan } from './payment.machine.ts';

/** The spec's EVM_REPLACEMENT_DELAY_MS default: a minute between an attempt's send and its replacement. */
export const DEFAULT_REPLACEMENT_DELAY_MS = 60_000;

function feesOf(tx: EvmPaymentPayload['transaction']): EvmFees {
  return tx.type === 2
    ? {
        type: 2,
        gasLimit: BigInt(tx.gasLimit),
        maxFeePerGas: BigInt(tx.maxFeePerGas!),
        maxPriorityFeePerGas: BigInt(tx.maxPriorityFeePerGas!),
      }
    : { type: 0, gasLimit: BigInt(tx.gasLimit), gasPrice: BigInt(tx.gasPrice!) };
}

/** A failure of the node, with when it was seen: the machine counts its next look from it. */
function seenAt(err: unknown, at: number): Error {
  return Object.assign(err instanceof Error ? err : new Error(String(err)), { at });
}

/**
 * The auto-retry payment's replacement effect. EVM: reads the market and the wallet's balance from the node and
 * prices the next attempt (chains/evm/replacement-fees.ts): the same transaction, nonce and gas limit with higher
 * fees, or a reason to wait, or to stop. Solana (asked only once every attempt is proven expired): builds the same
 * transfer again with a fresh blockhash and a raised priority fee within the ceiling, or a reason to stop (funds,
 * ceiling). A node that does not answer throws (the machine waits and asks again later).
 */
export function createPrepareReplacement(deps: {
  chain(key: string): PaymentChain | undefined;
  /**
   * Whether the authority that admitted the payment still stands (the spec: a rotated API key, a claimed wallet end
   * it): null when it does, else the stop reason.
   */
  authority?(input: ReplacementInput): Promise<string | null> | string | null;
  now: () => number;
}) {
  return async (input: ReplacementInput): Promise<ReplacementPlan> => {
    const ended = (await deps.authority?.(input)) ?? null;
    if (ended) return { kind: 'stop', reason: ended, at: deps.now() };
    const chain = deps.chain(input.chainKey);
    if (chain?.rebuildTransfer && input.payload.family === 'SOLANA' && input.intent) {
      return rebuild(chain, input as ReplacementInput & { intent: TransferIntent });
    }
    if (!chain?.replacementMarket || input.payload.family !== 'EVM') {
      if (!chain) {
        throw Object.assign(
          new ChainRpcError('transient', 'RPC_UNAVAILABLE', `chain ${input.chainKey} is not configured`),
          {
            at: deps.now(),
          },
        );
      }
      return { kind: 'stop', reason: 'AUTO_RETRY_NOT_SUPPORTED', at: deps.now() };
    }
    const tx = (input.payload as EvmPaymentPayload).transaction;
    let market: Awaited<ReturnType<NonNullable<PaymentChain['replacementMarket']>>>;
    try {
      market = await chain.replacementMarket(input.from);
    } catch (err) {
      throw seenAt(err, deps.now());
    }
    const at = deps.now();
    const decision = replacementFees(
      feesOf(tx),
      market,
      BigInt(input.ceiling),
      market.balance,
      BigInt(tx.value ?? '0'),
    );
    if (decision.kind !== 'replace') return { kind: decision.kind, reason: decision.reason, at };
    const { fees } = decision;
    const { maxFeePerGas: _cap, maxPriorityFeePerGas: _tip, gasPrice: _price, ...rest } = tx;
    const transaction: EvmPaymentPayload['transaction'] =
      fees.type === 2
        ? {
            ...rest,
            maxFeePerGas: fees.maxFeePerGas!.toString(),
            maxPriorityFeePerGas: fees.maxPriorityFeePerGas!.toString(),
          }
        : { ...rest, gasPrice: fees.gasPrice!.toString() };
    const payload: EvmPaymentPayload = { family: 'EVM', transaction };
    return { kind: 'replace', payload, at };
  };

  async function rebuild(
    chain: PaymentChain,
    input: ReplacementInput & { intent: TransferIntent },
  ): Promise<ReplacementPlan> {
    let rebuilt: Awaited<ReturnType<NonNullable<PaymentChain['rebuildTransfer']>>>;
    try {
      rebuilt = await chain.rebuildTransfer!(input.from, input.intent, {
        ceiling: input.ceiling,
        raiseFrom: readComputeUnitPrice((input.payload as SolanaPaymentPayload).transaction),
      });
    } catch (err) {
      throw seenAt(err, deps.now());
    }
    const at = deps.now();
    if (rebuilt.kind === 'stop') return { kind: 'stop', reason: rebuilt.reason, message: rebuilt.message, at };
    const { unsigned } = rebuilt;
    return {
      kind: 'replace',
      payload: paymentFamilies.SOLANA.transferPayload(unsigned, null),
      lastValidBlockHeight: unsigned.lastValidBlockHeight,
      at,
    };
  }
}
