import { ChainRpcError } from '../payment-chain.ts';
import type { RpcFailure } from './read-rpc-failure.ts';

/**
 * Refusals that prove the node did not take these bytes: each judges the bytes themselves or the account's state
 * as the node's pool checks it before admitting a transaction, and a node that has (or had) the same bytes answers
 * "already known" or "nonce too low" instead. Why each is on the list:
 * - insufficient funds: the pool refuses a transaction the account cannot pay for at all;
 * - intrinsic gas too low, gas limit above the block's: the transaction can never be included as signed;
 * - underpriced, replacement underpriced, fee cap below the base fee, tip above the fee cap: the pool's price rules
 *   refused it (another transaction holds the nonce in the pool, or the price is below what it admits);
 * - invalid sender or signature, wrong or missing chain id, unsupported type, oversized data, a fee above the node's
 *   cap: the bytes themselves are refused.
 * Everything else (timeouts, internal errors, messages this list does not know) leaves the submission unknown: the
 * node may have taken the bytes, so only the chain can settle the payment.
 */
const PROVEN_REJECTIONS: ReadonlyArray<[RegExp, string]> = [
  [/intrinsic gas too low|gas too low|exceeds block gas limit|gas limit reached/, 'its gas limit'],
  [
    /transaction underpriced|replacement transaction underpriced|fee cap less than block base fee|max fee per gas less than block base fee|max priority fee per gas higher than max fee per gas|tip higher than fee cap/,
    'its price',
  ],
  [
    /invalid sender|invalid signature|invalid chain ?id|incorrect chain ?id|chain ?id mismatch|only replay-protected|transaction type not supported|tx type not supported|oversized data|exceeds the configured cap/,
    'the transaction',
  ],
];

/**
 * What a failed `eth_sendRawTransaction` means:
 * - `already_known`: the node already holds these very bytes (geth "already known", anvil "transaction already
 *   imported", Besu/Nethermind "known transaction" / "AlreadyKnown"): the broadcast succeeded.
 * - `nonce_too_low`: the nonce is used, possibly by these very bytes (a resend after they were mined, or a provider
 *   retrying a send it already forwarded): never a proof of rejection; the caller looks the transaction up.
 * - a final `ChainRpcError` for a refusal of PROVEN_REJECTIONS (insufficient funds: INSUFFICIENT_NATIVE_BALANCE;
 *   the others: TRANSACTION_REJECTED). A nonce ahead of the account's next one or a full pool: transient
 *   TRANSACTION_REJECTED (the same bytes may be taken later). Any other answer: transient TRANSACTION_REJECTED too,
 *   saying the node's verdict is not known. No usable answer: transient RPC_UNAVAILABLE.
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
  const proven = PROVEN_REJECTIONS.find(([pattern]) => pattern.test(text));
  if (proven) {
    return new ChainRpcError('final', 'TRANSACTION_REJECTED', `the node refused ${proven[1]}: ${failure.message}`);
  }
  return new ChainRpcError(
    'transient',
    'TRANSACTION_REJECTED',
    `the node answered an error that does not say whether it took the transaction: ${failure.message}`,
  );
}
