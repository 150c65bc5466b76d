/**
 * The interface every payment family implements (one per wallet type whose transactions the service builds,
 * broadcasts and tracks, in its chain's folder; payment-families.ts maps the families to them). The API and the
 * payment actor run one generic flow around it: the API parses the request with it and admits the payment; the actor
 * has its payload signed, attaches the signature and computes the hash with it, sends the bytes and reads the node's
 * refusals with it, and its chain's poller observes the payment through the configured chain it creates.
 *
 * An adapter knows its chain's formats and nothing of HTTP, the store or the enclave. Field names in the errors it
 * throws (`ChainInputError.field`) are paths inside the request body (`chainId`, `transaction.nonce`).
 */
import type { TSchema } from '@sinclair/typebox';
import { ServiceError } from './domain/errors.ts';
import type { ChainEnvironment, PaymentFamily, SolanaNetwork, TransferKind } from './domain/payments.ts';
import type { ChainFacts } from './domain/policies.ts';
import type { ChainRpcError, PaymentChain, TransferIntent, UnsignedPayment } from './payment-chain.ts';
import type { Ed25519Signature, Secp256k1Signature } from './signing-types.ts';
import type { TransactionRequest } from './wallet-family.ts';

/**
 * What a payment signs, as the payment actor stores it (JSON, in its snapshot): `family` names the adapter that reads
 * it; the rest is the family's own (see each adapter's payload type).
 */
export interface PaymentPayload {
  family: PaymentFamily;
}

/** The fields of a `transfer` body an adapter reads: which chain, and what to move. */
export interface TransferRequestFields {
  to: string;
  value: string;
  chainId?: string | number;
  network?: SolanaNetwork;
  tokenAddress?: string;
  kind?: TransferKind;
  /** EVM only, as `sign-transaction` names them (chains/evm/parse-evm-transfer-overrides.ts). */
  type?: number;
  nonce?: number;
  gasLimit?: string;
  maxFeePerGas?: string;
  maxPriorityFeePerGas?: string;
  gasPrice?: string;
}

/** A transfer's chain and intent, checked. */
export interface TransferTarget {
  /** The chain as the family names it (EVM chain id, Solana network): with the family, it selects a CHAINS_FILE entry. */
  chainRef: string;
  intent: TransferIntent;
  /** EVM: the nonce the body asked for (it must be the wallet's next one); null when the service chooses. */
  nonce: number | null;
}

/** A partner-built transaction checked for broadcast (`sign-transaction` with `broadcast: true`). */
export interface PartnerTransaction<P extends PaymentPayload = PaymentPayload> {
  chainRef: string;
  /** The transaction as it will be signed (a nonce the partner fixed is in it). */
  payload: P;
  /** EVM: the nonce the partner fixed; null on families without nonces. */
  nonce: number | null;
  /** What the record shows of it (null when the family does not decode it). */
  to: string | null;
  value: string | null;
  /** Solana: the transaction's recent blockhash; null elsewhere. */
  recentBlockhash: string | null;
}

/** The record fields that name a payment's chain. */
export interface RecordChain {
  chainId: string | null;
  network: SolanaNetwork | null;
}

/** The signature a payload asks of the wallet's key, and how it becomes signed bytes. */
export type PaymentSignatureRequest =
  | { curve: 'secp256k1'; message: Uint8Array; attach(signature: Secp256k1Signature): SignedPayment }
  | { curve: 'ed25519'; message: Uint8Array; attach(signature: Ed25519Signature): SignedPayment };

/**
 * Runs the attaching of a signature: whatever it throws (a signature or a transaction that does not hang together)
 * is the spec's `signature_apply` failure, SIGNATURE_APPLY_FAILED.
 */
export function applySignature(attach: () => string): string {
  try {
    return attach();
  } catch (err) {
    throw new ServiceError(
      'SIGNATURE_APPLY_FAILED',
      500,
      `the signature could not be applied: ${(err as Error).message}`,
    );
  }
}

/** The signed bytes and their hash (EVM transaction hash, Solana signature). */
export interface SignedPayment {
  signedTransaction: string;
  hash: string;
}

