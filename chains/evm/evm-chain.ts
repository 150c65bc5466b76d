import { createPublicClient, encodeFunctionData, erc20Abi, http, keccak256, numberToHex } from 'viem';
import { ChainInputError } from '../chain-input-error.ts';
import { createPooledFetch } from '../create-pooled-fetch.ts';
import { describeType } from '../describe-type.ts';
import type { ChainEnvironment } from '../domain/payments.ts';
import { isPlainObject } from '../is-plain-object.ts';
import {
  ChainRpcError,
  type EvmUnsignedPayment,
  type FeeEstimate,
  type PaymentChain,
  type TransferIntent,
} from '../payment-chain.ts';
import { classifyBroadcastFailure } from './classify-broadcast-failure.ts';
import { createCallCoalescer } from './create-call-coalescer.ts';
import { createRpcBatchPoster, type RpcAnswer, type RpcBatchPoster } from './create-rpc-batch-poster.ts';
import type { LendingMarket } from './lending-protocol.ts';
import { nextBaseFeeFromHistory } from './next-base-fee-from-history.ts';
import { createEvmObserveMemory, observeEvmTransactions } from './observe-evm-transactions.ts';
import { parseEvmAddress } from './parse-evm-address.ts';
import { parseEvmQuantity } from './parse-evm-quantity.ts';
import { type EvmTransferOverrides, feesComplete } from './parse-evm-transfer-overrides.ts';
import { type RpcFailure, readRpcFailure } from './read-rpc-failure.ts';
import { readYieldPosition } from './read-yield-position.ts';
import { tipFromFeeHistory } from './tip-from-fee-history.ts';

export interface EvmChainConfig {
  chainId: number;
  rpcUrl: string;
  environment: ChainEnvironment;
  /** Per HTTP request (default 10,000 ms). */
  timeoutMs?: number;
  /** Replaces `fetch` (recorded-fixture tests). */
  fetchFn?: typeof fetch;
  /**
   * `auto` (default): type 2 when the latest block has a base fee, else type 0. `legacy`: always type 0, priced
   * at max(eth_gasPrice, baseFee + tip) on a base-fee chain, for chains whose EIP-1559 support is unusable.
   */
  feeModel?: 'auto' | 'legacy';
  /**
   * How long fee data (latest base fee, tip, gas price, fee history) is reused by later transfers; concurrent
   * transfers always share one fetch. Default 1,000 ms: at hundreds of transfers a second this turns four calls
   * per transfer into four a second, and the type 2 cap's 2 × base fee headroom absorbs a second of change.
   */
  feeDataMaxAgeMs?: number;
  /**
   * Calls per HTTP request, when the node limits batches (geth's default is 1,000). Default: no limit, so an
   * `observe` round is one request per step whatever the item count; with a limit a step takes
   * ceil(calls / limit) requests, sent at once, all counted in `roundTrips`.
   */
  maxBatchSize?: number;
  /**
   * How long a broadcast transaction may go without a receipt before polling rounds read its sender's finalized
   * nonce to prove it replaced (default 10,000 ms; 0 checks from the first round). See `EvmObserveMemory`.
   */
  nonceCheckAfterMs?: number;
}

/** See `EvmChainConfig.nonceCheckAfterMs`. */
export const DEFAULT_NONCE_CHECK_AFTER_MS = 10_000;

/** Blocks of fee history read for the tip, and the reward percentile read per block. */
/** Largest answer read from a node (a batch of a round's receipts is the largest the service asks for). */
const MAX_RPC_RESPONSE_BYTES = 64 * 1024 * 1024;
const FEE_HISTORY_BLOCKS = 10;
const FEE_HISTORY_PERCENTILE = 50;
const QUANTITY = /^0x[0-9a-fA-F]{1,64}$/;
const WORD = /^0x[0-9a-fA-F]{64}$/;
const SIGNED_TRANSACTION = /^0x(?:[0-9a-fA-F]{2})+$/;

interface FeeQuote {
  type: 0 | 2;
  /** The latest block's base fee. */
  baseFee?: bigint;
  /** The next block's, from the fee history when it names it: what a transaction sent now must offer per gas. */
  nextBaseFee?: bigint;
  tip?: bigint;
  maxFeePerGas?: bigint;
  gasPrice?: bigint;
}

