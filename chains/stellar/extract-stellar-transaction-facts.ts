import {
  Asset,
  FeeBumpTransaction,
  Networks,
  StrKey,
  type Transaction,
  TransactionBuilder,
  type xdr,
} from '@stellar/stellar-sdk';
import { type ChainFacts, NATIVE_ASSET } from '../domain/policies.ts';

const NETWORKS: Readonly<Record<string, string>> = {
  [Networks.PUBLIC]: 'stellar:pubnet',
  [Networks.TESTNET]: 'stellar:testnet',
};

/** The account behind a (possibly muxed) account: a muxed account's funds are its base account's. */
function baseAccount(account: xdr.MuxedAccount): string {
  const key = account.switch().name === 'keyTypeEd25519' ? account.ed25519() : account.med25519().ed25519();
  return StrKey.encodeEd25519PublicKey(key);
}

function assetName(asset: xdr.Asset): string {
  const decoded = Asset.fromOperation(asset);
  return decoded.isNative() ? NATIVE_ASSET : `${decoded.getCode()}:${decoded.getIssuer()}`;
}

interface Payment {
  to: string;
  asset: string;
  amount: bigint;
}

/** The payments of a transaction when every operation is a payment from the wallet; null otherwise. */
function readPayments(transaction: Transaction | FeeBumpTransaction, wallet: string): Payment[] | null {
  if (transaction instanceof FeeBumpTransaction) return null;
  const envelope = transaction.toEnvelope();
  let source: string;
  let operations: xdr.Operation[];
  if (envelope.switch().name === 'envelopeTypeTxV0') {
    const tx = envelope.v0().tx();
    source = StrKey.encodeEd25519PublicKey(tx.sourceAccountEd25519());
    operations = tx.operations();
  } else {
    const tx = envelope.v1().tx();
    source = baseAccount(tx.sourceAccount());
    operations = tx.operations();
  }
  const payments: Payment[] = [];
  for (const operation of operations) {
    const body = operation.body();
    if (body.switch().name !== 'payment') return null;
    const from = operation.sourceAccount();
    if ((from ? baseAccount(from) : source) !== wallet) return null;
    const payment = body.paymentOp();
    payments.push({
      to: baseAccount(payment.destination()),
      asset: assetName(payment.asset()),
      amount: BigInt(payment.amount().toString()),
    });
  }
  return payments;
}

/**
 * The policy facts of a Stellar transaction envelope the wallet at `walletAddress` (G…) signs for
 * `networkPassphrase`: `network` `stellar:pubnet` or `stellar:testnet` for those two passphrases (none for another);
 * and, when every operation is a `payment` from the wallet (the operation's source, else the transaction's), the
 * amounts per asset (`native` or `CODE:ISSUER`, in stroops), with `to` (the destination's base account), `value` and
 * `asset` when there is exactly one. Any other operation, a payment from another account, a fee bump or an envelope
 * that does not decode leaves the spend unknown and no payment facts. Fees are never counted.
 */
export function extractStellarTransactionFacts(
  envelope: string,
  networkPassphrase: string,
  walletAddress: string,
): ChainFacts {
  const network = Object.hasOwn(NETWORKS, networkPassphrase) ? NETWORKS[networkPassphrase]! : null;
  const unknown: ChainFacts = { network, facts: {}, spend: { moved: [], complete: false } };
  let payments: Payment[] | null;
  try {
    payments = readPayments(TransactionBuilder.fromXDR(envelope, networkPassphrase), walletAddress);
  } catch {
    payments = null;
  }
  if (payments === null) return unknown;
  const totals = new Map<string, bigint>();
  for (const { asset, amount } of payments) totals.set(asset, (totals.get(asset) ?? 0n) + amount);
  const moved = [...totals].map(([asset, amount]) => ({ asset, amount: amount.toString() }));
  const only = payments.length === 1 ? payments[0]! : undefined;
  return {
    network,
    facts: only ? { to: only.to, value: only.amount.toString(), asset: only.asset } : {},
    spend: { moved, complete: true },
  };
}
