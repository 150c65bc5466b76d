import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ChainRpcError } from '../payment-chain.ts';
import { createSolanaRpc } from './create-solana-rpc.ts';

type Answer = (body: unknown) => Response | Promise<Response>;

function rpcAnswering(answer: Answer) {
  const bodies: unknown[] = [];
  const fetchFn: typeof fetch = async (_input, init) => {
    const body = JSON.parse(String(init?.body));
    bodies.push(body);
    return answer(body);
  };
  return {
    rpc: createSolanaRpc({ rpcUrl: 'http://node.invalid:8899/?api-key=secret', timeoutMs: 1_000, fetchFn }),
    bodies,
  };
}

const json = (value: unknown, status = 200) =>
  new Response(JSON.stringify(value), { status, headers: { 'content-type': 'application/json' } });

async function unavailable(promise: Promise<unknown>, message: RegExp): Promise<void> {
  await assert.rejects(promise, (error) => {
    assert.ok(error instanceof ChainRpcError);
    assert.equal(error.transient, true);
    assert.equal(error.code, 'RPC_UNAVAILABLE');
    assert.match(error.message, message);
    assert.doesNotMatch(error.message, /secret|node\.invalid/);
    return true;
  });
}

describe('createSolanaRpc', () => {
  it('sends one call plainly and several as one batch, matching answers by id', async () => {
    const { rpc, bodies } = rpcAnswering((body) => {
      const calls = (Array.isArray(body) ? body : [body]) as { id: number; method: string }[];
      const replies = calls.map((call) => ({ jsonrpc: '2.0', id: call.id, result: call.method })).reverse();
      return json(Array.isArray(body) ? replies : replies[0]);
    });
    const counter = { count: 0 };
    assert.equal(await rpc.call('getSlot', [], counter), 'getSlot');
    const outcomes = await rpc.send(
      [
        { method: 'getBlockHeight', params: [] },
        { method: 'getSlot', params: [{ commitment: 'finalized' }] },
      ],
      counter,
    );
    assert.deepEqual(outcomes, [
      { ok: true, result: 'getBlockHeight' },
      { ok: true, result: 'getSlot' },
    ]);
    assert.equal(counter.count, 2);
    assert.equal(Array.isArray(bodies[0]), false);
    assert.deepEqual(bodies[1], [
      { jsonrpc: '2.0', id: 2, method: 'getBlockHeight', params: [] },
      { jsonrpc: '2.0', id: 3, method: 'getSlot', params: [{ commitment: 'finalized' }] },
    ]);
  });

  it('returns JSON-RPC errors of a batch as outcomes, and throws them for a single call', async () => {
    const { rpc } = rpcAnswering((body) => {
      const calls = (Array.isArray(body) ? body : [body]) as { id: number }[];
      const replies = calls.map((call) => ({
        jsonrpc: '2.0',
        id: call.id,
        error: { code: -32005, message: 'Node is behind by 42 slots', data: { numSlotsBehind: 42 } },
      }));
      return json(Array.isArray(body) ? replies : replies[0]);
    });
    const [outcome] = await rpc.send([
      { method: 'getSlot', params: [] },
      { method: 'getSlot', params: [] },
    ]);
    assert.deepEqual(outcome, {
      ok: false,
      error: { code: -32005, message: 'Node is behind by 42 slots', data: { numSlotsBehind: 42 } },
    });
    await unavailable(rpc.call('getSlot', []), /refused getSlot \(error -32005\)/);
  });

  it('turns unusable answers into transient RPC_UNAVAILABLE without naming the URL', async () => {
    const answers: Response[] = [
      new Response('rate limited', { status: 429 }),
      new Response('bad gateway', { status: 502 }),
      new Response('<html>', { status: 200 }),
      json({ jsonrpc: '2.0', id: null, error: { code: -32600, message: 'batch too large' } }),
      json([{ jsonrpc: '2.0', id: 999, result: 1 }]),
      json({ jsonrpc: '2.0', id: 12 }),
    ];
    const { rpc } = rpcAnswering(() => answers.shift()!);
    const two = [
      { method: 'getSlot', params: [] },
      { method: 'getBlockHeight', params: [] },
    ];
    await unavailable(rpc.call('getSlot', []), /HTTP 429/);
    await unavailable(rpc.call('getSlot', []), /HTTP 502/);
    await unavailable(rpc.call('getSlot', []), /not JSON/);
    await unavailable(rpc.send(two), /refused a batch of 2 calls \(error -32600\)/);
    await unavailable(rpc.send(two), /no usable answer to getSlot/);
    await unavailable(rpc.call('getSlot', []), /no usable answer/);
  });

  it('reports a refused connection and a timeout as transient', async () => {
    const refused = createSolanaRpc({
      rpcUrl: 'http://127.0.0.1:1',
      timeoutMs: 1_000,
      fetchFn: async () => {
        throw new TypeError('fetch failed', { cause: new Error('connect ECONNREFUSED 127.0.0.1:1') });
      },
    });
    await unavailable(refused.call('getSlot', []), /unreachable/);
    const stalled = createSolanaRpc({
      rpcUrl: 'http://127.0.0.1:1',
      timeoutMs: 50,
      fetchFn: (_input, init) =>
        new Promise((_resolve, reject) => {
          init?.signal?.addEventListener('abort', () => reject(init.signal!.reason));
        }),
    });
    // AbortSignal.timeout's timer does not hold the event loop open; a real socket would.
    const keepAlive = setTimeout(() => {}, 5_000);
    try {
      await unavailable(stalled.call('getSlot', []), /within 50 ms/);
    } finally {
      clearTimeout(keepAlive);
    }
  });
});
