import { ChainInputError } from '../chain-input-error.ts';
import { ChainRpcError, type Observation, type ObserveItem, type ObserveRound } from '../payment-chain.ts';
import type { RpcAnswer, RpcBatchPoster } from './create-rpc-batch-poster.ts';
import { findNonceWinners, type NonceWinner, winnerKey } from './find-nonce-winners.ts';

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

function included(receipt: Receipt, finalized: bigint): IncludedObservation {
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

/** What a receipt shows. */
type IncludedObservation = Extract<Observation, { status: 'included' }>;

/**
 * What one chain's observer carries from a round to the next, so that a round asks the node only what may have
 * changed. Losing it (a restart) costs lookups, never a wrong answer.
 */
export interface EvmObserveMemory {
  /**
   * Inclusions seen before they were final, by hash: not looked up again until the finalized block reaches their
   * block, or `RECHECK_INCLUDED_MS` passed (so a reorganization that drops one is seen within a minute, not only
   * once finality reaches its old height: minutes on Ethereum). Then their receipt is read once more, after the
   * finalized number, which is what proves them final (a reorganization meanwhile shows as another block or none).
   */
  readonly awaitingFinality: Map<
    string,
    { blockNumber: bigint; observation: IncludedObservation; seenAt: number; checkedAt: number }
  >;
  /** By hash: when a round first found no receipt (the finalized-nonce check waits `nonceCheckAfterMs` from it). */
  readonly missingSince: Map<string, { since: number; seenAt: number }>;
  /**
   * How long a transaction without a receipt goes before its sender's finalized nonce is read to prove it
   * replaced. A just-broadcast transaction has no receipt yet in the normal course; asking about every one of them
   * every round is most of a busy round's calls for an outcome that is rare and not urgent.
   */
  readonly nonceCheckAfterMs: number;
  /**
   * By `sender:nonce`: the transaction that used the nonce, found in a finalized block (which never changes), so a
   * search is made once per nonce.
   */
  readonly winners: Map<string, NonceWinner & { seenAt: number }>;
  readonly now: () => number;
  lastSweep: number;
}

/** A remembered inclusion's receipt is read again at least this often while it waits for finality. */
export const RECHECK_INCLUDED_MS = 60_000;

/** Entries of a hash no round has asked about for this long are forgotten. */
const MEMORY_TTL_MS = 10 * 60_000;

export function createEvmObserveMemory(opts: { nonceCheckAfterMs: number; now?: () => number }): EvmObserveMemory {
  const now = opts.now ?? Date.now;
  return {
    awaitingFinality: new Map(),
    missingSince: new Map(),
    nonceCheckAfterMs: opts.nonceCheckAfterMs,
    winners: new Map(),
    now,
    lastSweep: now(),
  };
}

function sweep(memory: EvmObserveMemory, at: number): void {
  if (at - memory.lastSweep < MEMORY_TTL_MS / 10) return;
  memory.lastSweep = at;
  for (const map of [memory.awaitingFinality, memory.missingSince, memory.winners] as Array<
    Map<string, { seenAt: number }>
  >) {
    for (const [hash, entry] of map) if (at - entry.seenAt > MEMORY_TTL_MS) map.delete(hash);
  }
}

/**
 * One polling round over EVM transactions in at most three rounds of HTTP requests whatever the item count
 * (one request per round unless `maxBatchSize` splits a round):
 * 1. `eth_getBlockByNumber('finalized')` and `eth_getTransactionReceipt` of every hash, in one batch; with a
 *    `memory`, of every hash except those seen included (within the last minute) in a block the finalized one has
 *    not reached.
 * 2. Only for items without a receipt that carry a nonce (with a `memory`: that have had none for
 *    `nonceCheckAfterMs`): `eth_getTransactionCount(from, 'finalized')` once per distinct sender; in the same
 *    batch, the receipts of remembered inclusions the finalized block now reaches, except those in the finalized
 *    block itself (same number and hash), which are final without a call.
 * 3. Only for items whose sender's finalized nonce is past their nonce: their receipts again (one included
 *    between the rounds shows now). One still without a receipt is not proven replaced by that alone: a node's
 *    receipt index can lag its state, so an empty lookup means "not yet known". The proof is the transaction that
 *    used the nonce, found on the chain (findNonceWinners: a few more requests, once per nonce, remembered): another
 *    hash is `dropped` (`nonce_consumed`) naming it as `winningHash`; the item's own hash stays unknown until its
 *    receipt shows; a winner the node cannot find leaves the item unknown.
 * `roundTrips` is the number of HTTP requests made. Throws a `ChainInputError` for a malformed item and a
 * transient `ChainRpcError` RPC_UNAVAILABLE when the node does not answer usably.
 */
export async function observeEvmTransactions(
  poster: Pick<RpcBatchPoster, 'post'>,
  items: readonly ObserveItem[],
  memory?: EvmObserveMemory,
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
  const at = memory?.now() ?? 0;
  const lookups: string[] = [];
  const remembered: string[] = [];
  for (const hash of byHash.keys()) {
    const entry = memory?.awaitingFinality.get(hash);
    if (entry && at - entry.checkedAt < RECHECK_INCLUDED_MS) {
      entry.seenAt = at;
      remembered.push(hash);
    } else lookups.push(hash);
  }
  let roundTrips = 0;

  const first = await poster.post([
    { method: 'eth_getBlockByNumber', params: ['finalized', false] },
    ...lookups.map((hash) => ({ method: 'eth_getTransactionReceipt', params: [hash] })),
  ]);
  roundTrips += first.requests;
  const block = resultOf(first.answers[0], 'finalized block');
  const finalizedNumber = (block as { number?: unknown } | null)?.number;
  if (typeof finalizedNumber !== 'string' || !QUANTITY.test(finalizedNumber)) throw unusable('finalized block');
  const finalized = BigInt(finalizedNumber);

  /** Records what a receipt (or its absence) says about `hash`, in the observations and the memory. */
  const observe = (hash: string, receipt: Receipt | undefined): void => {
    if (receipt) {
      const observation = included(receipt, finalized);
      observations.set(hash, observation);
      memory?.missingSince.delete(hash);
      if (!observation.final) {
        memory?.awaitingFinality.set(hash, {
          blockNumber: receipt.blockNumber,
          observation,
          seenAt: at,
          checkedAt: at,
        });
      } else memory?.awaitingFinality.delete(hash);
      return;
    }
    observations.set(hash, { status: 'unknown' });
    memory?.awaitingFinality.delete(hash);
  };
  /** Whether an item without a receipt is due its finalized-nonce check this round. */
  const nonceDue = (hash: string): boolean => {
    if (!memory) return true;
    const missing = memory.missingSince.get(hash);
    if (!missing) {
      memory.missingSince.set(hash, { since: at, seenAt: at });
      return memory.nonceCheckAfterMs <= 0;
    }
    missing.seenAt = at;
    return at - missing.since >= memory.nonceCheckAfterMs;
  };

  const candidates: ObserveItem[] = [];
  lookups.forEach((hash, i) => {
    const receipt = readReceipt(first.answers[i + 1]);
    observe(hash, receipt);
    if (receipt) return;
    const item = byHash.get(hash)!;
    if (item.nonce !== undefined && nonceDue(hash)) candidates.push(item);
  });
  const finalizedHash = (block as { hash?: unknown }).hash;
  const recheck: string[] = [];
  for (const hash of remembered) {
    const entry = memory!.awaitingFinality.get(hash)!;
    if (entry.blockNumber > finalized) observations.set(hash, entry.observation);
    else if (entry.blockNumber === finalized && entry.observation.blockHash === finalizedHash) {
      // Its block is the finalized block itself (the same hash commits to the same transactions and receipts): final
      // without another call. This is the steady case when rounds follow the finalized block one at a time.
      observations.set(hash, { ...entry.observation, final: true });
      memory!.awaitingFinality.delete(hash);
    } else recheck.push(hash);
  }
  if (memory) sweep(memory, at);
  if (candidates.length === 0 && recheck.length === 0) return { observations, roundTrips };

  const senders = [...new Set(candidates.map((item) => item.from.toLowerCase()))];
  const second = await poster.post([
    ...senders.map((sender) => ({ method: 'eth_getTransactionCount', params: [sender, 'finalized'] })),
    ...recheck.map((hash) => ({ method: 'eth_getTransactionReceipt', params: [hash] })),
  ]);
  roundTrips += second.requests;
  recheck.forEach((hash, i) => {
    observe(hash, readReceipt(second.answers[senders.length + i]));
  });
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
  const unproven: ObserveItem[] = [];
  consumed.forEach((item, i) => {
    const receipt = readReceipt(third.answers[i]);
    if (receipt) observe(item.hash, receipt);
    else unproven.push(item);
  });
  if (unproven.length === 0) return { observations, roundTrips };

  const known = (item: ObserveItem) => memory?.winners.get(winnerKey(item.from, item.nonce!));
  const search = unproven.filter((item) => !known(item));
  if (search.length > 0) {
    const found = await findNonceWinners(
      poster,
      search.map((item) => ({ sender: item.from, nonce: item.nonce! })),
      finalized,
    );
    roundTrips += found.requests;
    for (const [key, winner] of found.winners) memory?.winners.set(key, { ...winner, seenAt: at });
    for (const item of search) {
      const winner = found.winners.get(winnerKey(item.from, item.nonce!));
      if (winner) settle(item, winner);
    }
  }
  for (const item of unproven) {
    const winner = known(item);
    if (winner) {
      winner.seenAt = at;
      settle(item, winner);
    }
  }
  return { observations, roundTrips };

  /** A found winner settles an item: another hash proves it replaced; its own hash leaves it to its receipt. */
  function settle(item: ObserveItem, winner: NonceWinner): void {
    if (winner.hash === item.hash.toLowerCase()) observations.set(item.hash, { status: 'unknown' });
    else observations.set(item.hash, { status: 'dropped', reason: 'nonce_consumed', winningHash: winner.hash });
  }
}
