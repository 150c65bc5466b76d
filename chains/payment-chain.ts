/**
 * The network side of a chain family: what transfers, fee estimates, broadcast and on-chain tracking need from
 * a chain's RPC. One implementation per family (`chains/evm/evm-chain.ts`, `chains/solana/solana-chain.ts`), one
 * instance per configured chain (a CHAINS_FILE entry). Signing formats stay pure functions of chains/<family>/;
 * this interface is what talks to a node.
 *
 * Everything crossing it is JSON-safe (amounts as decimal strings), because unsigned payments and observations
 * are stored in the payment actor's snapshot.
 */

import { CodedError } from './domain/errors.ts';
import type { ChainEnvironment, ChainErrorCode, PaymentFamily, TransferKind } from './domain/payments.ts';
import type { LendingMarket } from './evm/lending-protocol.ts';
import type { EvmTransferOverrides } from './evm/parse-evm-transfer-overrides.ts';
import type { YieldSnapshot } from './evm/read-yield-position.ts';
import type { PartnerTransaction } from './payment-family.ts';

/**
 * A failure answered by (or on the way to) a chain's RPC.
 * - `transient` (the base's flag): the node may not have seen the request, or may accept it later (timeout,
 *   connection refused, 5xx, rate limit, "already known"): retrying the same call is safe and may succeed.
 * - final (not transient): the node judged the request and will judge it the same way again (insufficient funds,
 *   execution reverted in estimation, nonce too low, malformed transaction).
 * `code` is one of CHAIN_ERROR_CODES; `message` is safe to show a partner (no URL, no secret). A final verdict
 * answers 400, a transient one 503.
 */
export class ChainRpcError extends CodedError {
  override readonly name = 'ChainRpcError';
  declare readonly code: ChainErrorCode;

  constructor(kind: 'transient' | 'final', code: ChainErrorCode, message: string, options?: { cause?: unknown }) {
    super(code, kind === 'transient' ? 503 : 400, message, {
      transient: kind === 'transient',
      ...(options?.cause === undefined ? {} : { cause: options.cause }),
    });
  }
}

/** What a partner asks to move. `value` is a positive integer in the smallest unit. */
export interface TransferIntent {
  kind: TransferKind;
  to: string;
  value: string;
  /** ERC-20 contract or SPL mint; present exactly when kind is not NATIVE. */
  tokenAddress?: string;
  /** EVM: the fee and gas fields the body fixed (kept as given; the chain fills the rest). */
  evm?: EvmTransferOverrides;
}

/**
 * An EVM payment ready to sign but for its nonce, in the shape `prepareEvmTransaction` takes (decimal strings).
 * Fees: type 2 has maxFeePerGas (with base-fee headroom) and maxPriorityFeePerGas; type 0 has gasPrice.
 */
export interface EvmUnsignedPayment {
  family: 'EVM';
  chainId: number;
  type: 0 | 2;
  to: string;
  value: string;
  data: string;
  gasLimit: string;
  maxFeePerGas?: string;
  maxPriorityFeePerGas?: string;
  gasPrice?: string;
}

/** A Solana payment ready to sign: a legacy transaction whose fee payer is the wallet, no signature yet. */
export interface SolanaUnsignedPayment {
  family: 'SOLANA';
  /** Base64 of the serialized transaction (signatures zeroed); `prepareSolanaTransaction` takes it. */
  transaction: string;
  blockhash: string;
  /** Last block height at which `blockhash` is accepted. */
  lastValidBlockHeight: number;
  /** The compute-unit price it bids (micro-lamports). */
  computeUnitPrice: number;
  /** Built within a fee ceiling (BuildOptions): base plus priority fee, lamports, decimal. */
  fee?: string;
}

/** How a transfer is built beyond what the partner asked. */
export interface BuildOptions {
  /**
   * Solana: an auto-retry transfer's fee ceiling (lamports, decimal): the priority fee is chosen so that base plus
   * priority fee fit it. A ceiling below the base fee alone throws ChainInputError (`autoRetry.maxExecutionFeeLamports`).
   */
  feeCeiling?: string;
}

/**
 * A Solana auto-retry transfer's next attempt, built once the previous one is proven expired: the same transfer with
 * a fresh blockhash and a raised priority fee within the ceiling; or why none is made (the spec: "Solana funds
 * insufficient or next attempt over ceiling" stop the retry).
 */