interface ParsedTransfer {
  from: `0x${string}`;
  kind: 'NATIVE' | 'ERC20';
  /** The transaction's `to`: the recipient, or the token contract. */
  txTo: `0x${string}`;
  txValue: bigint;
  data: `0x${string}`;
  /** The token amount, for an ERC-20 transfer. */
  tokenValue?: bigint;
}

type Request = (args: { method: string; params?: unknown[] }) => Promise<unknown>;

function quantity(value: unknown, what: string): bigint {
  if (typeof value !== 'string' || !QUANTITY.test(value)) {
    throw new ChainRpcError('transient', 'RPC_UNAVAILABLE', `the chain's RPC node gave no usable ${what}`);
  }
  return BigInt(value);
}

function unavailable(what: string, failure: RpcFailure): ChainRpcError {
  return new ChainRpcError('transient', 'RPC_UNAVAILABLE', `${what}: ${failure.message}`);
}

function parseTransfer(from: unknown, intent: TransferIntent): ParsedTransfer {
  const sender = parseEvmAddress(from, 'from') as `0x${string}`;
  if (!isPlainObject(intent)) throw new ChainInputError(`transfer must be an object, got ${describeType(intent)}`);
  const { kind, tokenAddress } = intent;
  if (kind !== 'NATIVE' && kind !== 'ERC20') {
    throw new ChainInputError(
      `kind must be NATIVE or ERC20 on an EVM chain, got ${typeof kind === 'string' ? kind.slice(0, 20) : describeType(kind)}`,
      'kind',
    );
  }
  const to = parseEvmAddress(intent.to, 'to') as `0x${string}`;
  const value = parseEvmQuantity(intent.value, 'value');
  if (value === 0n) throw new ChainInputError('value must be a positive integer, got 0', 'value');
  if (kind === 'NATIVE') {
    if (tokenAddress !== undefined) {
      throw new ChainInputError('tokenAddress is only for ERC20 transfers; omit it for a NATIVE one', 'tokenAddress');
    }
    return { from: sender, kind, txTo: to, txValue: value, data: '0x' };
  }
  if (tokenAddress === undefined) {
    throw new ChainInputError('tokenAddress is required for an ERC20 transfer', 'tokenAddress');
  }
  const token = parseEvmAddress(tokenAddress, 'tokenAddress') as `0x${string}`;
  return {
    from: sender,
    kind,
    txTo: token,
    txValue: 0n,
    data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [to, value] }),
    tokenValue: value,
  };
}

function depthUnavailable(answer: Extract<RpcAnswer, { ok: false }> | undefined): ChainRpcError {
  return new ChainRpcError(
    'transient',
    'RPC_UNAVAILABLE',
    `inclusion depth: ${answer ? answer.failure.message : "the chain's RPC node gave no answer"}`,
  );
}

function isInsufficientFunds(failure: RpcFailure): boolean {
  return failure.kind === 'node' && /insufficient funds|insufficient balance/i.test(failure.message);
}

/**
 * The network side of one EVM chain, through viem's HTTP transport with JSON-RPC batching: calls made in the same
 * tick (by one transfer or by many concurrent ones) share one HTTP request. No retries here: a transient
 * `ChainRpcError` is the caller's to retry.
 */
