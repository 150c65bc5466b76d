import { type FeeBumpTransaction, type Transaction, TransactionBuilder } from '@stellar/stellar-sdk';
import { ChainInputError } from '../chain-input-error.ts';
import { decodeBase64 } from '../decode-base64.ts';
import { describeError } from '../describe-error.ts';
import { describeType } from '../describe-type.ts';

/**
 * A partner's Stellar transaction envelope, checked for one network. Plain data (the envelope stays base64), so
 * that it crosses to and from a chain-pool worker.
 */
export interface PreparedStellarTransaction {
  /** What the wallet signs: SHA-256(SHA-256(passphrase) ‖ envelope type ‖ transaction). */
  hash: Uint8Array;
  /** The envelope as sent: canonical base64 XDR. */
  envelope: string;
  networkPassphrase: string;
}

/**
 * Largest envelope accepted. Stellar Core relays no transaction larger than 100 KiB (classic) or the network's
 * Soroban `tx_max_size_bytes` plus a 2,000-byte margin; this cap sits above both, and bounds the XDR decoding,
 * which builds an object per value.
 */
export const MAX_STELLAR_ENVELOPE_BYTES = 136 * 1024;

/**
 * Parses a base64 XDR transaction envelope (a transaction, v0 or v1, or a fee bump) for the network named by
 * `networkPassphrase` and computes the hash to sign, which binds the signature to that network. The envelope
 * must be canonical XDR with nothing after it, at most `MAX_STELLAR_ENVELOPE_BYTES`. Existing signatures are kept.
 * Throws a `ChainInputError` with field `transaction` or `networkPassphrase`.
 */
export function prepareStellarTransaction(xdrBase64: string, networkPassphrase: string): PreparedStellarTransaction {
  decodeBase64(xdrBase64, 'transaction', MAX_STELLAR_ENVELOPE_BYTES);
  if (typeof networkPassphrase !== 'string') {
    throw new ChainInputError(
      `networkPassphrase must be a string, got ${describeType(networkPassphrase)}`,
      'networkPassphrase',
    );
  }
  if (networkPassphrase.trim() === '') {
    throw new ChainInputError(
      'networkPassphrase must be the passphrase of the network the transaction was built for (for example "Test SDF Network ; September 2015")',
      'networkPassphrase',
    );
  }
  let transaction: Transaction | FeeBumpTransaction;
  try {
    transaction = TransactionBuilder.fromXDR(xdrBase64, networkPassphrase);
  } catch (error) {
    throw new ChainInputError(
      `transaction is not a valid Stellar transaction envelope (XDR): ${describeError(error)}`,
      'transaction',
    );
  }
  // The SDK decodes strictly and rejects trailing bytes; the round trip also guarantees that the envelope
  // returned after signing is the partner's own, byte for byte, plus one signature.
  if (transaction.toXDR() !== xdrBase64) {
    throw new ChainInputError('transaction is not in canonical XDR form', 'transaction');
  }
  // Stellar: the signature base is network ID (SHA-256 of the passphrase) ‖ envelope type ‖ transaction.
  return { hash: new Uint8Array(transaction.hash()), envelope: xdrBase64, networkPassphrase };
}