/**
 * What a node's refusal of a payment's own signed bytes means: `rejected`, its final verdict on them; `look-up`,
 * a verdict the payment may have caused itself (a resend after the first copy landed), so the transaction is looked
 * up before it counts as a rejection; `unanswered`, no verdict at all (the node may have the bytes).
 */
export type SendVerdict = 'rejected' | 'look-up' | 'unanswered';

/**
 * How a family's chains are configured: its CHAINS_FILE section (`evm`, `solana`), the JSON Schema of one entry, and
 * what an entry that passed it names.
 */
export interface ChainsFileSection {
  readonly section: string;
  readonly entry: TSchema;
  /** The chain an entry configures, and which keys may use it (the entry's, or the family's default for it). */
  read(entry: Record<string, unknown>): ChainConfig;
}

/** One configured chain, as its family's adapter creates it. */
export interface ChainConfig {
  chainRef: string;
  rpcUrl: string;
  environment: ChainEnvironment;
  /**
   * Solana: how long a signature must stay absent after its blockhash was seen expired at finalized commitment before
   * that absence proves the transaction can never land (the entry's `expiryProofAfterMs`; the adapter's default when
   * absent). Lengthen it for a node whose status index lags its blocks further.
   */
  expiryProofAfterMs?: number;
}

/** One payment family. `P`: the family's payload. */
export interface PaymentFamilyAdapter<P extends PaymentPayload = PaymentPayload> {
  readonly family: PaymentFamily;
  /** Whether a payment's nonce is allocated with its record (EVM); a family without nonces answers null there. */
  readonly allocatesNonce: boolean;
  /**
   * Parses and checks a transfer's chain and intent. `keyEnvironment`: the calling key's, which decides the default
   * network where the family has one. Throws ChainInputError naming the body field.
   */
  transferTarget(body: TransferRequestFields, keyEnvironment: 'development' | 'production'): TransferTarget;
  /**
   * Checks a partner-built transaction for broadcast by the wallet at `walletAddress` (`keyEnvironment` as for
   * transfers). Throws ChainInputError naming the body field.
   */
  partnerTransaction(
    request: TransactionRequest,
    walletAddress: string,
    keyEnvironment: 'development' | 'production',
  ): PartnerTransaction<P>;
  /** The payload of a transfer the chain built, with the nonce its record allocated (null without nonces). */
  transferPayload(unsigned: UnsignedPayment, nonce: number | null): P;
  /**
   * Until when a transfer the chain built can land, where the family bounds it (Solana: its blockhash and the last
   * block height that accepts it); nulls elsewhere.
   */
  transferValidity(unsigned: UnsignedPayment): { recentBlockhash: string | null; lastValidBlockHeight: number | null };
  /** What the wallet's key signs for `payload`, and how the signature is attached, checked and hashed. */
  signatureRequest(payload: P, walletAddress: string): PaymentSignatureRequest;
  /** Reads a node's refusal of a payment's own bytes (see SendVerdict). */
  sendVerdict(error: ChainRpcError): SendVerdict;
  /** What the signing-policy engine reads of a transfer on `chainRef` (its extractor over the intent). */
  transferFacts(chainRef: string, intent: TransferIntent): ChainFacts;
  /** What the signing-policy engine reads of a payload the wallet at `walletAddress` signs on `chainRef`. */
  payloadFacts(payload: P, chainRef: string, walletAddress: string): ChainFacts;
  /** The record fields naming the chain `chainRef`. */
  recordChain(chainRef: string): RecordChain;
  /** The transfer body field that names the chain (`chainId`, `network`). */
  readonly chainField: string;
  /** The chain `chainRef` in a sentence (`EVM chain 1`, `Solana network SOLANA`). */
  describeChain(chainRef: string): string;
  /** Whether the chain is a test network for the `send.*` events' `isDevnet`. */
  isDevnet(chainRef: string, environment: ChainEnvironment): boolean;
  /** How its chains are configured in CHAINS_FILE. */
  readonly chainsFile: ChainsFileSection;
  /** The network side of one configured chain. */
  createChain(config: ChainConfig): PaymentChain;
}
