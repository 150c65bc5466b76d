/**
 * The spec's manual cancellation of a stopped EVM payment ("Manual cancellation of a stopped EVM payment"): a
 * broadcast `sign-transaction` that sends nothing to the wallet itself at the payment's nonce, so that whichever of
 * the two executes, the nonce is spent once. Exactly this shape, nothing else, may compete with a held payment.
 */
import type { EvmTransactionInput } from './prepare-evm-transaction.ts';

const POSITIVE = /^[1-9][0-9]*$/;
const INTEGER = /^(0|[1-9][0-9]*)$/;

/**
 * Whether `tx` is the cancellation of the payment at `nonce` on `chainId` of the wallet at `address`: `to` the wallet
 * itself, value 0, no data, gas limit 21000, and either type 0 with a positive `gasPrice` or type 2 with a positive
 * `maxFeePerGas` at least its explicit `maxPriorityFeePerGas` (access and authorization lists are not accepted at all
 * by the transaction's schema).
 */
export function isCancellationOf(tx: EvmTransactionInput, address: string, chainId: number, nonce: number): boolean {
  if (tx.to === undefined || tx.to.toLowerCase() !== address.toLowerCase()) return false;
  if (tx.chainId !== chainId || tx.nonce !== nonce) return false;
  if (tx.value !== undefined && !/^0+$/.test(tx.value)) return false;
  if (tx.data !== undefined && tx.data !== '0x') return false;
  if (tx.gasLimit !== '21000') return false;
  if (tx.type === 0) {
    return (
      typeof tx.gasPrice === 'string' &&
      POSITIVE.test(tx.gasPrice) &&
      tx.maxFeePerGas === undefined &&
      tx.maxPriorityFeePerGas === undefined
    );
  }
  if (tx.type === 2) {
    return (
      tx.gasPrice === undefined &&
      typeof tx.maxFeePerGas === 'string' &&
      POSITIVE.test(tx.maxFeePerGas) &&
      typeof tx.maxPriorityFeePerGas === 'string' &&
      INTEGER.test(tx.maxPriorityFeePerGas) &&
      BigInt(tx.maxFeePerGas) >= BigInt(tx.maxPriorityFeePerGas)
    );
  }
  return false;
}
