/**
 * Enclave key generation throughput: starts the real enclave as a child process and drives generateKey through
 * enclave/client with N concurrent callers for a few seconds, then prints keys/s and latency percentiles.
 *
 *   node --import tsx test/bench/enclave-keygen.ts [--seconds 5] [--concurrency 32] [--scheme DKLS|ED25519]
 */
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
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

/** CPU milliseconds per thread of a process (Linux /proc; empty elsewhere). */
function threadCpuMs(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  const dir = `/proc/${pid}/task`;
  if (!existsSync(dir)) return out;
  const ticksPerMs = 100 / 1000; // USER_HZ is 100 on Linux
  for (const tid of readdirSync(dir)) {
    try {
      const stat = readFileSync(`${dir}/${tid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out.set(tid, (Number(fields[11]) + Number(fields[12])) / ticksPerMs);
    } catch {
      // The thread ended meanwhile.
    }
  }
  return out;
}

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
  const threadsBefore = threadCpuMs(enclave.pid);
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
  const threadsAfter = threadCpuMs(enclave.pid);
  latencies.sort((a, b) => a - b);
  console.log(
    `enclave keygen ${scheme}: ${latencies.length} keys in ${elapsed.toFixed(2)} s = ` +
      `${(latencies.length / elapsed).toFixed(0)} keys/s with ${concurrency} concurrent callers; latency ms ` +
      `p50 ${percentile(latencies, 50).toFixed(2)} p99 ${percentile(latencies, 99).toFixed(2)} ` +
      `max ${latencies[latencies.length - 1]!.toFixed(2)}; bench client CPU ` +
      `${(((cpu.user + cpu.system) / 1e6 / elapsed) * 100).toFixed(0)}% of one core`,
  );
  if (threadsAfter.size > 0) {
    const perThread = [...threadsAfter]
      .map(([tid, ms]) => [tid, ms - (threadsBefore.get(tid) ?? 0)] as const)
      .filter(([, ms]) => ms > 0)
      .sort((a, b) => b[1] - a[1]);
    const totalMs = perThread.reduce((sum, [, ms]) => sum + ms, 0);
    console.log(
      `enclave process CPU: ${((totalMs * 1000) / latencies.length).toFixed(0)} µs/key ` +
        `(${((totalMs / 1000 / elapsed) * 100).toFixed(0)}% of one core); busiest threads µs/key: ` +
        perThread
          .slice(0, 6)
          .map(([, ms]) => ((ms * 1000) / latencies.length).toFixed(0))
          .join(', '),
    );
  }
} finally {
  await client.close();
  await enclave.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
