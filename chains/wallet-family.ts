/**
 * The interface every chain family's signing adapter implements (one per wallet type, in its chain's folder;
 * wallet-families.ts maps the types to them). The signing service runs one generic flow around it: find the wallet,
 * refuse it, ask the policy, have the enclave sign, answer. An adapter knows its chain's formats and nothing of HTTP,
 * the store or the enclave: it receives the wallet's key as a `WalletKey` only once the policy has allowed the
 * signature.
 */

import type { ChainFacts } from './domain/policies.ts';
import type { Scheme, WalletType } from './domain/wallets.ts';
import type { Ed25519Signature, Secp256k1Signature } from './signing-types.ts';

/** The signing routes, in the spec's order. */
export const SIGNING_OPERATIONS = [
  'sign-message',
  'sign-raw',
  'sign-transaction',
  'sign-typed-data',
  'sign-authorization',
] as const;
export type SigningOperation = (typeof SIGNING_OPERATIONS)[number];

/** What an adapter knows of the wallet while it prepares a signature. */
export interface SigningWallet {
  address: string;
  /** The public key as the wallet shows it, decoded from hex (ed25519: the 32 raw bytes). */
  publicKey: Uint8Array;
}

/**
 * The wallet's key in the enclave, handed to an adapter once the policy has allowed the signature. An adapter calls
 * the method of its own curve (the enclave refuses the other).
 */
export interface WalletKey extends SigningWallet {
  /** secp256k1 (DKLS): signs a 32-byte digest as is. */
  signSecp256k1(digest: Uint8Array): Promise<Secp256k1Signature>;
  /** ed25519: signs the message itself (pure Ed25519). */
  signEd25519(message: Uint8Array): Promise<Ed25519Signature>;
}

/** A pure chain function of structured-clonable arguments whose cost grows with the partner's input. */
export type PoolStep = (...args: never) => unknown;
export type PoolSteps = Record<string, PoolStep>;

/**
 * An adapter's pool steps as it calls them: the API runs each inline for a small request body and on a worker
 * thread for a large one (api/chain-pool.ts), so that one partner's large payload never holds the event loop.
 */
export type PoolRunner<Steps extends PoolSteps> = {
  [S in keyof Steps]: (...args: Parameters<Steps[S]>) => Promise<ReturnType<Steps[S]>>;
};

/** The chain fields of a `sign-transaction` body, as the route validated their JSON types. */
export interface TransactionRequest {
  transaction: unknown;
  network?: string;
  networkPassphrase?: string;
}

/**
 * A `sign-transaction` answer: `signedTransaction`, or Sui's `signature` and `transaction`, never both (the route's
 * answer schema is the union of the two).
 */
export type SignedTransaction =
  | { signedTransaction: string; signature?: never; transaction?: never }
  | { signature: string; transaction: string; signedTransaction?: never };

/** A partner's transaction checked for signing: the chain it is for, and how to sign it once that is allowed. */
export interface PreparedTransaction {
  /** The chain as the policy and the `transaction.signed` event name it (EVM chain id, Solana network, ...). */
  chainId: string | null;
  /**
   * The account nonce the transaction uses, on chains that have one (EVM): a sign-only transaction may not take the
   * nonce of a payment the service holds the wallet for.
   */
  nonce?: number;
  /** What the signing-policy engine reads of the transaction (its family's extractor); asked only with permissions on. */
  facts(): ChainFacts;
  /**
   * Signs with the wallet's key and assembles the answer. The partner's input was checked by then: a ChainInputError
   * here means a bad signature, the service's fault.
   */
  sign(key: WalletKey): Promise<SignedTransaction>;
}

/**
 * One wallet type's signing. `Steps`: the adapter's pool steps (see PoolRunner); api/chain-steps.ts registers them
 * with the worker threads by name.
 */
export interface WalletFamily<Steps extends PoolSteps = Record<never, PoolStep>> {
  readonly type: WalletType;
  /** The key scheme of this type's wallets. */
  readonly scheme: Scheme;
  /** The signing routes that take this type's wallets (the spec's support matrix). */
  readonly operations: readonly SigningOperation[];
  /** What a refused route tells the partner instead of the generic answer, where there is a better way. */
  readonly unsupportedHints?: Readonly<Partial<Record<SigningOperation, string>>>;
  /** Whether its `sign-message` counts as a raw signature for policies (spec: signing routes). */
  readonly messageIsRawSignature: boolean;
  /** sign-raw takes a digest of exactly this many bytes (secp256k1); absent: it signs the bytes themselves. */
  readonly rawDigestBytes?: number;
  readonly poolSteps: Steps;
  /**
   * The address of a public key given as hex without `0x` as the enclave returns it. `prefix`: the Bech32 prefix,
   * for the one type with a choice of it (COSMOS). Throws an `Error` on a key of the wrong format.
   */
  deriveAddress(publicKeyHex: string, prefix?: string): string;
  /** sign-message: signs the text in the chain's message format and encodes the signature. */
  signMessage(message: string, key: WalletKey): Promise<string>;
  /** sign-raw: signs exactly `data`, no prefix and no hashing, and encodes the signature. */
  signRaw(data: Uint8Array, key: WalletKey): Promise<string>;
  /**
   * The `sign-transaction` body this type takes, for the types that support it: `transaction` as an object (EVM) or a
   * base64 string; whether it takes `network` (SOLANA); whether `networkPassphrase` is required (STELLAR), ignored
   * (SUI, as the spec says) or refused. A field another type uses is refused rather than ignored.
   */
  readonly transactionFields?: {
    transaction: 'object' | 'base64';
    network: boolean;
    networkPassphrase: 'required' | 'ignored' | 'refused';
  };
  /**
   * sign-transaction, for the types that support it. A `ChainInputError` names the body field at fault (its `field`
   * is a path inside the request body).
   */
  readonly prepareTransaction?: (
    request: TransactionRequest,
    wallet: SigningWallet,
    steps: PoolRunner<Steps>,
  ) => Promise<PreparedTransaction>;
}
