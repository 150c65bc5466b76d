/**
 * Master-key rotation under signing load: starts the real enclave (file master key), creates wallets, then drives
 * `sign` with N concurrent callers for a few seconds before the rotation and all through it, and prints the
 * rotation's rate (records re-wrapped per second) and the signing rate and latency before and during it.
 *
 *   node --import tsx test/bench/enclave-rotation.ts [--wallets 20000] [--seconds 3] [--concurrency 64]
 *
 * Every 100th signature is checked with noble.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ed25519 } from '@noble/curves/ed25519.js';
import { createEnclaveClient } from '../../enclave/client.ts';
import { spawnEnclave } from '../helpers/enclave-process.ts';

const { values } = parseArgs({
  options: {
    wallets: { type: 'string', default: '20000' },
    seconds: { type: 'string', default: '3' },
    concurrency: { type: 'string', default: '64' },
  },
});
const walletCount = Number(values.wallets);
const seconds = Number(values.seconds);
const concurrency = Number(values.concurrency);

const dataDir = mkdtempSync(join(tmpdir(), 'enclave-rotation-bench-'));
const enclave = await spawnEnclave({ dataDir });
const client = createEnclaveClient({ socketPath: enclave.socketPath, requestTimeoutMs: 60_000 });
try {
  await client.connect();
  const wallets: { walletId: string; publicKey: Uint8Array }[] = [];
  for (let start = 0; start < walletCount; start += 1000) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(1000, walletCount - start) }, async () => {
        const walletId = randomUUID();
        const { publicKey } = await client.generateKey({ walletId, scheme: 'ED25519' });
        return { walletId, publicKey: Buffer.from(publicKey, 'hex') };
      }),
    );
    wallets.push(...batch);
  }
  const messages = Array.from({ length: 256 }, () => {
    const bytes = new Uint8Array(randomBytes(200));
    return { bytes, base64: Buffer.from(bytes).toString('base64') };
  });

  let count = 0;
  async function signOnce(latencies: number[]): Promise<void> {
    const wallet = wallets[count % wallets.length]!;
    const message = messages[count % messages.length]!;
    const check = count % 100 === 0;
    count++;
    const t0 = performance.now();
    const { signature } = await client.sign({ walletId: wallet.walletId, scheme: 'ED25519', message: message.base64 });
    latencies.push(performance.now() - t0);
    if (check && !ed25519.verify(Buffer.from(signature, 'hex'), message.bytes, wallet.publicKey)) {
      throw new Error('a signature did not verify');
    }
  }
  /** Signs with `concurrency` callers until `until()` is true; answers signatures/s and latency percentiles. */
  async function load(until: () => boolean): Promise<string> {
    const latencies: number[] = [];
    const startedAt = performance.now();
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (!until()) await signOnce(latencies);
      }),
    );
    const elapsed = (performance.now() - startedAt) / 1000;
    latencies.sort((a, b) => a - b);
    const at = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))]!.toFixed(1);
    return `${(latencies.length / elapsed).toFixed(0)} signatures/s, latency ms p50 ${at(0.5)} p99 ${at(0.99)} max ${at(1)}`;
  }

  await load(
    (
      (end) => () =>
        performance.now() > end
    )(performance.now() + 1000),
  ); // warm-up
  const before = await load(
    (
      (end) => () =>
        performance.now() > end
    )(performance.now() + seconds * 1000),
  );

  const prepared = await client.rotateMasterKey({});
  const startedAt = performance.now();
  await client.rotateMasterKey({ confirmKeyId: prepared.nextKeyId! });
  let done = false;
  let records = 0;
  const watcher = (async () => {
    for (;;) {
      const status = await client.masterKeyStatus();
      if (status.error) throw new Error(status.error);
      if (status.state !== 'rotating') {
        records = Object.values(status.rowsByKeyId).reduce((a, b) => a + b, 0);
        done = true;
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })();
  const during = await load(() => done);
  await watcher;
  const rotationSeconds = (performance.now() - startedAt) / 1000;
  console.log(
    `master-key rotation of ${records} records (${walletCount} ED25519 wallets) under load: ` +
      `${rotationSeconds.toFixed(2)} s = ${(records / rotationSeconds).toFixed(0)} records/s (status polled every 50 ms)`,
  );
  console.log(`signing with ${concurrency} callers before the rotation: ${before}`);
  console.log(`signing with ${concurrency} callers during the rotation: ${during}`);
} finally {
  await client.close();
  await enclave.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
