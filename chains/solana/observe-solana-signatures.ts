import bs58 from 'bs58';
import { isPlainObject } from '../is-plain-object.ts';
import { ChainRpcError, type Observation, type ObserveItem, type ObserveRound } from '../payment-chain.ts';
import {
  type RoundTripCounter,
  rpcResult,
  type SolanaRpc,
  type SolanaRpcCall,
  type SolanaRpcOutcome,
} from './create-solana-rpc.ts';
import { describeSolanaTransactionError } from './describe-solana-transaction-error.ts';

/** The most signatures `getSignatureStatuses` takes per call. */
const STATUS_CHUNK = 256;

const malformed = (what: string): ChainRpcError =>
  new ChainRpcError('transient', 'RPC_UNAVAILABLE', `the Solana RPC answered ${what} in an unexpected shape`);

function decodesTo(value: unknown, length: number): value is string {
  if (typeof value !== 'string' || value.length > 88) return false;
  try {
    return bs58.decode(value).length === length;
  } catch {
    return false;
  }
}

const resultOf = rpcResult;

/** `getBlock` of a finalized slot, for its blockhash only. */
const blockCall = (slot: number): SolanaRpcCall => ({
  method: 'getBlock',
  params: [
    slot,
    { commitment: 'finalized', transactionDetails: 'none', rewards: false, maxSupportedTransactionVersion: 0 },
  ],
});

/** Entries a round has not asked about for this long are forgotten. */
const FORGET_AFTER_MS = 10 * 60_000;

/**
 * What the rounds of one chain remember: since when each signature has been absent after its blockhash was seen
 * expired. An absence is proof only once it has lasted `proofAfterMs`: a node's status index can lag its blocks
 * (a load-balanced RPC, a node catching up), so one empty answer is "not yet known", never absence.
 */
export interface SolanaObserveMemory {
  readonly absentSince: Map<string, { since: number; askedAt: number }>;
  readonly proofAfterMs: number;
  readonly now: () => number;
}

export function createSolanaObserveMemory(opts: { proofAfterMs: number; now?: () => number }): SolanaObserveMemory {
  return { absentSince: new Map(), proofAfterMs: opts.proofAfterMs, now: opts.now ?? Date.now };
}

function statusCalls(signatures: readonly string[]): SolanaRpcCall[] {
  const calls: SolanaRpcCall[] = [];
  for (let start = 0; start < signatures.length; start += STATUS_CHUNK) {
    calls.push({
      method: 'getSignatureStatuses',
      params: [signatures.slice(start, start + STATUS_CHUNK), { searchTransactionHistory: true }],
    });
  }
  return calls;
}

/** Reads the statuses answered to `statusCalls(signatures)`; absent signatures are missing from the map. */
function readStatuses(
  signatures: readonly string[],
  outcomes: readonly SolanaRpcOutcome[],
): Map<string, Observation & { status: 'included' }> {
  const found = new Map<string, Observation & { status: 'included' }>();
  outcomes.forEach((outcome, chunk) => {
    const result = resultOf(outcome, 'getSignatureStatuses');
    const asked = signatures.slice(chunk * STATUS_CHUNK, (chunk + 1) * STATUS_CHUNK);
    const value = isPlainObject(result) ? result['value'] : undefined;
    if (!Array.isArray(value) || value.length !== asked.length) throw malformed('getSignatureStatuses');
    value.forEach((status, index) => {
      if (status === null) return;
      if (!isPlainObject(status) || typeof status['slot'] !== 'number') throw malformed('getSignatureStatuses');
      const err = status['err'] ?? null;
      // Nodes before 1.5 give no confirmationStatus; there, confirmations null means rooted (finalized).
      const final =
        status['confirmationStatus'] === 'finalized' ||
        (status['confirmationStatus'] == null && status['confirmations'] === null);
      const observation: Observation & { status: 'included' } = {
        status: 'included',
        final,
        success: err === null,
        blockNumber: String(status['slot']),
        blockHash: null,
      };
      if (err !== null) observation.error = describeSolanaTransactionError(err);
      found.set(asked[index]!, observation);
    });
  });
  return found;
}

