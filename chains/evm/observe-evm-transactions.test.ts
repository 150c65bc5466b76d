import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { RpcAnswer, RpcCall } from './create-rpc-batch-poster.ts';
import { createEvmObserveMemory, observeEvmTransactions, RECHECK_INCLUDED_MS } from './observe-evm-transactions.ts';

const FROM = `0x${'11'.repeat(20)}`;
const hashOf = (n: number) => `0x${n.toString(16).padStart(64, '0')}`;
const blockHashOf = (n: number, fork = 0) => `0x${(fork * 1_000_000 + n).toString(16).padStart(64, 'b')}`;
const hex = (n: number) => `0x${n.toString(16)}`;

/**
 * A node in memory: which block (and fork) holds each transaction, the finalized height and each sender's finalized
 * nonce. Records every batch it is sent.
 */
function fakeNode() {
  const node = {
    finalized: 10,
    fork: 0,
    /** hash → block number (on the current fork) and success. */
    mined: new Map<string, { block: number; success: boolean }>(),
    finalizedNonce: new Map<string, number>(),
    /** Sender → the block at which its account nonce became the finalized one (its count below that is one less). */
    nonceRaisedAt: new Map<string, number>(),
    /** Block number → its transactions (eth_getBlockByNumber with a number and full transactions). */
    blocks: new Map<number, Array<{ hash: string; from: string; nonce: string }>>(),
    batches: [] as RpcCall[][],
    poster: {
      async post(calls: readonly RpcCall[]): Promise<{ answers: RpcAnswer[]; requests: number }> {
        node.batches.push([...calls]);
        return { answers: calls.map((call) => ({ ok: true, result: node.answer(call) })), requests: 1 };
      },
    },
    answer(call: RpcCall): unknown {
      if (call.method === 'eth_getBlockByNumber' && call.params[0] !== 'finalized') {
        const n = Number(call.params[0]);
        return { number: hex(n), hash: blockHashOf(n, node.fork), transactions: node.blocks.get(n) ?? [] };
      }
      if (call.method === 'eth_getBlockByNumber') {
        return { number: hex(node.finalized), hash: blockHashOf(node.finalized, node.fork) };
      }
      if (call.method === 'eth_getTransactionReceipt') {
        const tx = node.mined.get(call.params[0] as string);
        if (!tx) return null;
        return {
          blockNumber: hex(tx.block),
          blockHash: blockHashOf(tx.block, node.fork),
          status: tx.success ? '0x1' : '0x0',
        };
      }
      if (call.method === 'eth_getTransactionCount') {
        const [sender, at] = call.params as [string, string];
        const nonce = node.finalizedNonce.get(sender) ?? 0;
        const raised = node.nonceRaisedAt.get(sender);
        return hex(at !== 'finalized' && raised !== undefined && Number(at) < raised ? nonce - 1 : nonce);
      }
      throw new Error(`unexpected ${call.method}`);
    },
    /** Receipts asked for in the last round's batches. */
    receiptsAsked(batches: RpcCall[][]): string[] {
      return batches.flat().flatMap((c) => (c.method === 'eth_getTransactionReceipt' ? [c.params[0] as string] : []));
    },
  };
  return node;
}

async function round(
  node: ReturnType<typeof fakeNode>,
  memory: ReturnType<typeof createEvmObserveMemory>,
  items: Array<{ hash: string; nonce?: number }>,
) {
  const before = node.batches.length;
  const result = await observeEvmTransactions(
    node.poster,
    items.map((i) => ({ from: FROM, ...i })),
    memory,
  );
  const batches = node.batches.slice(before);
  return { ...result, batches, receipts: node.receiptsAsked(batches) };
}