export type RebuiltTransfer =
  | { kind: 'rebuilt'; unsigned: SolanaUnsignedPayment }
  | { kind: 'stop'; reason: 'FEE_CEILING_REACHED' | 'INSUFFICIENT_FUNDS_FOR_REPLACEMENT'; message: string };

export type UnsignedPayment = EvmUnsignedPayment | SolanaUnsignedPayment;

/** The fee preview of a transfer (`estimate-fee`); decimal strings in the native smallest unit. */
export type FeeEstimate =
  | {
      family: 'EVM';
      chainId: string;
      type: 0 | 2;
      gasLimit: string;
      maxFeePerGas?: string;
      maxPriorityFeePerGas?: string;
      gasPrice?: string;
      /** Base fee of the latest block, when the chain has one. */
      baseFeePerGas?: string;
      /** gasLimit × (maxFeePerGas or gasPrice): the most the transfer can cost in fees. */
      maxFee: string;
      /** gasLimit × (baseFee + tip, or gasPrice): what it costs at current prices. */
      expectedFee: string;
    }
  | {
      family: 'SOLANA';
      network: string;
      /** Lamports per signature × signatures. */
      baseFee: string;
      computeUnitLimit: string;
      computeUnitPriceMicroLamports: string;
      priorityFee: string;
      /** Rent of the recipient's associated token account when the transfer must create it, else "0". */
      accountCreationRent: string;
      /** baseFee + priorityFee (rent is not a fee and is listed apart). */
      totalFee: string;
    };

/** One broadcast transaction to look up. */
export interface ObserveItem {
  /** EVM transaction hash (0x…), Solana signature (Base58). */
  hash: string;
  /** The sender (the wallet's address). */
  from: string;
  /** EVM: the nonce the transaction uses. */
  nonce?: number;
  /** Solana: the transaction's recent blockhash. */
  blockhash?: string;
  /** Solana: when known (transfers), the last block height at which the blockhash is accepted. */
  lastValidBlockHeight?: number;
}

/**
 * What the chain shows of one item.
 * - `unknown`: not included (yet) as far as the node shows, and not proven unable to be.
 * - `included`: in a block; `final` once EVM finality (receipt block at or below the finalized block, read in the
 *   same round) or Solana `finalized` status; `success` false for EVM status 0 / a Solana instruction error.
 * - `dropped`: proven never to execute: Solana blockhash no longer valid at finalized commitment and the
 *   signature absent (`expired`); EVM: another transaction, found on the chain, used the item's nonce in a
 *   finalized block (`nonce_consumed`, with its hash).
 */
export type Observation =
  | { status: 'unknown' }
  | {
      status: 'included';
      final: boolean;
      success: boolean;
      /** Decimal string (EVM block number, Solana slot). */
      blockNumber: string;
      /** EVM block hash; Solana: the blockhash of the slot when the node gives it, else null. */
      blockHash: string | null;
      /** Why execution failed, when it did and the node says. */
      error?: string;
    }
  | { status: 'dropped'; reason: 'expired' }
  /** EVM: another transaction, `winningHash`, used the nonce in a finalized block. */
  | { status: 'dropped'; reason: 'nonce_consumed'; winningHash: string };

/** One polling round's result: an observation per item hash, and the HTTP round trips the round made. */
export interface ObserveRound {
  observations: Map<string, Observation>;
  roundTrips: number;
}

/** One configured chain. */
export interface PaymentChain {
  readonly family: PaymentFamily;
  /** `evm:<chainId>` or `solana:<network>`: the key records, holds and pollers use. */
  readonly key: string;
  readonly environment: ChainEnvironment;

  /**
   * Builds an unsigned transfer from `from` (the wallet's address). EVM: fees per the spec (EIP-1559 or legacy per
   * chain, tip from fee history when the node's is zero), gas estimated with a 20% buffer; no nonce. Solana:
   * SOL or SPL transfer (creating the recipient's associated token account when missing), compute budget and
   * priority fee, a fresh blockhash with its last valid block height. Throws ChainInputError for bad input (a
   * malformed address, a token that is not one) and ChainRpcError for what the node says.
   */
  buildTransfer(from: string, intent: TransferIntent, options?: BuildOptions): Promise<UnsignedPayment>;