/** Solana's "block cleaned up" and "slot skipped" errors: the node will never give that block. */
const BLOCK_GONE = new Set([-32001, -32007, -32009]);

/**
 * Sets the blockhash of the final observations from `getBlock` answers, one per slot of `slots`. A confirmed record
 * names its block (the spec sets `blockNumber` and `blockHash` together), so a final inclusion whose block the node
 * cannot give yet (an error, "not available", a node catching up) is reported not final: a later round asks again.
 * Only a block the node has pruned for good leaves `blockHash` null on a final inclusion.
 */
function fillBlockhashes(
  observations: Map<string, Observation>,
  slots: readonly number[],
  outcomes: readonly SolanaRpcOutcome[],
): void {
  const bySlot = new Map<string, string>();
  const gone = new Set<string>();
  slots.forEach((slot, index) => {
    const outcome = outcomes[index];
    if (outcome && !outcome.ok && BLOCK_GONE.has(outcome.error.code)) gone.add(String(slot));
    if (!outcome?.ok || !isPlainObject(outcome.result)) return;
    const blockhash = outcome.result['blockhash'];
    if (decodesTo(blockhash, 32)) bySlot.set(String(slot), blockhash);
  });
  const asked = new Set(slots.map(String));
  for (const o of observations.values()) {
    if (o.status !== 'included' || !o.final || !asked.has(o.blockNumber)) continue;
    o.blockHash = bySlot.get(o.blockNumber) ?? null;
    if (o.blockHash === null && !gone.has(o.blockNumber)) o.final = false;
  }
}

function readBoolean(outcome: SolanaRpcOutcome | undefined, method: string): boolean {
  const result = resultOf(outcome!, method);
  const value = isPlainObject(result) ? result['value'] : undefined;
  if (typeof value !== 'boolean') throw malformed(method);
  return value;
}

/**
 * One polling round over many Solana signatures, in at most three HTTP requests whatever their count (four when a
 * re-check is the first to show a final inclusion: its block is read in one more):
 * 1. `getBlockHeight` (finalized) and `getSignatureStatuses` (searchTransactionHistory, 256 per call) in one batch.
 *    A status gives `included` (`final` when finalized; `success` false with a short error text when `err`).
 * 2. Only for items without a status whose blockhash may be dead: items with `lastValidBlockHeight` below the
 *    finalized block height are asked for again (their absence is proof only when read after the expiry was
 *    seen); items with only a `blockhash` get `isBlockhashValid` at finalized and at processed commitment, once per
 *    distinct blockhash (finalized alone would call a blockhash newer than the finalized block dead).
 *    The same batch reads the blockhash of each finalized slot that holds one of them (`getBlock`, no details).
 * 3. Items whose blockhash both commitments call invalid are asked for again.
 * An item still absent after its re-check is `dropped` (`expired`); with a `memory`, only once it has been absent
 * after its expiry for `proofAfterMs` (until then unknown). Items with neither blockhash nor last valid height, and
 * malformed signatures (which no chain can hold), stay unknown (absent from the map).
 */
