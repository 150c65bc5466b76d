/**
 * What proving a replaced EVM payment costs in RPC: findNonceWinners (chains/evm/find-nonce-winners.ts) against a
 * simulated chain of 1,000 to 20,000,000 finalized blocks, for 1, 10 and 100 nonces searched together. Prints the
 * winners found, the HTTP requests (the round trips a poller round waits for) and the JSON-RPC calls they carry.
 * Counts, not times: they do not depend on the machine. Run: npm run bench:nonce-search
 */
import { findNonceWinners } from '../../chains/evm/find-nonce-winners.ts';

const address = (i: number) => `0x${(i + 1).toString(16).padStart(40, '0')}`;

for (const finalized of [1_000n, 1_000_000n, 20_000_000n]) {
  for (const count of [1, 10, 100]) {
    const senders = Array.from({ length: count }, (_, i) => address(i));
    // Each sender used nonce 0 about a third of the way up the chain and nonce 1 (the one searched) at about half.
    const usedAt = (sender: string, nonce: number) => {
      const i = BigInt(senders.indexOf(sender));
      return nonce === 0 ? finalized / 3n + i * 3n : finalized / 2n + i * 7n;
    };
    let requests = 0;
    let calls = 0;
    const poster = {
      async post(batch: readonly { method: string; params: unknown[] }[]) {
        requests++;
        calls += batch.length;
        const answers = batch.map((c) => {
          if (c.method === 'eth_getTransactionCount') {
            const sender = String(c.params[0]);
            const height = BigInt(String(c.params[1]));
            const nonce = (height >= usedAt(sender, 0) ? 1 : 0) + (height >= usedAt(sender, 1) ? 1 : 0);
            return { ok: true as const, result: `0x${nonce.toString(16)}` };
          }
          const block = BigInt(String(c.params[0]));
          const transactions = senders
            .filter((s) => usedAt(s, 1) === block)
            .map((s) => ({ from: s, nonce: '0x1', hash: `0x${'ab'.repeat(32)}` }));
          return { ok: true as const, result: { transactions } };
        });
        return { answers, requests: 1 };
      },
    };
    const pairs = senders.filter((s) => usedAt(s, 1) <= finalized).map((sender) => ({ sender, nonce: 1 }));
    const { winners } = await findNonceWinners(poster, pairs, finalized);
    console.log(
      `finalized block ${finalized}: ${pairs.length} nonces, ${winners.size} winners, ${requests} HTTP requests, ${calls} JSON-RPC calls`,
    );
  }
}