  /**
   * Solana: the next attempt of an auto-retry transfer (see RebuiltTransfer), from the same intent, with a fresh
   * blockhash and a compute-unit price at least 12.5% above `raiseFrom` (the previous attempt's) or the market's,
   * within `ceiling` (lamports); checked against the wallet's funds, read in the same round trip. Throws
   * ChainRpcError when the node does not answer. EVM: not present (replacements keep the nonce and raise the fees).
   */
  rebuildTransfer?(
    from: string,
    intent: TransferIntent,
    terms: { ceiling: string; raiseFrom: number },
  ): Promise<RebuiltTransfer>;

  /** The fee preview of the same transfer, without signing. */
  estimateFee(from: string, intent: TransferIntent): Promise<FeeEstimate>;

  /**
   * EVM only: an unsigned contract call from `from` (no value, no nonce), priced like a transfer (fees from the
   * node's quote, the gas estimate plus 20%). Throws ChainRpcError: transient when the node does not answer; final
   * EXECUTION_FAILED when estimation reverts, with the node's failure (and the revert it carries) as `cause`.
   */
  buildCall?(from: string, call: { to: `0x${string}`; data: `0x${string}` }): Promise<EvmUnsignedPayment>;

  /**
   * EVM only: where transaction `hash` stands on the node's canonical chain now, in one HTTP request (its receipt and
   * the head): null while no block includes it; else whether it succeeded, its block, and its confirmations (1 in
   * the head block). Read again each time, so a reorganization that moves or removes it shows. Throws a transient
   * ChainRpcError when the node does not answer.
   */
  inclusionDepth?(
    hash: string,
  ): Promise<{ success: boolean; blockNumber: string; blockHash: string; confirmations: number } | null>;

  /** EVM: the account's pending nonce (`eth_getTransactionCount(from, 'pending')`). Solana: not present. */
  pendingNonce?(from: string): Promise<number>;

  /**
   * EVM: what an auto-retry replacement is priced from, in one request: the market (the next block's base fee, or
   * the latest block's when the node does not name the next; absent on chains without one; the tip; the legacy
   * price) and the account's balance. Throws ChainRpcError (transient). Solana: not
   * present.
   */
  replacementMarket?(from: string): Promise<{ baseFee?: bigint; tip: bigint; gasPrice: bigint; balance: bigint }>;

  /**
   * Sends signed bytes (EVM 0x-hex raw transaction, Solana base64 wire transaction). Resolves once the node
   * accepted them; a node saying it already has the same transaction counts as accepted. Throws ChainRpcError.
   */
  broadcast(signedTransaction: string): Promise<void>;

  /**
   * Looks up many items in a bounded number of HTTP round trips whatever their count (JSON-RPC batches; at
   * most 3 per call), so a polling round costs the same at 50 and at 5,000 pending. Items absent from the map
   * are `unknown`. Throws ChainRpcError (transient) when the node does not answer.
   */
  observe(items: readonly ObserveItem[]): Promise<ObserveRound>;

  /**
   * Proves a partner-built transaction belongs to this chain before it is recorded and broadcast, where the
   * transaction alone does not say (Solana: its blockhash must be valid on this network; an EVM transaction names its
   * chain id). Throws ChainInputError naming the body field the transaction contradicts, ChainRpcError when the node
   * does not answer.
   */
  checkPartnerTransaction(transaction: PartnerTransaction): Promise<void>;

  /**
   * Solana only: whether `blockhash` is still valid on this network (`isBlockhashValid`, processed commitment).
   */
  isBlockhashValid?(blockhash: string): Promise<boolean>;

  /**
   * EVM only: `account`'s position in the lending market `market` of this chain, every figure of one block
   * (chains/evm/read-yield-position.ts), and the node's chain id checked, in one HTTP request. Throws a transient
   * ChainRpcError RPC_UNAVAILABLE when the node does not answer or serves another chain, and readYieldPosition's
   * InternalErrors for a market that is not the protocol's.
   */
  readYieldPosition?(market: LendingMarket, account: `0x${string}`): Promise<YieldSnapshot>;
}