export async function observeSolanaSignatures(
  rpc: SolanaRpc,
  items: readonly ObserveItem[],
  memory?: SolanaObserveMemory,
): Promise<ObserveRound> {
  const counter: RoundTripCounter = { count: 0 };
  const at = memory?.now() ?? 0;
  if (memory) {
    for (const [hash, entry] of memory.absentSince) {
      if (at - entry.askedAt >= FORGET_AFTER_MS) memory.absentSince.delete(hash);
    }
  }
  /** A signature still absent once its blockhash is dead: dropped, once the absence has lasted long enough. */
  const absent = (hash: string): void => {
    if (!memory) {
      observations.set(hash, { status: 'dropped', reason: 'expired' });
      return;
    }
    let entry = memory.absentSince.get(hash);
    if (!entry) {
      entry = { since: at, askedAt: at };
      memory.absentSince.set(hash, entry);
    }
    entry.askedAt = at;
    if (at - entry.since >= memory.proofAfterMs) observations.set(hash, { status: 'dropped', reason: 'expired' });
  };
  const observations = new Map<string, Observation>();
  const wellFormed = items.filter((item) => decodesTo(item.hash, 64));
  const signatures = [...new Set(wellFormed.map((item) => item.hash))];
  if (signatures.length === 0) return { observations, roundTrips: 0 };

  const first = await rpc.send(
    [{ method: 'getBlockHeight', params: [{ commitment: 'finalized' }] }, ...statusCalls(signatures)],
    counter,
  );
  const finalizedHeight = resultOf(first[0]!, 'getBlockHeight');
  if (typeof finalizedHeight !== 'number') throw malformed('getBlockHeight');
  for (const [hash, observation] of readStatuses(signatures, first.slice(1))) observations.set(hash, observation);

  const expiredByHeight = new Set<string>();
  const byBlockhash = new Map<string, Set<string>>();
  for (const item of wellFormed) {
    if (observations.has(item.hash)) continue;
    if (typeof item.lastValidBlockHeight === 'number') {
      if (finalizedHeight > item.lastValidBlockHeight) expiredByHeight.add(item.hash);
    } else if (decodesTo(item.blockhash, 32)) {
      const hashes = byBlockhash.get(item.blockhash) ?? new Set<string>();
      hashes.add(item.hash);
      byBlockhash.set(item.blockhash, hashes);
    }
  }
  // A signature seen with a lastValidBlockHeight and also without one is settled by the height.
  for (const hashes of byBlockhash.values()) for (const hash of expiredByHeight) hashes.delete(hash);
  // The blockhash of each finalized slot holding one of ours (a record shows it), read in the second batch.
  const finalSlots = [
    ...new Set(
      [...observations.values()].flatMap((o) => (o.status === 'included' && o.final ? [Number(o.blockNumber)] : [])),
    ),
  ];
  if (expiredByHeight.size === 0 && byBlockhash.size === 0 && finalSlots.length === 0) {
    return { observations, roundTrips: counter.count };
  }

  const blockhashes = [...byBlockhash.keys()];
  const recheck = [...expiredByHeight];
  const second = await rpc.send(
    [
      ...blockhashes.flatMap((blockhash) => [
        { method: 'isBlockhashValid', params: [blockhash, { commitment: 'finalized' }] },
        { method: 'isBlockhashValid', params: [blockhash, { commitment: 'processed' }] },
      ]),
      ...statusCalls(recheck),
      ...finalSlots.map(blockCall),
    ],
    counter,
  );
  fillBlockhashes(observations, finalSlots, second.slice(second.length - finalSlots.length));
  const dead = new Set<string>();
  blockhashes.forEach((blockhash, index) => {
    const validFinalized = readBoolean(second[2 * index], 'isBlockhashValid');
    const validProcessed = readBoolean(second[2 * index + 1], 'isBlockhashValid');
    if (!validFinalized && !validProcessed) for (const hash of byBlockhash.get(blockhash)!) dead.add(hash);
  });
  const recheckFound = readStatuses(recheck, second.slice(2 * blockhashes.length, second.length - finalSlots.length));
  for (const hash of recheck) {
    const found = recheckFound.get(hash);
    if (found) observations.set(hash, found);
    else absent(hash);
  }

  const lastCheck = [...dead].filter((hash) => !observations.has(hash));
  if (lastCheck.length > 0) {
    const third = await rpc.send(statusCalls(lastCheck), counter);
    const found = readStatuses(lastCheck, third);
    for (const hash of lastCheck) {
      const o = found.get(hash);
      if (o) observations.set(hash, o);
      else absent(hash);
    }
  }
  // Final inclusions first seen by a re-check (a status index that lagged): their slots' blockhashes, in one more.
  const lateSlots = [
    ...new Set(
      [...observations.values()].flatMap((o) =>
        o.status === 'included' && o.final && o.blockHash === null ? [Number(o.blockNumber)] : [],
      ),
    ),
  ];
  if (lateSlots.length > 0) fillBlockhashes(observations, lateSlots, await rpc.send(lateSlots.map(blockCall), counter));
  if (memory) {
    for (const [hash, o] of observations) if (o.status !== 'dropped') memory.absentSince.delete(hash);
  }
  return { observations, roundTrips: counter.count };
}
