/**
 * CPU per JSON-RPC batch in-process, Node's `fetch` beside the pooled fetch (chains/create-pooled-fetch.ts), through
 * the batch poster and viem's HTTP client as the service uses them, against anvil. Alternates the two, three rounds
 * each, four batches in flight; prints CPU and wall time per batch. Asserts nothing.
 * Run: `node --import tsx test/bench/rpc-fetch.ts` (BENCH_BATCHES, default 3,000 a round).
 */
import { createPooledFetch } from '../../chains/create-pooled-fetch.ts';
import { createRpcBatchPoster, type RpcCall } from '../../chains/evm/create-rpc-batch-poster.ts';
import { startAnvil } from '../../fixtures/anvil.ts';

const BATCHES = Number(process.env['BENCH_BATCHES'] ?? 3_000);
const calls: RpcCall[] = [
  { method: 'eth_chainId', params: [] },
  { method: 'eth_getBalance', params: ['0x0000000000000000000000000000000000000001', 'latest'] },
];

async function run(name: string, rpcUrl: string, fetchFn: typeof fetch): Promise<void> {
  const poster = createRpcBatchPoster({ rpcUrl, timeoutMs: 5_000, fetchFn });
  for (let i = 0; i < 500; i++) await poster.post(calls);
  for (let round = 0; round < 3; round++) {
    const cpu = process.cpuUsage();
    const start = performance.now();
    for (let i = 0; i < BATCHES; i += 4) await Promise.all([1, 2, 3, 4].map(() => poster.post(calls)));
    const used = process.cpuUsage(cpu);
    const wall = performance.now() - start;
    console.log(
      `${name.padEnd(12)} CPU ${((used.user + used.system) / BATCHES).toFixed(0).padStart(4)} µs per batch   wall ${((wall * 1000) / BATCHES).toFixed(0).padStart(4)} µs per batch`,
    );
  }
}

const anvil = await startAnvil();
try {
  for (let pair = 0; pair < 2; pair++) {
    await run('Node fetch', anvil.rpcUrl, fetch);
    await run('pooled fetch', anvil.rpcUrl, createPooledFetch({ maxResponseBytes: 64 * 1024 * 1024 }));
  }
} finally {
  await anvil.stop();
}
