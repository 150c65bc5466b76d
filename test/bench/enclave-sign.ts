/**
 * Enclave signing throughput: starts the real enclave as a child process, creates wallets, and drives `sign`
 * through enclave/client with N concurrent callers for a few seconds over the socket, then prints signatures/s,
 * latency percentiles and the enclave's CPU per signature (its main thread apart: the cost batching keeps low).
 *
 *   node --import tsx test/bench/enclave-sign.ts [--scheme DKLS|ED25519] [--seconds 5] [--concurrency 64]
 *     [--wallets 256] [--bytes 200] [--effect-keys]
 *
 * DKLS signs random 32-byte digests; ED25519 signs random messages of `--bytes` bytes (a small Solana transfer
 * message is ~200 bytes). Every 100th signature is checked with noble. `--effect-keys` gives every signature an
 * effect key of its own, as payments do (protocol.ts, `sign`): each is recorded in a group commit before it is
 * signed; without it, signatures go as the REST signing routes send them. With it, the bench also prints how many
 * records each group commit held (records per distinct `created_at`, which one commit shares: a lower bound).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ed25519 } from '@noble/curves/ed25519.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import Database from 'better-sqlite3';
import { createEnclaveClient } from '../../enclave/client.ts';
import type { Scheme } from '../../enclave/protocol.ts';
import { spawnEnclave } from '../helpers/enclave-process.ts';

const { values } = parseArgs({
  options: {
    scheme: { type: 'string', default: 'DKLS' },
    seconds: { type: 'string', default: '5' },
    concurrency: { type: 'string', default: '64' },
    wallets: { type: 'string', default: '256' },
    bytes: { type: 'string', default: '200' },
    'effect-keys': { type: 'boolean', default: false },
  },
});
const scheme = values.scheme as Scheme;
if (scheme !== 'DKLS' && scheme !== 'ED25519') throw new Error('--scheme must be DKLS or ED25519');
const seconds = Number(values.seconds);
const concurrency = Number(values.concurrency);
const walletCount = Number(values.wallets);
const messageBytes = scheme === 'DKLS' ? 32 : Number(values.bytes);
const effectKeys = values['effect-keys'];
/** Effect keys shaped like the actor host's, `<actorId>:<step>:<n>`: one per signature, never repeated. */
const runId = randomUUID();

/** utime + stime of a /proc stat file, in milliseconds (USER_HZ = 100), or NaN off Linux. */
function cpuMsOf(statPath: string): number {
  if (!existsSync(statPath)) return Number.NaN;
  const stat = readFileSync(statPath, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

const dataDir = mkdtempSync(join(tmpdir(), 'enclave-sign-bench-'));
const enclave = await spawnEnclave({ dataDir });
const client = createEnclaveClient({ socketPath: enclave.socketPath, requestTimeoutMs: 30_000 });
const processStat = `/proc/${enclave.pid}/stat`;
const mainThreadStat = `/proc/${enclave.pid}/task/${enclave.pid}/stat`;
try {
  await client.connect();
  const wallets = await Promise.all(
    Array.from({ length: walletCount }, async () => {
      const walletId = randomUUID();
      const { publicKey } = await client.generateKey({ walletId, scheme });
      return { walletId, publicKey: Buffer.from(publicKey, 'hex') };
    }),
  );
  // A pool of messages, base64-encoded ahead of time so the bench client spends its CPU on the socket only.
  const messages = Array.from({ length: 1024 }, () => {
    const bytes = new Uint8Array(randomBytes(messageBytes));
    return { bytes, base64: Buffer.from(bytes).toString('base64') };
  });

  let count = 0;
  async function signOnce(latencies?: number[]): Promise<void> {
    const wallet = wallets[count % wallets.length]!;
    const message = messages[count % messages.length]!;
    const check = count % 100 === 0;
    count++;
    const t0 = performance.now();
    const { signature } = await client.sign({
      walletId: wallet.walletId,
      scheme,
      message: message.base64,
      ...(effectKeys ? { effectKey: `${runId}:${count}:0` } : {}),
    });
    latencies?.push(performance.now() - t0);
    if (check) {
      const sig = Buffer.from(signature, 'hex');
      const ok =
        scheme === 'DKLS'
          ? secp256k1.verify(sig, message.bytes, wallet.publicKey, { prehash: false })
          : ed25519.verify(sig, message.bytes, wallet.publicKey);
      if (!ok) throw new Error('a signature did not verify');
    }
  }

  // Warm-up: workers compile their modules and JIT the hot paths.
  await Promise.all(Array.from({ length: 2000 }, () => signOnce()));

  const latencies: number[] = [];
  const deadline = performance.now() + seconds * 1000;
  const startedAt = performance.now();
  const cpuBefore = process.cpuUsage();
  const enclaveBefore = cpuMsOf(processStat);
  const mainBefore = cpuMsOf(mainThreadStat);
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < deadline) await signOnce(latencies);
    }),
  );
  const elapsed = (performance.now() - startedAt) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  const enclaveMs = cpuMsOf(processStat) - enclaveBefore;
  const mainMs = cpuMsOf(mainThreadStat) - mainBefore;
  latencies.sort((a, b) => a - b);
  const at = (p: number): string =>
    latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))]!.toFixed(2);
  console.log(
    `enclave sign ${scheme} (${messageBytes}-byte messages, ${walletCount} wallets, ` +
      `${effectKeys ? 'an effect key each' : 'no effect keys'}): ${latencies.length} signatures ` +
      `in ${elapsed.toFixed(2)} s = ${(latencies.length / elapsed).toFixed(0)} signatures/s with ${concurrency} ` +
      `concurrent callers; latency ms p50 ${at(0.5)} p99 ${at(0.99)} max ${at(1)}; bench client CPU ` +
      `${(((cpu.user + cpu.system) / 1e6 / elapsed) * 100).toFixed(0)}% of one core`,
  );
  if (!Number.isNaN(enclaveMs)) {
    const perSignature = (ms: number): string => ((ms * 1000) / latencies.length).toFixed(1);
    console.log(
      `enclave process CPU: ${perSignature(enclaveMs)} µs/signature (${(enclaveMs / 10 / elapsed) | 0}% of one ` +
        `core), of which main thread ${perSignature(mainMs)} µs/signature`,
    );
  }
  if (effectKeys) {
    const db = new Database(join(dataDir, 'enclave', 'keys.db'), { readonly: true });
    const { records, commits } = db
      .prepare('SELECT count(*) AS records, count(DISTINCT created_at) AS commits FROM effect_signatures')
      .get() as { records: number; commits: number };
    db.close();
    console.log(
      `effect records: ${records} in ${commits} group commits (${(records / commits).toFixed(1)} per commit, ` +
        'warm-up included)',
    );
  }
} finally {
  await client.close();
  await enclave.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
