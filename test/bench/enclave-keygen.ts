/**
 * Enclave key generation throughput: starts the real enclave as a child process and drives generateKey through
 * enclave/client with N concurrent callers for a few seconds, then prints keys/s and latency percentiles.
 *
 *   node --import tsx test/bench/enclave-keygen.ts [--seconds 5] [--concurrency 32] [--scheme DKLS|ED25519]
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createEnclaveClient } from '../../enclave/client.ts';
import type { Scheme } from '../../enclave/protocol.ts';
import { spawnEnclave } from '../helpers/enclave-process.ts';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '5' },
    concurrency: { type: 'string', default: '32' },
    scheme: { type: 'string', default: 'DKLS' },
  },
});
const seconds = Number(values.seconds);
const concurrency = Number(values.concurrency);
const scheme = values.scheme as Scheme;

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

const dataDir = mkdtempSync(join(tmpdir(), 'enclave-bench-'));
const enclave = await spawnEnclave({ dataDir });
const client = createEnclaveClient({ socketPath: enclave.socketPath });
try {
  await client.connect();
  // Warm-up: workers compile their modules and JIT the hot paths.
  await Promise.all(Array.from({ length: 200 }, () => client.generateKey({ walletId: randomUUID(), scheme })));

  const latencies: number[] = [];
  const deadline = performance.now() + seconds * 1000;
  const startedAt = performance.now();
  const cpuBefore = process.cpuUsage();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < deadline) {
        const t0 = performance.now();
        const { created } = await client.generateKey({ walletId: randomUUID(), scheme });
        latencies.push(performance.now() - t0);
        if (!created) throw new Error('expected a new key');
      }
    }),
  );
  const elapsed = (performance.now() - startedAt) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  latencies.sort((a, b) => a - b);
  console.log(
    `enclave keygen ${scheme}: ${latencies.length} keys in ${elapsed.toFixed(2)} s = ` +
      `${(latencies.length / elapsed).toFixed(0)} keys/s with ${concurrency} concurrent callers; latency ms ` +
      `p50 ${percentile(latencies, 50).toFixed(2)} p99 ${percentile(latencies, 99).toFixed(2)} ` +
      `max ${latencies[latencies.length - 1]!.toFixed(2)}; bench client CPU ` +
      `${(((cpu.user + cpu.system) / 1e6 / elapsed) * 100).toFixed(0)}% of one core`,
  );
} finally {
  await client.close();
  await enclave.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
