import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ChainRpcError } from '../payment-chain.ts';
import { createCallCoalescer } from './create-call-coalescer.ts';
import type { RpcAnswer, RpcBatchPoster, RpcCall } from './create-rpc-batch-poster.ts';

/**
 * A poster that records each batch and answers each call with its method and first parameter; `fail.error`, while
 * set, is what it throws instead.
 */
function recordingPoster(fail: { error?: ChainRpcError } = {}) {
  const batches: RpcCall[][] = [];
  const poster: Pick<RpcBatchPoster, 'post'> = {
    async post(calls) {
      batches.push([...calls]);
      await new Promise((r) => setTimeout(r, 1));
      if (fail.error) throw fail.error;
      const answers: RpcAnswer[] = calls.map((c) => ({ ok: true, result: `${c.method}:${String(c.params[0] ?? '')}` }));
      return { answers, requests: 1 };
    },
  };
  return { poster, batches };
}

const receipt = (hash: string): RpcCall => ({ method: 'eth_getTransactionReceipt', params: [hash] });
const head: RpcCall = { method: 'eth_blockNumber', params: [] };

test('reads asked in one turn share one batch: their calls in order, then the shared call once', async () => {
  const { poster, batches } = recordingPoster();
  const read = createCallCoalescer(poster, [head]);
  const [a, b, c] = await Promise.all([
    read([receipt('0xa')]),
    read([receipt('0xb1'), receipt('0xb2')]),
    read([receipt('0xc')]),
  ]);
  assert.deepEqual(batches, [[receipt('0xa'), receipt('0xb1'), receipt('0xb2'), receipt('0xc'), head]]);
  const shared = [{ ok: true, result: 'eth_blockNumber:' }];
  assert.deepEqual(a, { own: [{ ok: true, result: 'eth_getTransactionReceipt:0xa' }], shared });
  assert.deepEqual(b, {
    own: [
      { ok: true, result: 'eth_getTransactionReceipt:0xb1' },
      { ok: true, result: 'eth_getTransactionReceipt:0xb2' },
    ],
    shared,
  });
  assert.deepEqual(c, { own: [{ ok: true, result: 'eth_getTransactionReceipt:0xc' }], shared });
});

test('a read asked in a later turn goes in a batch of its own', async () => {
  const { poster, batches } = recordingPoster();
  const read = createCallCoalescer(poster, [head]);
  const first = read([receipt('0x1')]);
  await new Promise((r) => setImmediate(r));
  const second = read([receipt('0x2')]);
  await Promise.all([first, second]);
  assert.deepEqual(batches, [
    [receipt('0x1'), head],
    [receipt('0x2'), head],
  ]);
});

test('a batch that fails as a whole rejects every read in it with its error', async () => {
  const failure = new ChainRpcError('transient', 'RPC_UNAVAILABLE', 'the node is down');
  const down = { error: failure as ChainRpcError | undefined };
  const { poster, batches } = recordingPoster(down);
  const read = createCallCoalescer(poster, [head]);
  const results = await Promise.allSettled([read([receipt('0xa')]), read([receipt('0xb')])]);
  assert.equal(batches.length, 1);
  for (const r of results) {
    assert.equal(r.status, 'rejected');
    assert.equal((r as PromiseRejectedResult).reason, failure);
  }
  // The next turn's reads go out again once the node answers.
  down.error = undefined;
  assert.deepEqual((await read([receipt('0xc')])).own, [{ ok: true, result: 'eth_getTransactionReceipt:0xc' }]);
  assert.equal(batches.length, 2);
});
