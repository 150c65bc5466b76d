import { ChainRpcError } from '../payment-chain.ts';
import type { RpcFailure } from './read-rpc-failure.ts';

/**
 * What a failed `eth_sendRawTransaction` means:
 * - `already_known`: the node already holds these very bytes (geth "already known", anvil "transaction already
 *   imported", Besu/Nethermind "known transaction" / "AlreadyKnown"): the broadcast succeeded.
 * - `nonce_too_low`: the nonce is used. The caller must look the transaction's hash up before failing: a
 *   rebroadcast of a transaction that is already mined gets this answer too.
 * - a `ChainRpcError` otherwise. Insufficient funds: final INSUFFICIENT_NATIVE_BALANCE. A nonce ahead of the
 *   account's next one or a full pool: transient TRANSACTION_REJECTED (the same bytes may be accepted once the
 *   earlier nonces land or the pool drains). Any other verdict (underpriced, replacement underpriced, gas limit,
 *   invalid signature, wrong chain id): final TRANSACTION_REJECTED. No usable answer: transient RPC_UNAVAILABLE.
 */
export function classifyBroadcastFailure(failure: RpcFailure): 'already_known' | 'nonce_too_low' | ChainRpcError {
  if (failure.kind === 'unavailable') return new ChainRpcError('transient', 'RPC_UNAVAILABLE', failure.message);
  const text = failure.message.toLowerCase();
  if (/already known|already imported|known transaction|alreadyknown|already in (?:the )?(?:mem)?pool/.test(text)) {
    return 'already_known';
  }
  if (/nonce too low|nonce is too low|oldnonce|nonce has already been used/.test(text)) return 'nonce_too_low';
  if (/insufficient funds|insufficient balance|insufficientfunds/.test(text)) {
    return new ChainRpcError(
      'final',
      'INSUFFICIENT_NATIVE_BALANCE',
      `the wallet cannot pay the value plus the maximum fee: ${failure.message}`,
    );
  }
  if (/nonce too high|nonce gap|txpool is full|pool is full|queue is full/.test(text)) {
    return new ChainRpcError(
      'transient',
      'TRANSACTION_REJECTED',
      `the node refused the transaction for now: ${failure.message}`,
    );
  }
  return new ChainRpcError('final', 'TRANSACTION_REJECTED', `the node refused the transaction: ${failure.message}`);
}
