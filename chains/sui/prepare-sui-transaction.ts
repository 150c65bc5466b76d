import { bcs } from '@mysten/sui/bcs';
import { blake2b256 } from '../blake2b-256.ts';
import { ChainInputError } from '../chain-input-error.ts';
import { decodeBase64 } from '../decode-base64.ts';
import { describeError } from '../describe-error.ts';
import { checkSuiTransactionLimits } from './check-sui-transaction-limits.ts';
import { prefixIntent } from './prefix-intent.ts';

/** A partner's Sui TransactionData checked for signing. */
export interface PreparedSuiTransaction {
  /** The BCS TransactionData exactly as sent. */
  bytes: Uint8Array;
  /** What the wallet signs: BLAKE2b-256 of the TransactionData intent ‖ bytes. */
  digest: Uint8Array;
}

/** Sui's protocol limit on a transaction's size (`max_tx_size_bytes`, 128 KiB). */
const MAX_TRANSACTION_BYTES = 128 * 1024;

/**
 * Checks base64 BCS `TransactionData` (as `Transaction.build()` produces it) and computes the digest to sign,
 * exactly as `Keypair.signTransaction` does. The bytes must stay within `SUI_TRANSACTION_LIMITS` (checked first,
 * in one pass, so that the SDK's decoder never sees what would make it slow), decode as TransactionData and encode
 * back to themselves, so nothing trails them and nothing in them is ambiguous. Throws a `ChainInputError` with
 * field `transaction`.
 */
export function prepareSuiTransaction(base64: string): PreparedSuiTransaction {
  const bytes = decodeBase64(base64, 'transaction', MAX_TRANSACTION_BYTES);
  checkSuiTransactionLimits(bytes);
  let reencoded: Uint8Array;
  try {
    reencoded = bcs.TransactionData.serialize(bcs.TransactionData.parse(bytes)).toBytes();
  } catch (error) {
    throw new ChainInputError(`transaction is not valid BCS TransactionData: ${describeError(error)}`, 'transaction');
  }
  if (Buffer.compare(reencoded, bytes) !== 0) {
    throw new ChainInputError('transaction has trailing bytes or a non-canonical BCS encoding', 'transaction');
  }
  // Sui intent signing: intent [0, 0, 0] (TransactionData, V0, Sui) ‖ bytes, hashed with BLAKE2b-256.
  return { bytes, digest: blake2b256(prefixIntent('TransactionData', bytes)) };
}