export function createEvmChain(config: EvmChainConfig): PaymentChain {
  const { chainId, rpcUrl, environment } = config;
  if (!Number.isSafeInteger(chainId) || chainId < 1)
    throw new Error(`chainId must be a positive integer, got ${chainId}`);
  if (!/^https?:\/\//.test(rpcUrl)) throw new Error('rpcUrl must be an http(s) URL');
  const timeoutMs = config.timeoutMs ?? 10_000;
  const feeModel = config.feeModel ?? 'auto';
  const feeDataMaxAgeMs = config.feeDataMaxAgeMs ?? 1_000;
  // Keep-alive connections on undici's pool rather than Node's `fetch` (create-pooled-fetch.ts), for both clients.
  const fetchFn = config.fetchFn ?? createPooledFetch({ maxResponseBytes: MAX_RPC_RESPONSE_BYTES });
  const client = createPublicClient({
    transport: http(rpcUrl, {
      batch: { batchSize: config.maxBatchSize ?? 1_000 },
      retryCount: 0,
      timeout: timeoutMs,
      fetchFn,
    }),
  });
  // Results are checked here rather than trusted to the schema's types: a node may answer anything.
  const request = client.request as unknown as Request;
  const poster = createRpcBatchPoster({
    rpcUrl,
    timeoutMs,
    fetchFn,
    maxResponseBytes: MAX_RPC_RESPONSE_BYTES,
    ...(config.maxBatchSize ? { maxBatchSize: config.maxBatchSize } : {}),
  });
  /**
   * The poster, with `eth_chainId` sent ahead of the calls in the same batch (so in the same HTTP request) and
   * checked: an answer of a node serving another chain is never read as this chain's.
   */
  const checkedPoster: Pick<RpcBatchPoster, 'post'> = {
    async post(calls) {
      const { answers, requests } = await poster.post([{ method: 'eth_chainId', params: [] }, ...calls]);
      const [id, ...rest] = answers;
      if (!id?.ok) {
        throw new ChainRpcError(
          'transient',
          'RPC_UNAVAILABLE',
          `the chain's RPC node did not give its chain id: ${id?.failure.message ?? 'no answer'}`,
        );
      }
      if (quantity(id.result, 'chain id') !== BigInt(chainId)) {
        throw new ChainRpcError(
          'transient',
          'RPC_UNAVAILABLE',
          `the chain's RPC node serves another chain than ${chainId}: its configuration needs fixing`,
        );
      }
      return { answers: rest, requests };
    },
  };
  const readDepths = createCallCoalescer(checkedPoster, [{ method: 'eth_blockNumber', params: [] }]);
  const observeMemory = createEvmObserveMemory({
    nonceCheckAfterMs: config.nonceCheckAfterMs ?? DEFAULT_NONCE_CHECK_AFTER_MS,
  });

  async function fetchFeeQuote(): Promise<FeeQuote> {
    // All in one batch, fee history included though it is needed only when the node's tip is zero or missing:
    // one round trip whichever way the rules go. The chain id guards against an RPC URL of another chain, whose
    // fees and estimates would price payments signed for this one.
    const [nodeChainId, block, rpcTip, rpcGasPrice, history] = await Promise.allSettled([
      request({ method: 'eth_chainId' }),
      request({ method: 'eth_getBlockByNumber', params: ['latest', false] }),
      request({ method: 'eth_maxPriorityFeePerGas' }),
      request({ method: 'eth_gasPrice' }),
      request({
        method: 'eth_feeHistory',
        params: [numberToHex(FEE_HISTORY_BLOCKS), 'latest', [FEE_HISTORY_PERCENTILE]],
      }),
    ]);
    if (nodeChainId.status === 'rejected') throw unavailable('chain id', readRpcFailure(nodeChainId.reason));
    if (quantity(nodeChainId.value, 'chain id') !== BigInt(chainId)) {
      throw new ChainRpcError(
        'transient',
        'RPC_UNAVAILABLE',
        `the chain's RPC node serves another chain than ${chainId}: its configuration needs fixing`,
      );
    }
    if (block.status === 'rejected') throw unavailable('latest block', readRpcFailure(block.reason));
    if (typeof block.value !== 'object' || block.value === null) {
      throw new ChainRpcError('transient', 'RPC_UNAVAILABLE', "the chain's RPC node gave no usable latest block");
    }
    const rawBaseFee = (block.value as { baseFeePerGas?: unknown }).baseFeePerGas;
    const baseFee = rawBaseFee === undefined || rawBaseFee === null ? undefined : quantity(rawBaseFee, 'base fee');
    const gasPrice = () => {
      if (rpcGasPrice.status === 'rejected') throw unavailable('gas price', readRpcFailure(rpcGasPrice.reason));
      return quantity(rpcGasPrice.value, 'gas price');
    };
    if (baseFee === undefined) return { type: 0, gasPrice: gasPrice() };
    const nextBaseFee = history.status === 'fulfilled' ? nextBaseFeeFromHistory(history.value) : undefined;
    const next = nextBaseFee === undefined ? {} : { nextBaseFee };

    // Spec: on a base-fee chain the tip is the node's eth_maxPriorityFeePerGas; when that is zero or missing,
    // the priority fees recent blocks paid, which needs a valid fee history (else RPC_UNAVAILABLE).
    let tip =
      rpcTip.status === 'fulfilled' && typeof rpcTip.value === 'string' && QUANTITY.test(rpcTip.value)
        ? BigInt(rpcTip.value)
        : 0n;
    if (tip === 0n) {
      if (history.status === 'rejected') throw unavailable('fee history', readRpcFailure(history.reason));
      tip = tipFromFeeHistory(history.value);
    }
    if (feeModel === 'legacy') {
      // Spec: a legacy price on a base-fee chain is the greater of the node's price and base fee plus tip.
      let price = gasPrice();
      if (baseFee + tip > price) price = baseFee + tip;
      return { type: 0, baseFee, ...next, tip, gasPrice: price };
    }
    // Headroom: the cap stays above the base fee through six consecutive full blocks (+12.5% each). The legacy
    // price rides along for a transfer that asks for type 0 on this chain.
    let legacy = rpcGasPrice.status === 'fulfilled' ? gasPrice() : undefined;
    if (legacy !== undefined && baseFee + tip > legacy) legacy = baseFee + tip;
    return {
      type: 2,
      baseFee,
      ...next,
      tip,
      maxFeePerGas: 2n * baseFee + tip,
      ...(legacy === undefined ? {} : { gasPrice: legacy }),
    };
  }

  let feeQuoteCache: { startedAt: number; settled: boolean; quote: Promise<FeeQuote> } | undefined;
  function feeQuote(): Promise<FeeQuote> {
    const now = Date.now();
    if (feeQuoteCache && (!feeQuoteCache.settled || now - feeQuoteCache.startedAt < feeDataMaxAgeMs)) {
      return feeQuoteCache.quote;
    }
    const entry = { startedAt: now, settled: false, quote: fetchFeeQuote() };
    feeQuoteCache = entry;
    entry.quote.then(
      () => {
        entry.settled = true;
      },
      () => {
        // A failure is not kept: the next transfer asks again.
        if (feeQuoteCache === entry) feeQuoteCache = undefined;
      },
    );
    return entry.quote;
  }

  function estimateGas(transfer: ParsedTransfer, withValue: boolean): Promise<unknown> {
    const call: Record<string, string> = { from: transfer.from, to: transfer.txTo };
    if (withValue && transfer.txValue > 0n) call['value'] = numberToHex(transfer.txValue);
    if (transfer.data !== '0x') call['data'] = transfer.data;
    return request({ method: 'eth_estimateGas', params: [call] });
  }

  function estimationFailed(failure: RpcFailure): ChainRpcError {
    if (failure.kind === 'unavailable') return unavailable('gas estimation', failure);
    return new ChainRpcError('final', 'EXECUTION_FAILED', `the transfer would fail on chain: ${failure.message}`);
  }

  /**
   * A transfer's fees: those the body fixed, kept as given, and the rest from the node's quote (`market`, absent when
   * the body fixed them all). `tip` is what a type 2 transfer would pay over the base fee, at most its cap.
   */
  function feesFor(o: EvmTransferOverrides, market: FeeQuote | undefined): FeeQuote {
    const type = o.type ?? market!.type;
    const baseFee = market?.baseFee;
    if (type === 0) {
      if (o.gasPrice !== undefined)
        return { type: 0, ...(baseFee === undefined ? {} : { baseFee }), gasPrice: BigInt(o.gasPrice) };
      if (market!.gasPrice === undefined) {
        throw new ChainRpcError('transient', 'RPC_UNAVAILABLE', "the chain's RPC node gave no usable gas price");
      }
      return { ...market!, type: 0 };
    }
    if (o.maxFeePerGas !== undefined && o.maxPriorityFeePerGas !== undefined) {
      return {
        type: 2,
        ...(baseFee === undefined ? {} : { baseFee }),
        tip: BigInt(o.maxPriorityFeePerGas),
        maxFeePerGas: BigInt(o.maxFeePerGas),
      };
    }
    if (baseFee === undefined) {
      throw new ChainInputError(
        `chain ${chainId} has no base fee, so the service cannot price type 2 fees: send type 0 (gasPrice), or both maxFeePerGas and maxPriorityFeePerGas`,
        'type',
      );
    }
    let tip = o.maxPriorityFeePerGas !== undefined ? BigInt(o.maxPriorityFeePerGas) : market!.tip!;
    const maxFeePerGas = o.maxFeePerGas !== undefined ? BigInt(o.maxFeePerGas) : 2n * baseFee + tip;
    if (tip > maxFeePerGas) tip = maxFeePerGas;
    return { type: 2, baseFee, tip, maxFeePerGas };
  }

  async function build(
    from: string,
    intent: TransferIntent,
  ): Promise<{ payment: EvmUnsignedPayment; quote: FeeQuote }> {
    const transfer = parseTransfer(from, intent);
    const fixed = intent.evm ?? {};
    // Issued in the same tick, so they share a JSON-RPC batch (with other transfers' calls too). What the body fixed
    // is not asked: complete fees skip the quote (and its fee history), a given gas limit the estimate.
    const [quoteResult, estimateResult, balanceResult] = await Promise.allSettled([
      feesComplete(fixed) ? Promise.resolve(undefined) : feeQuote(),
      fixed.gasLimit !== undefined ? Promise.resolve(fixed.gasLimit) : estimateGas(transfer, true),
      transfer.kind === 'ERC20'
        ? request({
            method: 'eth_call',
            params: [
              {
                to: transfer.txTo,
                data: encodeFunctionData({ abi: erc20Abi, functionName: 'balanceOf', args: [transfer.from] }),
              },
              'latest',
            ],
          })
        : Promise.resolve(undefined),
    ]);

    // A call without a usable answer goes first: the others' verdicts may hinge on it (a revert in estimation
    // is only EXECUTION_FAILED once the token balance is known to cover the transfer).
    if (quoteResult.status === 'rejected') throw quoteResult.reason;
    const estimateFailure = estimateResult.status === 'rejected' ? readRpcFailure(estimateResult.reason) : undefined;
    const balanceFailure = balanceResult.status === 'rejected' ? readRpcFailure(balanceResult.reason) : undefined;
    if (balanceFailure?.kind === 'unavailable') throw unavailable('token balance', balanceFailure);
    if (estimateFailure?.kind === 'unavailable') throw unavailable('gas estimation', estimateFailure);

    if (transfer.kind === 'ERC20') {
      // A token contract answers balanceOf with one 32-byte word; an address without code answers "0x".
      const balance = balanceResult.status === 'fulfilled' ? balanceResult.value : undefined;
      if (balanceFailure || typeof balance !== 'string' || !WORD.test(balance)) {
        throw new ChainRpcError(
          'final',
          'INVALID_TOKEN',
          `tokenAddress ${transfer.txTo} is not an ERC-20 token on chain ${chainId}: it does not answer balanceOf`,
        );
      }
      if (BigInt(balance) < transfer.tokenValue!) {
        throw new ChainRpcError(
          'final',
          'INSUFFICIENT_TOKEN_BALANCE',
          `the wallet holds ${BigInt(balance)} units of token ${transfer.txTo}, less than the ${transfer.tokenValue} to send`,
        );
      }
    }

    let estimate: unknown = estimateResult.status === 'fulfilled' ? estimateResult.value : undefined;
    if (estimateFailure) {
      // An unfunded or underfunded wallet must still get its payment built: the record is created and the
      // node's broadcast verdict fails it with INSUFFICIENT_NATIVE_BALANCE. Nodes that check the value against
      // the balance in estimation (geth: "insufficient funds for transfer") are asked again without the value,
      // which prices the same call for an account recipient. Should even that fail, the node has judged the
      // transfer unaffordable and cannot price it: that verdict is final.
      if (transfer.kind === 'NATIVE' && isInsufficientFunds(estimateFailure)) {
        try {
          estimate = await estimateGas(transfer, false);
        } catch (error) {
          const retryFailure = readRpcFailure(error);
          if (retryFailure.kind === 'unavailable') throw unavailable('gas estimation', retryFailure);
          throw new ChainRpcError(
            'final',
            'INSUFFICIENT_NATIVE_BALANCE',
            `the wallet cannot pay the value, and the transfer cannot be estimated without it: ${estimateFailure.message}`,
          );
        }
      } else {
        throw estimationFailed(estimateFailure);
      }
    }
    // Spec: an estimated gas limit carries a 20% buffer, rounded up; a given one is kept.
    const gasLimit =
      fixed.gasLimit !== undefined ? BigInt(fixed.gasLimit) : (quantity(estimate, 'gas estimate') * 6n + 4n) / 5n;

    const quote = feesFor(fixed, quoteResult.value);
    const payment: EvmUnsignedPayment = {
      family: 'EVM',
      chainId,
      type: quote.type,
      to: transfer.txTo,
      value: transfer.txValue.toString(),
      data: transfer.data,
      gasLimit: gasLimit.toString(),
      ...(quote.type === 2
        ? { maxFeePerGas: quote.maxFeePerGas!.toString(), maxPriorityFeePerGas: quote.tip!.toString() }
        : { gasPrice: quote.gasPrice!.toString() }),
    };
    return { payment, quote };
  }

  return {
    family: 'EVM',
    key: `evm:${chainId}`,
    environment,

    async buildTransfer(from, intent) {
      return (await build(from, intent)).payment;
    },

    async estimateFee(from, intent): Promise<FeeEstimate> {
      const { payment, quote } = await build(from, intent);
      const gasLimit = BigInt(payment.gasLimit);
      const perGasCap = quote.type === 2 ? quote.maxFeePerGas! : quote.gasPrice!;
      // Type 2 pays the base fee plus its tip, never above its cap (the cap is all that is known without a base fee).
      let perGasNow = quote.type === 2 && quote.baseFee !== undefined ? quote.baseFee + quote.tip! : perGasCap;
      if (perGasNow > perGasCap) perGasNow = perGasCap;
      return {
        family: 'EVM',
        chainId: String(chainId),
        type: payment.type,
        gasLimit: payment.gasLimit,
        ...(payment.type === 2
          ? { maxFeePerGas: payment.maxFeePerGas!, maxPriorityFeePerGas: payment.maxPriorityFeePerGas! }
          : { gasPrice: payment.gasPrice! }),
        ...(quote.baseFee === undefined ? {} : { baseFeePerGas: quote.baseFee.toString() }),
        maxFee: (gasLimit * perGasCap).toString(),
        expectedFee: (gasLimit * perGasNow).toString(),
      };
    },

    async buildCall(from, call) {
      const transfer: ParsedTransfer = {
        from: parseEvmAddress(from, 'from') as `0x${string}`,
        kind: 'NATIVE',
        txTo: parseEvmAddress(call.to, 'to') as `0x${string}`,
        txValue: 0n,
        data: call.data,
      };
      const [quoteResult, estimateResult] = await Promise.allSettled([feeQuote(), estimateGas(transfer, false)]);
      if (quoteResult.status === 'rejected') throw quoteResult.reason;
      if (estimateResult.status === 'rejected') {
        const failure = readRpcFailure(estimateResult.reason);
        if (failure.kind === 'unavailable') throw unavailable('gas estimation', failure);
        // The node's verdict, with the revert it carries (the caller reads the contract's reason from `cause`).
        throw new ChainRpcError('final', 'EXECUTION_FAILED', `the call would fail on chain: ${failure.message}`, {
          cause: failure,
        });
      }
      // Spec: an estimated gas limit carries a 20% buffer, rounded up.
      const gasLimit = (quantity(estimateResult.value, 'gas estimate') * 6n + 4n) / 5n;
      const quote = feesFor({}, quoteResult.value);
      return {
        family: 'EVM',
        chainId,
        type: quote.type,
        to: transfer.txTo,
        value: '0',
        data: transfer.data,
        gasLimit: gasLimit.toString(),
        ...(quote.type === 2
          ? { maxFeePerGas: quote.maxFeePerGas!.toString(), maxPriorityFeePerGas: quote.tip!.toString() }
          : { gasPrice: quote.gasPrice!.toString() }),
      } satisfies EvmUnsignedPayment;
    },

    async inclusionDepth(hash) {
      if (!/^0x[0-9a-fA-F]{64}$/.test(hash)) throw new ChainInputError(`${hash} is not a transaction hash`, 'hash');
      // Reads asked in the same turn share one request (their receipts, then the head once).
      const { own, shared } = await readDepths([{ method: 'eth_getTransactionReceipt', params: [hash] }]);
      const [receiptAnswer] = own;
      const [headAnswer] = shared;
      if (!receiptAnswer?.ok) throw depthUnavailable(receiptAnswer);
      if (!headAnswer?.ok) throw depthUnavailable(headAnswer);
      const head = quantity(headAnswer.result, 'block number');
      const receipt = receiptAnswer.result as Record<string, unknown> | null;
      if (receipt === null || receipt.blockNumber === null || receipt.blockNumber === undefined) return null;
      if (typeof receipt !== 'object' || (receipt.status !== '0x1' && receipt.status !== '0x0')) {
        throw new ChainRpcError('transient', 'RPC_UNAVAILABLE', "the chain's RPC node gave no usable receipt");
      }
      const blockNumber = quantity(receipt.blockNumber, 'receipt block number');
      if (typeof receipt.blockHash !== 'string' || !/^0x[0-9a-fA-F]{64}$/.test(receipt.blockHash)) {
        throw new ChainRpcError('transient', 'RPC_UNAVAILABLE', "the chain's RPC node gave no usable receipt");
      }
      return {
        success: receipt.status === '0x1',
        blockNumber: blockNumber.toString(),
        blockHash: receipt.blockHash,
        // The receipt's block is the first confirmation; a head behind it (a lagging node) shows none yet.
        confirmations: head >= blockNumber ? Number(head - blockNumber + 1n) : 0,
      };
    },

    async pendingNonce(from) {
      const address = parseEvmAddress(from, 'from');
      let count: unknown;
      try {
        count = await request({ method: 'eth_getTransactionCount', params: [address, 'pending'] });
      } catch (error) {
        throw unavailable('pending nonce', readRpcFailure(error));
      }
      const nonce = quantity(count, 'pending nonce');
      if (nonce > BigInt(Number.MAX_SAFE_INTEGER)) {
        throw new ChainRpcError('transient', 'RPC_UNAVAILABLE', "the chain's RPC node gave no usable pending nonce");
      }
      return Number(nonce);
    },

    async replacementMarket(from) {
      const address = parseEvmAddress(from, 'from');
      // The quote transfers share (at most feeDataMaxAgeMs old: a thousand replacements due together ask the node
      // once) and the balance, in the same batch.
      const [quote, balance] = await Promise.allSettled([
        feeQuote(),
        request({ method: 'eth_getBalance', params: [address, 'latest'] }),
      ]);
      if (quote.status === 'rejected') throw quote.reason;
      if (balance.status === 'rejected') throw unavailable('balance', readRpcFailure(balance.reason));
      const q = quote.value;
      const tip = q.tip ?? 0n;
      const gasPrice = q.gasPrice ?? (q.baseFee ?? 0n) + tip;
      // Whether a replacement can be included now is the next block's question: its base fee, when the node's fee
      // history names it (the latest block's can be an eighth off either way, or more where the base fee is set).
      const baseFee = q.nextBaseFee ?? q.baseFee;
      return {
        ...(baseFee === undefined ? {} : { baseFee }),
        tip,
        gasPrice,
        balance: quantity(balance.value, 'balance'),
      };
    },

    async broadcast(signedTransaction) {
      if (typeof signedTransaction !== 'string' || !SIGNED_TRANSACTION.test(signedTransaction)) {
        throw new ChainInputError(
          'signedTransaction must be 0x followed by the hex of the signed transaction',
          'signedTransaction',
        );
      }
      let failure: RpcFailure;
      try {
        await request({ method: 'eth_sendRawTransaction', params: [signedTransaction] });
        return;
      } catch (error) {
        failure = readRpcFailure(error);
      }
      const verdict = classifyBroadcastFailure(failure);
      if (verdict === 'already_known') return;
      if (verdict !== 'nonce_too_low') throw verdict;
      // A rebroadcast of a transaction already mined is refused as "nonce too low" too: the same hash known to
      // the node (pending or mined) means these bytes were accepted.
      const hash = keccak256(signedTransaction as `0x${string}`);
      let known: unknown;
      try {
        known = await request({ method: 'eth_getTransactionByHash', params: [hash] });
      } catch (error) {
        throw unavailable('transaction lookup after "nonce too low"', readRpcFailure(error));
      }
      if (known !== null && known !== undefined) return;
      throw new ChainRpcError('final', 'NONCE_TOO_LOW', `the transaction's nonce is already used: ${failure.message}`);
    },

    observe(items) {
      return observeEvmTransactions(poster, items, observeMemory);
    },

    // An EVM transaction names its chain id, which selected this chain: nothing more to prove.
    async checkPartnerTransaction() {},

    async readYieldPosition(market: LendingMarket, account: `0x${string}`) {
      if (market.chainId !== chainId) {
        throw new Error(`the lending market of chain ${market.chainId} was asked of chain ${chainId}`);
      }
      return readYieldPosition(checkedPoster, market, account);
    },
  };
}