describe('observeEvmTransactions with a memory', () => {
  it('does not look up an inclusion again until the finalized block reaches it, then confirms it by the finalized hash', async () => {
    const node = fakeNode();
    const memory = createEvmObserveMemory({ nonceCheckAfterMs: 0 });
    const a = hashOf(1);
    node.mined.set(a, { block: 12, success: true });

    const first = await round(node, memory, [{ hash: a }]);
    assert.deepEqual(first.observations.get(a), {
      status: 'included',
      final: false,
      success: true,
      blockNumber: '12',
      blockHash: blockHashOf(12),
    });
    assert.deepEqual(first.receipts, [a]);

    node.finalized = 11;
    const waiting = await round(node, memory, [{ hash: a }]);
    assert.deepEqual(waiting.receipts, [], 'not asked again while its block is not finalized');
    assert.equal(waiting.roundTrips, 1);
    assert.deepEqual(waiting.observations.get(a), first.observations.get(a));

    node.finalized = 12;
    const final = await round(node, memory, [{ hash: a }]);
    assert.deepEqual(final.receipts, [], 'its block is the finalized block: the hash proves it');
    assert.equal(final.roundTrips, 1);
    assert.deepEqual(final.observations.get(a), { ...first.observations.get(a), final: true });
    assert.equal(memory.awaitingFinality.size, 0);
  });

  it('reads the receipt again when the finalized block passed its block, or holds another hash at its height', async () => {
    const node = fakeNode();
    const memory = createEvmObserveMemory({ nonceCheckAfterMs: 0 });
    const [passed, forked, gone] = [hashOf(1), hashOf(2), hashOf(3)];
    node.mined.set(passed, { block: 11, success: false });
    node.mined.set(forked, { block: 12, success: true });
    node.mined.set(gone, { block: 12, success: true });
    await round(node, memory, [{ hash: passed }, { hash: forked }, { hash: gone }]);

    // The chain reorganized at 12: `forked` moved to block 13 of the new fork, `gone` is in no block; then the
    // finalized block jumped to 12 (the new fork's).
    node.fork = 1;
    node.mined.set(forked, { block: 13, success: true });
    node.mined.delete(gone);
    node.finalized = 12;
    const r = await round(node, memory, [{ hash: passed }, { hash: forked }, { hash: gone }]);
    assert.equal(r.roundTrips, 2, 'the finalized block, then the receipts it reaches');
    assert.deepEqual(r.batches[1]!.map((c) => c.params[0]).sort(), [forked, gone, passed].sort());
    assert.deepEqual(r.observations.get(passed), {
      status: 'included',
      final: true,
      success: false,
      blockNumber: '11',
      blockHash: blockHashOf(11, 1),
      error: 'execution reverted (receipt status 0)',
    });
    assert.deepEqual(r.observations.get(forked), {
      status: 'included',
      final: false,
      success: true,
      blockNumber: '13',
      blockHash: blockHashOf(13, 1),
    });
    assert.deepEqual(r.observations.get(gone), { status: 'unknown' });

    // Forgotten: the next round looks `gone` up with the others in its first request.
    const next = await round(node, memory, [{ hash: gone }]);
    assert.deepEqual(next.batches[0]!.slice(1), [{ method: 'eth_getTransactionReceipt', params: [gone] }]);
  });

  it('reads a remembered inclusion again after a minute, and follows a reorganization that dropped it', async () => {
    const node = fakeNode();
    let now = 0;
    const memory = createEvmObserveMemory({ nonceCheckAfterMs: 0, now: () => now });
    const a = hashOf(1);
    node.mined.set(a, { block: 40, success: true });
    await round(node, memory, [{ hash: a }]);
    now += RECHECK_INCLUDED_MS - 1;
    assert.deepEqual((await round(node, memory, [{ hash: a }])).receipts, []);
    node.mined.delete(a);
    now += 1;
    const recheck = await round(node, memory, [{ hash: a }]);
    assert.deepEqual(recheck.batches[0]!.slice(1), [{ method: 'eth_getTransactionReceipt', params: [a] }]);
    assert.deepEqual(recheck.observations.get(a), { status: 'unknown' });
    assert.equal(memory.awaitingFinality.has(a), false);
  });

  it('reads the finalized nonce of a transaction without a receipt only once it has had none for nonceCheckAfterMs', async () => {
    const node = fakeNode();
    let now = 1_000_000;
    const memory = createEvmObserveMemory({ nonceCheckAfterMs: 10_000, now: () => now });
    const replaced = hashOf(7);
    const winner = hashOf(70);
    const item = { hash: replaced, nonce: 4 };
    node.finalizedNonce.set(FROM, 5);
    node.nonceRaisedAt.set(FROM, 8);
    node.blocks.set(8, [{ hash: winner, from: FROM, nonce: hex(4) }]);

    const early = await round(node, memory, [item]);
    assert.equal(early.roundTrips, 1, 'no nonce read in the first 10 s');
    assert.deepEqual(early.observations.get(replaced), { status: 'unknown' });
    now += 9_999;
    assert.equal((await round(node, memory, [item])).roundTrips, 1);
    now += 1;
    const due = await round(node, memory, [item]);
    assert.equal(due.roundTrips, 6, 'receipts, the finalized nonce, the receipt again, two nonce probes, the block');
    assert.deepEqual(due.batches[1], [{ method: 'eth_getTransactionCount', params: [FROM, 'finalized'] }]);
    assert.deepEqual(due.observations.get(replaced), {
      status: 'dropped',
      reason: 'nonce_consumed',
      winningHash: winner,
    });
    // The winner is remembered: the next round proves it again without searching.
    now += 1;
    const again = await round(node, memory, [item]);
    assert.equal(again.roundTrips, 3);
    assert.deepEqual(again.observations.get(replaced), {
      status: 'dropped',
      reason: 'nonce_consumed',
      winningHash: winner,
    });
  });

  it('a receipt resets the wait, and entries no round asked about for ten minutes are forgotten', async () => {
    const node = fakeNode();
    let now = 0;
    const memory = createEvmObserveMemory({ nonceCheckAfterMs: 10_000, now: () => now });
    const [a, b] = [hashOf(1), hashOf(2)];
    await round(node, memory, [
      { hash: a, nonce: 1 },
      { hash: b, nonce: 2 },
    ]);
    assert.equal(memory.missingSince.size, 2);
    node.mined.set(a, { block: 20, success: true });
    now += 1_000;
    await round(node, memory, [
      { hash: a, nonce: 1 },
      { hash: b, nonce: 2 },
    ]);
    assert.equal(memory.missingSince.has(a), false);
    assert.equal(memory.awaitingFinality.has(a), true);
    now += 11 * 60_000;
    await round(node, memory, [{ hash: hashOf(3), nonce: 3 }]);
    assert.deepEqual([...memory.awaitingFinality.keys(), ...memory.missingSince.keys()], [hashOf(3)]);
  });
});
