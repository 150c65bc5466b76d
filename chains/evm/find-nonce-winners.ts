import type { RpcAnswer, RpcBatchPoster } from './create-rpc-batch-poster.ts';

const QUANTITY = /^0x[0-9a-fA-F]{1,64}$/;
const HASH = /^0x[0-9a-fA-F]{64}$/;
/** Heights asked per pair in one narrowing step: the gap shrinks about this much plus one times a request. */
const SPLIT = 16;

/** The transaction that used a sender's nonce, in a block at or below the finalized one. */
export interface NonceWinner {
  hash: string;
  blockNumber: bigint;
}

export const winnerKey = (sender: string, nonce: number) => `${sender.toLowerCase()}:${nonce}`;

const hex = (n: bigint) => `0x${n.toString(16)}`;

function count(answer: RpcAnswer | undefined): bigint | undefined {
  if (!answer?.ok || typeof answer.result !== 'string' || !QUANTITY.test(answer.result)) return undefined;
  return BigInt(answer.result);
}

/** What is known of one search: the nonce is unused at `lo` (when known) and used at `hi`. */
interface Search {
  sender: string;
  nonce: number;
  lo: bigint | undefined;
  hi: bigint;
  failed: boolean;
}

/**
 * Finds, for each (sender, nonce) whose finalized account nonce has passed `nonce`, the transaction that used it: the
 * first block whose `eth_getTransactionCount` of the sender is past the nonce holds the sender's transaction with that
 * nonce. The searches run together, each step one batch for all of them: heights below `finalized` at doubling
 * distances until one where the nonce was unused, then splits of the gap until it is one block, then that block's
 * transactions. A pair the node cannot settle (state pruned at the heights asked, errors, a block without the
 * transaction) is absent from the answer: not finding a winner proves nothing. `requests` counts HTTP requests.
 */
export async function findNonceWinners(
  poster: Pick<RpcBatchPoster, 'post'>,
  pairs: ReadonlyArray<{ sender: string; nonce: number }>,
  finalized: bigint,
): Promise<{ winners: Map<string, NonceWinner>; requests: number }> {
  const winners = new Map<string, NonceWinner>();
  let requests = 0;
  const searches: Search[] = [];
  const seen = new Set<string>();
  for (const { sender, nonce } of pairs) {
    const key = winnerKey(sender, nonce);
    if (seen.has(key)) continue;
    seen.add(key);
    searches.push({ sender: sender.toLowerCase(), nonce, lo: undefined, hi: finalized, failed: false });
  }
  if (searches.length === 0) return { winners, requests };

  /** Asks each search's heights in one batch and moves its bounds by the counts answered. */
  async function probe(heightsOf: (s: Search) => bigint[]): Promise<void> {
    // A search that has converged asks nothing (and an empty answer must not fail it).
    const asked = searches
      .filter((s) => !s.failed)
      .map((s) => ({ s, heights: heightsOf(s) }))
      .filter(({ heights }) => heights.length > 0);
    const calls = asked.flatMap(({ s, heights }) =>
      heights.map((h) => ({ method: 'eth_getTransactionCount', params: [s.sender, hex(h)] })),
    );
    if (calls.length === 0) return;
    const { answers, requests: made } = await poster.post(calls);
    requests += made;
    let i = 0;
    for (const { s, heights } of asked) {
      const known = heights.map((h) => ({ h, c: count(answers[i++]) }));
      if (known.every((k) => k.c === undefined)) {
        s.failed = true;
        continue;
      }
      for (const { h, c } of known) {
        if (c === undefined) continue;
        if (c > BigInt(s.nonce)) {
          if (h < s.hi) s.hi = h;
        } else if (s.lo === undefined || h > s.lo) s.lo = h;
      }
    }
  }

  // Doubling distances below the finalized block (the nonce is used there), down to the genesis block.
  await probe(() => {
    const heights: bigint[] = [];
    for (let d = 1n; d <= finalized; d *= 2n) heights.push(finalized - d);
    if (heights.at(-1) !== 0n && finalized > 0n) heights.push(0n);
    return heights;
  });
  for (const s of searches) if (s.lo === undefined || s.lo >= s.hi) s.failed = true;
  // Split each gap until the first block past the nonce is known.
  while (searches.some((s) => !s.failed && s.hi - s.lo! > 1n)) {
    await probe((s) => {
      const gap = s.hi - s.lo!;
      if (gap <= 1n) return [];
      const step = gap / BigInt(SPLIT + 1) || 1n;
      const heights: bigint[] = [];
      for (let h = s.lo! + step; h < s.hi && heights.length < SPLIT; h += step) heights.push(h);
      return heights;
    });
  }

  const byBlock = new Map<bigint, Search[]>();
  for (const s of searches) {
    if (s.failed) continue;
    byBlock.set(s.hi, [...(byBlock.get(s.hi) ?? []), s]);
  }
  if (byBlock.size === 0) return { winners, requests };
  const blocks = [...byBlock.keys()];
  const { answers, requests: made } = await poster.post(
    blocks.map((b) => ({ method: 'eth_getBlockByNumber', params: [hex(b), true] })),
  );
  requests += made;
  blocks.forEach((b, i) => {
    const answer = answers[i];
    const txs = answer?.ok ? (answer.result as { transactions?: unknown } | null)?.transactions : undefined;
    if (!Array.isArray(txs)) return;
    for (const s of byBlock.get(b)!) {
      const tx = txs.find(
        (t) =>
          typeof t === 'object' &&
          t !== null &&
          typeof (t as { from?: unknown }).from === 'string' &&
          (t as { from: string }).from.toLowerCase() === s.sender &&
          typeof (t as { nonce?: unknown }).nonce === 'string' &&
          QUANTITY.test((t as { nonce: string }).nonce) &&
          BigInt((t as { nonce: string }).nonce) === BigInt(s.nonce),
      ) as { hash?: unknown } | undefined;
      if (tx && typeof tx.hash === 'string' && HASH.test(tx.hash)) {
        winners.set(winnerKey(s.sender, s.nonce), { hash: tx.hash.toLowerCase(), blockNumber: b });
      }
    }
  });
  return { winners, requests };
}
