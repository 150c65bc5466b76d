import { ChainInputError } from '../chain-input-error.ts';
import { ChainRpcError, type Observation, type ObserveItem, type ObserveRound } from '../payment-chain.ts';
import type { RpcAnswer, RpcBatchPoster } from './create-rpc-batch-poster.ts';

const HASH = /^0x[0-9a-fA-F]{64}$/;
const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const QUANTITY = /^0x[0-9a-fA-F]{1,64}$/;

interface Receipt {
  blockNumber: bigint;
  blockHash: string;
  success: boolean;
}

function unusable(what: string): ChainRpcError {
  return new ChainRpcError('transient', 'RPC_UNAVAILABLE', `the chain's RPC node gave no usable ${what}`);
}

function resultOf(answer: RpcAnswer | undefined, what: string): unknown {
  if (!answer) throw unusable(what);
  if (!answer.ok) throw new ChainRpcError('transient', 'RPC_UNAVAILABLE', `${what}: ${answer.failure.message}`);
  return answer.result;
}

function readReceipt(answer: RpcAnswer | undefined): Receipt | undefined {
  const receipt = resultOf(answer, 'transaction receipt');
  if (receipt === null) return undefined;
  if (typeof receipt !== 'object') throw unusable('transaction receipt');
  const { blockNumber, blockHash, status } = receipt as Record<string, unknown>;
  // Some nodes show a pending transaction's receipt with no block yet: it is not included.
  if (blockNumber === null || blockNumber === undefined) return undefined;
  if (
    typeof blockNumber !== 'string' ||
    !QUANTITY.test(blockNumber) ||
    typeof blockHash !== 'string' ||
    !HASH.test(blockHash) ||
    (status !== '0x1' && status !== '0x0')
  ) {
    throw unusable('transaction receipt');
  }
  return { blockNumber: BigInt(blockNumber), blockHash, success: status === '0x1' };
}

function included(receipt: Receipt, finalized: bigint): Observation {
  return {
    status: 'included',
    // The node answers receipts from its canonical chain only, and never reorganizes that chain at or below its
    // finalized block. So a receipt in a block numbered at or below the finalized number read in the same batch
    // sits in a finalized block, which cannot change. (The batch's calls are not atomic, but a block that was
    // canonical at one moment and not finalized could only lose its place if the chain reorganized it away and then
    // finalized past its height within the batch, while finality trails the head by epochs.)
    final: receipt.blockNumber <= finalized,
    success: receipt.success,
    blockNumber: receipt.blockNumber.toString(),
    blockHash: receipt.blockHash,
    ...(receipt.success ? {} : { error: 'execution reverted (receipt status 0)' }),
  };
}

/**
 * One polling round over EVM transactions in at most three rounds of HTTP requests whatever the item count
 * (one request per round unless `maxBatchSize` splits a round):
 * 1. `eth_getBlockByNumber('finalized')` and `eth_getTransactionReceipt` of every hash, in one batch.
 * 2. Only for items without a receipt that carry a nonce: `eth_getTransactionCount(from, 'finalized')` once per
 *    distinct sender.
 * 3. Only for items whose sender's finalized nonce is past their nonce: their receipts again. This round, read
 *    after the finalized nonce, is what proves `nonce_consumed`: the finalized transaction holding that nonce is
 *    in a block that can no longer change, so if it were this hash the node would show its receipt. (Round 1
 *    alone races a transaction included between the two rounds.)
 * `roundTrips` is the number of HTTP requests made. Throws a `ChainInputError` for a malformed item and a
 * transient `ChainRpcError` RPC_UNAVAILABLE when the node does not answer usably.
 */
export async function observeEvmTransactions(
  poster: Pick<RpcBatchPoster, 'post'>,
  items: readonly ObserveItem[],
): Promise<ObserveRound> {
  const byHash = new Map<string, ObserveItem>();
  items.forEach((item, i) => {
    if (typeof item?.hash !== 'string' || !HASH.test(item.hash)) {
      throw new ChainInputError(`items[${i}].hash must be 0x followed by 64 hex characters`, `items[${i}].hash`);
    }
    if (item.nonce !== undefined) {
      if (!Number.isSafeInteger(item.nonce) || item.nonce < 0) {
        throw new ChainInputError(`items[${i}].nonce must be a non-negative integer`, `items[${i}].nonce`);
      }
      if (typeof item.from !== 'string' || !ADDRESS.test(item.from)) {
        throw new ChainInputError(`items[${i}].from must be an EVM address`, `items[${i}].from`);
      }
    }
    if (!byHash.has(item.hash)) byHash.set(item.hash, item);
  });
  const observations = new Map<string, Observation>();
  if (byHash.size === 0) return { observations, roundTrips: 0 };
  const hashes = [...byHash.keys()];
  let roundTrips = 0;

  const first = await poster.post([
    { method: 'eth_getBlockByNumber', params: ['finalized', false] },
    ...hashes.map((hash) => ({ method: 'eth_getTransactionReceipt', params: [hash] })),
  ]);
  roundTrips += first.requests;
  const block = resultOf(first.answers[0], 'finalized block');
  const finalizedNumber = (block as { number?: unknown } | null)?.number;
  if (typeof finalizedNumber !== 'string' || !QUANTITY.test(finalizedNumber)) throw unusable('finalized block');
  const finalized = BigInt(finalizedNumber);

  const candidates: ObserveItem[] = [];
  hashes.forEach((hash, i) => {
    const receipt = readReceipt(first.answers[i + 1]);
    if (receipt) {
      observations.set(hash, included(receipt, finalized));
      return;
    }
    observations.set(hash, { status: 'unknown' });
    const item = byHash.get(hash)!;
    if (item.nonce !== undefined) candidates.push(item);
  });
  if (candidates.length === 0) return { observations, roundTrips };

  const senders = [...new Set(candidates.map((item) => item.from.toLowerCase()))];
  const second = await poster.post(
    senders.map((sender) => ({ method: 'eth_getTransactionCount', params: [sender, 'finalized'] })),
  );
  roundTrips += second.requests;
  const finalizedNonces = new Map<string, bigint>();
  senders.forEach((sender, i) => {
    const count = resultOf(second.answers[i], 'finalized account nonce');
    if (typeof count !== 'string' || !QUANTITY.test(count)) throw unusable('finalized account nonce');
    finalizedNonces.set(sender, BigInt(count));
  });
  const consumed = candidates.filter((item) => finalizedNonces.get(item.from.toLowerCase())! > BigInt(item.nonce!));
  if (consumed.length === 0) return { observations, roundTrips };

  const third = await poster.post(
    consumed.map((item) => ({ method: 'eth_getTransactionReceipt', params: [item.hash] })),
  );
  roundTrips += third.requests;
  consumed.forEach((item, i) => {
    const receipt = readReceipt(third.answers[i]);
    observations.set(
      item.hash,
      receipt ? included(receipt, finalized) : { status: 'dropped', reason: 'nonce_consumed' },
    );
  });
  return { observations, roundTrips };
}
