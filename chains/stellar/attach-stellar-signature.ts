import {
  type FeeBumpTransaction,
  Keypair,
  StrKey,
  type Transaction,
  TransactionBuilder,
  xdr,
} from '@stellar/stellar-sdk';
import { assertBytes } from '../assert-bytes.ts';
import { ChainInputError } from '../chain-input-error.ts';
import { describeError } from '../describe-error.ts';
import { isPlainObject } from '../is-plain-object.ts';
import type { Ed25519Signature } from '../signing-types.ts';
import { verifyEd25519 } from '../verify-ed25519.ts';
import type { PreparedStellarTransaction } from './prepare-stellar-transaction.ts';

/**
 * Adds the wallet's decorated signature (hint = last 4 bytes of `publicKey`, then the 64-byte signature of
 * `prepared.hash`) to a copy of the envelope, unless it already carries that signature, and returns the envelope
 * XDR as base64. The signature is verified against the key and the copy's hash first (libsodium: the SDK's own
 * `addSignature` verifies in JavaScript), so a signature for another network or key is refused. Throws a
 * `ChainInputError` for a malformed key, signature or prepared value, and for a signature that does not verify.
 */
export function attachStellarSignature(
  prepared: PreparedStellarTransaction,
  publicKey: Uint8Array,
  sig: Ed25519Signature,
): string {
  assertBytes(publicKey, 32, 'publicKey');
  assertBytes(sig, 64, 'signature');
  const { envelope, networkPassphrase } = isPlainObject(prepared) ? prepared : { envelope: 0, networkPassphrase: 0 };
  if (typeof envelope !== 'string' || typeof networkPassphrase !== 'string') {
    throw new ChainInputError('prepared must be the result of prepareStellarTransaction');
  }
  let copy: Transaction | FeeBumpTransaction;
  try {
    copy = TransactionBuilder.fromXDR(envelope, networkPassphrase);
  } catch (error) {
    throw new ChainInputError(`prepared must be the result of prepareStellarTransaction: ${describeError(error)}`);
  }
  const account = StrKey.encodeEd25519PublicKey(Buffer.from(publicKey));
  if (!verifyEd25519(copy.hash(), sig, publicKey)) {
    throw new ChainInputError(
      `signature does not verify for ${account} over this transaction on this network`,
      'signature',
    );
  }
  // DecoratedSignature { hint: key[28..32], signature }, as addSignature appends it. An envelope that already
  // carries this very signature (signed twice: Ed25519 is deterministic) is answered as it is: a second copy
  // would be an extra signature, which the network refuses (txBAD_AUTH_EXTRA).
  const hint = Keypair.fromPublicKey(account).signatureHint();
  const signature = Buffer.from(sig);
  const present = copy.signatures.some(
    (existing) => Buffer.compare(existing.hint(), hint) === 0 && Buffer.compare(existing.signature(), signature) === 0,
  );
  if (!present) copy.addDecoratedSignature(new xdr.DecoratedSignature({ hint, signature }));
  return copy.toXDR();
}
