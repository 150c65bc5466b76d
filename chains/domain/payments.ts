/**
 * The payment vocabulary: which wallet types pay, on which networks, what a transaction record can say (statuses,
 * intent kinds, failure stages and codes) and how a configured chain is keyed. Part of the domain module
 * (chains/domain/), which imports nothing: the drizzle schema, the TypeBox schemas, the payment machine and the chain
 * adapters take these lists from here.
 */

/** The wallet types whose transactions the service builds, broadcasts and tracks (spec: support matrix). */
export const PAYMENT_FAMILIES = ['EVM', 'SOLANA'] as const;
export type PaymentFamily = (typeof PAYMENT_FAMILIES)[number];

export function isPaymentFamily(type: string): type is PaymentFamily {
  return (PAYMENT_FAMILIES as readonly string[]).includes(type);
}

/** Solana networks: `SOLANA` (mainnet, the production default) and `SOLANA_DEVNET` (the beta network). */
export const SOLANA_NETWORKS = ['SOLANA', 'SOLANA_DEVNET'] as const;
export type SolanaNetwork = (typeof SOLANA_NETWORKS)[number];

export function isSolanaNetwork(value: unknown): value is SolanaNetwork {
  return typeof value === 'string' && (SOLANA_NETWORKS as readonly string[]).includes(value);
}

/** What a transfer moves: the chain's native coin, an ERC-20 token (EVM) or an SPL token (Solana). */
export const TRANSFER_KINDS = ['NATIVE', 'ERC20', 'SPL'] as const;
export type TransferKind = (typeof TRANSFER_KINDS)[number];

/** Which API keys may use a configured chain: development keys are the spec's beta environment. */
export const CHAIN_ENVIRONMENTS = ['development', 'production', 'any'] as const;
export type ChainEnvironment = (typeof CHAIN_ENVIRONMENTS)[number];

/**
 * The key of a configured chain (`evm:<chainId>`, `solana:<network>`): what records, holds, pollers and payment
 * actors name a chain by.
 */
export function chainKey(family: PaymentFamily, ref: string | number): string {
  return family === 'EVM' ? `evm:${ref}` : `solana:${ref}`;
}

/** A transaction record's status (spec: transaction record status). Unknown values are non-terminal for clients. */
export const TRANSACTION_STATUSES = ['pending', 'submitted', 'confirmed', 'reverted', 'failed'] as const;
export type TransactionStatus = (typeof TRANSACTION_STATUSES)[number];

/** The statuses a record ends in. A `failed` record of `monitor_timeout` may still move to `confirmed`. */
export const TERMINAL_TRANSACTION_STATUSES = [
  'confirmed',
  'reverted',
  'failed',
] as const satisfies readonly TransactionStatus[];

export function isTerminalStatus(status: TransactionStatus): boolean {
  return (TERMINAL_TRANSACTION_STATUSES as readonly string[]).includes(status);
}

/** What wrote a record: a `transfer`, a `sign-transaction` with `broadcast: true`, or a yield step. */
export const INTENT_KINDS = ['transfer', 'sign_transaction', 'yield'] as const;
export type IntentKind = (typeof INTENT_KINDS)[number];

/**
 * Where a failed record failed: the spec's `failureStage` values, and `monitor`: a node accepted the bytes, then the
 * monitor proved they can never execute (another transaction used the nonce, `REPLACED`, or the blockhash expired
 * without them, `TRANSACTION_EXPIRED`). Unlike `monitor_timeout`, which says nothing of the outcome, it is a proof.
 */
export const FAILURE_STAGES = [
  'mpc_sign',
  'signature_apply',
  'signer_verify',
  'broadcast',
  'monitor_timeout',
  'monitor',
] as const;
export type FailureStage = (typeof FAILURE_STAGES)[number];

/**
 * What a chain's node can say of a transfer or a broadcast, as the chain adapters raise it (`ChainRpcError`):
 * refusals a partner can act on, and `RPC_UNAVAILABLE` when the node gave no usable answer.
 */
export const CHAIN_ERROR_CODES = [
  /** The wallet cannot pay the value plus the fee. */
  'INSUFFICIENT_NATIVE_BALANCE',
  /** The wallet holds too little of the token. */
  'INSUFFICIENT_TOKEN_BALANCE',
  /** Estimation or simulation says the call reverts. */
  'EXECUTION_FAILED',
  /** The nonce was already used (EVM). */
  'NONCE_TOO_LOW',
  /** The blockhash is no longer (or not) valid (Solana). */
  'BLOCKHASH_EXPIRED',
  /** The node refused the transaction for another stated reason. */
  'TRANSACTION_REJECTED',
  /** The token (ERC-20 contract, SPL mint) does not exist or is not one. */
  'INVALID_TOKEN',
  /** The node did not answer usably: down, timeout, 5xx, rate limited, malformed answer, fee history invalid. */
  'RPC_UNAVAILABLE',
] as const;
export type ChainErrorCode = (typeof CHAIN_ERROR_CODES)[number];

/**
 * The `failureCode` values a record of this service can carry, beside the node's refusals (CHAIN_ERROR_CODES):
 * a signing that failed or was interrupted, a nonce another transaction took (`REPLACED`; `NONCE_CONSUMED` for a yield
 * step), a Solana blockhash that expired, the end of the monitor window, a prepared step cancelled before signing. A signing refused by the wallet's state or the enclave keeps that error's own code
 * (for example WALLET_CLAIMED, ENCLAVE_UNAVAILABLE).
 */
export const PAYMENT_FAILURE_CODES = [
  'SIGNING_FAILED',
  'SIGNING_INTERRUPTED',
  'SIGNER_MISMATCH',
  'SIGNATURE_APPLY_FAILED',
  'REPLACED',
  'CANCELLED',
  'TRANSACTION_EXPIRED',
  'MONITOR_TIMEOUT',
  /** A yield step's saved nonce was consumed on the finalized chain without a receipt of the step. */
  'NONCE_CONSUMED',
  /** A prepared step (a yield step) was cancelled before it was signed: nothing was signed. */
  'CANCELLED_BEFORE_SIGNING',
] as const;
export type PaymentFailureCode = (typeof PAYMENT_FAILURE_CODES)[number];
