import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { RpcAnswer, RpcCall } from './create-rpc-batch-poster.ts';
import { findNonceWinners, winnerKey } from './find-nonce-winners.ts';

const hex = (n: number | bigint) => `0x${n.toString(16)}`;
const address = (n: number) => `0x${n.toString(16).padStart(40, 'a')}`;
const hashOf = (n: number) => `0x${n.toString(16).padStart(64, 'c')}`;

/**
 * A chain in memory: each sender's transactions as (nonce → block); the account nonce at a block is the count of its
 * transactions at or below it. `prunedBelow` makes state reads under that height fail, as on a pruned node.
 */
function fakeChain(txs: Array<{ sender: string; nonce: number; block: number; hash: string }>, prunedBelow = 0) {
  const chain = {
    calls: [] as RpcCall[],
    requests: 0,
    /** Block number → transactions the node leaves out of its answer (a node that lies). */
    hidden: new Set<number>(),
    poster: {
      async post(calls: readonly RpcCall[]): Promise<{ answers: RpcAnswer[]; requests: number }> {
        chain.calls.push(...calls);
        chain.requests++;
        return { answers: calls.map((c) => chain.answer(c)), requests: 1 };
      },
    },
    answer(call: RpcCall): RpcAnswer {
      const at = Number(call.params[call.method === 'eth_getTransactionCount' ? 1 : 0]);
      if (call.method === 'eth_getTransactionCount') {
        if (at < prunedBelow)
          return { ok: false, failure: { code: -32000, message: 'missing trie node' } } as RpcAnswer;
        const sender = (call.params[0] as string).toLowerCase();
        return { ok: true, result: hex(txs.filter((t) => t.sender.toLowerCase() === sender && t.block <= at).length) };
      }
      if (call.method === 'eth_getBlockByNumber') {
        const inBlock = chain.hidden.has(at) ? [] : txs.filter((t) => t.block === at);
        return {
          ok: true,
          result: {
            number: hex(at),
            transactions: inBlock.map((t) => ({ hash: t.hash, from: t.sender, nonce: hex(t.nonce) })),
          },
        };
      }
      throw new Error(`unexpected ${call.method}`);
    },
  };
  return chain;
}

/** A sender's transactions with nonces 0.. at the given blocks. */
function history(sender: string, blocks: number[], firstHash: number) {
  return blocks.map((block, nonce) => ({ sender, nonce, block, hash: hashOf(firstHash + nonce) }));
}

describe('findNonceWinners', () => {
  it('finds each winner in the first block past its nonce, all searches together, in a few requests', async () => {
    const [a, b] = [address(1), address(2)];
    const chain = fakeChain([...history(a, [10, 500_000, 999_990], 100), ...history(b, [3, 4, 77_777, 77_778], 200)]);
    const { winners, requests } = await findNonceWinners(
      chain.poster,
      [
        { sender: a, nonce: 1 },
        { sender: b, nonce: 2 },
        { sender: a.toUpperCase().replace('0X', '0x'), nonce: 1 },
      ],
      1_000_000n,
    );
    assert.deepEqual(Object.fromEntries(winners), {
      [winnerKey(a, 1)]: { hash: hashOf(101), blockNumber: 500_000n },
      [winnerKey(b, 2)]: { hash: hashOf(202), blockNumber: 77_777n },
    });
    // One doubling probe, then 16-way splits of a gap below 2^19 (at most five), then the blocks.
    assert.ok(requests <= 7, `${requests} requests`);
    assert.equal(requests, chain.requests);
    const probes = chain.calls.filter((c) => c.method === 'eth_getTransactionCount');
    assert.ok(probes.length <= 2 * (21 + 5 * 16), `${probes.length} nonce reads`);
  });

  it('a search that converges early is not dropped while the others go on narrowing', async () => {
    // Ten senders whose nonce 1 was used in blocks 50..59 of 100: their gaps close after different numbers of steps.
    const senders = Array.from({ length: 10 }, (_, i) => address(100 + i));
    const chain = fakeChain(senders.flatMap((sender, i) => history(sender, [33 + i, 50 + i], 1_000 * (i + 1))));
    const { winners } = await findNonceWinners(
      chain.poster,
      senders.map((sender) => ({ sender, nonce: 1 })),
      100n,
    );
    assert.deepEqual(
      senders.map((sender) => winners.get(winnerKey(sender, 1))?.blockNumber),
      senders.map((_, i) => BigInt(50 + i)),
    );
  });

  it('finds a nonce used in the finalized block itself and one used in the genesis block', async () => {
    const a = address(3);
    const chain = fakeChain(history(a, [0, 50], 300));
    const { winners } = await findNonceWinners(
      chain.poster,
      [
        { sender: a, nonce: 0 },
        { sender: a, nonce: 1 },
      ],
      50n,
    );
    // Nonce 0 used at genesis: no height shows it unused, so nothing is proven of it.
    assert.equal(winners.has(winnerKey(a, 0)), false);
    assert.deepEqual(winners.get(winnerKey(a, 1)), { hash: hashOf(301), blockNumber: 50n });
  });

  it('proves nothing where the node cannot tell: pruned state, a block without the transaction, a malformed hash', async () => {
    const a = address(4);
    const pruned = fakeChain(history(a, [100, 200], 400), 1_000);
    assert.equal((await findNonceWinners(pruned.poster, [{ sender: a, nonce: 1 }], 5_000n)).winners.size, 0);

    const lying = fakeChain(history(a, [100, 200], 400));
    lying.hidden.add(200);
    assert.equal((await findNonceWinners(lying.poster, [{ sender: a, nonce: 1 }], 5_000n)).winners.size, 0);

    const malformed = fakeChain([
      { sender: a, nonce: 0, block: 100, hash: hashOf(1) },
      { sender: a, nonce: 1, block: 200, hash: '0x1234' },
    ]);
    assert.equal((await findNonceWinners(malformed.poster, [{ sender: a, nonce: 1 }], 5_000n)).winners.size, 0);
  });

  it('asks nothing for no pairs', async () => {
    const chain = fakeChain([]);
    assert.deepEqual(await findNonceWinners(chain.poster, [], 10n), { winners: new Map(), requests: 0 });
    assert.equal(chain.requests, 0);
  });
});
