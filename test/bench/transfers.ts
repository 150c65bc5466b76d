/**
 * Transfer benchmarks against the running appliance (supervisor, enclave and API processes) and a real anvil node.
 * Prints figures; asserts nothing. Run: `npm run bench:transfers`.
 *
 *   BENCH_TRANSFERS        transfers in each throughput phase, one per wallet (default 3000)
 *   BENCH_RATE             steady rate of the latency phase, open loop (default 300/s)
 *   BENCH_CONNECTIONS      autocannon connections (default 64)
 *   BENCH_POLL_MS          CHAIN_POLL_INTERVAL_MS of the service (default 1000)
 *   BENCH_ONLY             comma list: throughput,pending,idempotency (default throughput,pending)
 *   BENCH_PROFILE=1        write CPU profiles of the API and the enclave during the saturating phase, and during the
 *                          confirmation of the pending ones (to the
 *                          temporary directory, wcs-profile-<pid>.cpuprofile)
 *
 * throughput: ≥ 300 EVM transfers/s accepted and broadcast from distinct wallets, p99 < 200 ms (the target). Beside it,
 * the node's own limit measured in the same run: anvil taking pre-signed raw transactions as fast as it can.
 * pending: 50, 500 and 5,000 transfers pending at once (anvil not mining): the RPC round trips of one polling round
 * at each level, then the time from the blocks that include and finalize them to every record `confirmed`.
 * idempotency: the same transfers with and without an `Idempotency-Key` (a new key each), saturating and at a steady
 * BENCH_RATE, alternated twice so that the machine's drift falls on both: the target is ≥ 90% of the throughput
 * without keys and a p99 within 20% at 300/s.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { privateKeyToAccount } from 'viem/accounts';
import { startAnvil } from '../../fixtures/anvil.ts';
import { rpc } from '../../fixtures/evm-helpers.ts';
import { createPartnerKey } from '../helpers/http.ts';
import { BENCH_ADMIN_TOKEN, ROOT, startAppliance, stopAppliance } from './appliance.ts';
import { createWallets, fund } from './evm-wallets.ts';
import { formatPaced, pacedLoad } from './paced-load.ts';
import { applianceProcesses, withCpu } from './process-cpu.ts';

const TRANSFERS = Number(process.env['BENCH_TRANSFERS'] ?? 3000);
const CONNECTIONS = Number(process.env['BENCH_CONNECTIONS'] ?? 64);
/** The offered rate of the latency phase: the documented target. */
const RATE = Number(process.env['BENCH_RATE'] ?? 300);
const POLL_MS = Number(process.env['BENCH_POLL_MS'] ?? 1000);
const ONLY = (process.env['BENCH_ONLY'] ?? 'throughput,pending').split(',');
const PENDING_LEVELS = [50, 500, 5000];
/** When set, the API and the enclave write CPU profiles of the saturating phase (cpu-profile-preload.mjs). */
const PROFILE = process.env['BENCH_PROFILE'] === '1';
const RECIPIENT = '0x000000000000000000000000000000000000bEEF';

/** Pre-signed native transfers from `count` distinct, funded accounts (index `offset` on). */
async function presignedTransfers(rpcUrl: string, count: number, offset: number): Promise<string[]> {
  const chainId = Number(await rpc<string>(rpcUrl, 'eth_chainId'));
  const gasPrice = BigInt(await rpc<string>(rpcUrl, 'eth_gasPrice')) * 2n;
  const accounts = Array.from({ length: count }, (_, i) =>
    privateKeyToAccount(`0x${(offset + i + 1).toString(16).padStart(64, '7')}`),
  );
  await fund(
    rpcUrl,
    accounts.map((a) => a.address),
  );
  const raws: string[] = [];
  for (const a of accounts) {
    raws.push(
      await a.signTransaction({
        chainId,
        type: 'eip1559',
        nonce: 0,
        to: RECIPIENT,
        value: 1n,
        gas: 25200n,
        maxFeePerGas: gasPrice,
        maxPriorityFeePerGas: 1n,
      }),
    );
  }
  return raws;
}

/** anvil's own rate for eth_sendRawTransaction of pre-signed transfers from distinct accounts, 64 in flight. */
async function nodeRawRate(rpcUrl: string, count: number): Promise<number> {
  const raws = await presignedTransfers(rpcUrl, count, 0);
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: 64 }, async () => {
      while (next < raws.length) {
        const raw = raws[next++]!;
        const r = await fetch(rpcUrl, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_sendRawTransaction', params: [raw] }),
        });
        await r.text();
      }
    }),
  );
  return raws.length / ((performance.now() - t0) / 1000);
}

/**
 * anvil's own latency for eth_sendRawTransaction of pre-signed transfers sent at a steady `rate`/s (the latency
 * phase's load, without the service): the floor under the service's p99, since a transfer's answer waits for
 * the node's.
 */
async function nodeLatencyAtRate(rpcUrl: string, count: number, rate: number) {
  const raws = await presignedTransfers(rpcUrl, count, 100_000);
  const url = new URL(rpcUrl);
  return pacedLoad(url.origin, rate, count, (i) => ({
    method: 'POST',
    path: url.pathname,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_sendRawTransaction', params: [raws[i]] }),
  }));
}

async function metric(adminUrl: string, name: string): Promise<number> {
  const text = await (
    await fetch(`${adminUrl}/metrics`, { headers: { authorization: `Bearer ${BENCH_ADMIN_TOKEN}` } })
  ).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`));
  return line ? Number(line.split(' ').pop()) : Number.NaN;
}

async function main(): Promise<void> {
  execFileSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' });
  console.log(`machine: ${os.cpus().length} cores, ${os.cpus()[0]?.model ?? ''}`);
  // Interval mining: a block a second, as a chain does (automine would make the node mine a block per transfer).
  const anvil = await startAnvil({ blockTimeSeconds: 1, slotsInAnEpoch: 1 });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wcs-bench-chains-'));
  const chainsFile = path.join(dir, 'chains.json');
  fs.writeFileSync(chainsFile, JSON.stringify({ evm: [{ chainId: 31337, rpcUrl: anvil.rpcUrl, environment: 'any' }] }));
  const svc = await startAppliance({
    env: {
      CHAINS_FILE: chainsFile,
      CHAIN_POLL_INTERVAL_MS: String(POLL_MS),
      ...(PROFILE ? { NODE_OPTIONS: `--import ${path.join(ROOT, 'test/bench/cpu-profile-preload.mjs')}` } : {}),
    },
  });
  try {
    const { secretKey } = await createPartnerKey(svc.adminUrl, BENCH_ADMIN_TOKEN, {
      plan: 'enterprise',
      rateLimitPerMinute: 10_000_000,
    });
    const headers = { 'x-api-key': secretKey, 'content-type': 'application/json' };
    const procs = applianceProcesses(svc.proc.pid!, { anvil: anvil.pid, 'bench (autocannon)': process.pid });
    const toggleProfiles = () => {
      if (PROFILE) for (const name of ['api', 'enclave']) if (procs[name]) process.kill(procs[name]!, 'SIGUSR2');
    };

    if (ONLY.includes('throughput')) {
      // Each phase sends one transfer per wallet (distinct wallets, so no request waits for another's payment).
      const wallets = await createWallets(svc.url, headers, 2 * TRANSFERS, 'tp');
      await fund(
        anvil.rpcUrl,
        wallets.map((w) => w.address),
      );
      let n = 0;
      const phase = async (name: string) => {
        const r = await autocannon({
          url: svc.url,
          connections: CONNECTIONS,
          amount: TRANSFERS,
          requests: [
            {
              method: 'POST',
              headers,
              setupRequest: (req) => {
                const w = wallets[n++]!;
                return {
                  ...req,
                  path: `/v1/wallets/${w.id}/transfer`,
                  body: JSON.stringify({ to: RECIPIENT, value: '1', chainId: '31337' }),
                };
              },
            },
          ],
        });
        const bad = r.non2xx + r.errors + r.timeouts;
        const achieved = r.requests.total / (r.duration || 1);
        console.log(
          `${name.padEnd(40)} ${achieved.toFixed(0).padStart(6)} /s   p50 ${r.latency.p50} ms   p99 ${r.latency.p99} ms   max ${r.latency.max} ms   total ${r.requests.total}   non-2xx/errors ${bad}`,
        );
        return achieved;
      };
      toggleProfiles();
      const most = await withCpu(
        procs,
        'transfer',
        () => TRANSFERS,
        () => phase(`transfers, ${CONNECTIONS} connections, saturating`),
      );
      toggleProfiles();
      if (PROFILE)
        console.log(
          `  CPU profiles: ${os.tmpdir()}/wcs-profile-<pid>.cpuprofile (api ${procs['api']}, enclave ${procs['enclave']})`,
        );
      // The latency phase measures the steady state: the saturating phase's payments settle first (their
      // confirmations would otherwise arrive all at once during it, a backlog no steady rate makes).
      const settleStart = performance.now();
      while (performance.now() - settleStart < 120_000) {
        if ((await metric(svc.adminUrl, 'chain_poll_watched')) === 0) break;
        await new Promise((r) => setTimeout(r, 500));
      }
      console.log(
        `  the saturating phase's payments settled in ${((performance.now() - settleStart) / 1000).toFixed(1)} s`,
      );
      const paced = await pacedLoad(svc.url, RATE, TRANSFERS, () => {
        const w = wallets[n++]!;
        return {
          method: 'POST',
          path: `/v1/wallets/${w.id}/transfer`,
          headers,
          body: JSON.stringify({ to: RECIPIENT, value: '1', chainId: '31337' }),
        };
      });
      console.log(`${`transfers at a steady ${RATE}/s (open loop)`.padEnd(40)} ${formatPaced(paced)}`);
      const node = await nodeLatencyAtRate(anvil.rpcUrl, TRANSFERS, RATE);
      console.log(`${`node alone: raw transactions at ${RATE}/s`.padEnd(40)} ${formatPaced(node)}`);
      const raw = await nodeRawRate(anvil.rpcUrl, 3000);
      console.log(
        `node limit: anvil eth_sendRawTransaction ${raw.toFixed(0).padStart(6)} /s (pre-signed, 64 in flight); saturating transfers are ${(most / raw).toFixed(2)} of it`,
      );
    }

    if (ONLY.includes('idempotency')) {
      const ROUNDS = 2;
      const wallets = await createWallets(svc.url, headers, 4 * ROUNDS * TRANSFERS, 'idem');
      await fund(
        anvil.rpcUrl,
        wallets.map((w) => w.address),
      );
      let n = 0;
      const transferOf = (keyed: boolean) => {
        const w = wallets[n++]!;
        return {
          method: 'POST' as const,
          path: `/v1/wallets/${w.id}/transfer`,
          headers: keyed ? { ...headers, 'idempotency-key': `bench-${w.id}` } : headers,
          body: JSON.stringify({ to: RECIPIENT, value: '1', chainId: '31337' }),
        };
      };
      const settle = async () => {
        const t0 = performance.now();
        while (performance.now() - t0 < 120_000 && (await metric(svc.adminUrl, 'chain_poll_watched')) !== 0) {
          await new Promise((r) => setTimeout(r, 500));
        }
      };
      const runs: Record<'plain' | 'keyed', { rate: number[]; p99: number[] }> = {
        plain: { rate: [], p99: [] },
        keyed: { rate: [], p99: [] },
      };
      for (let round = 1; round <= ROUNDS; round++) {
        for (const kind of ['plain', 'keyed'] as const) {
          const r = await autocannon({
            url: svc.url,
            connections: CONNECTIONS,
            amount: TRANSFERS,
            requests: [
              { method: 'POST', headers, setupRequest: (req) => ({ ...req, ...transferOf(kind === 'keyed') }) },
            ],
          });
          const achieved = r.requests.total / (r.duration || 1);
          runs[kind].rate.push(achieved);
          console.log(
            `round ${round} ${kind.padEnd(5)} saturating ${achieved.toFixed(0).padStart(6)} /s   p99 ${r.latency.p99} ms   non-2xx/errors ${r.non2xx + r.errors + r.timeouts}`,
          );
          await settle();
          const paced = await pacedLoad(svc.url, RATE, TRANSFERS, () => transferOf(kind === 'keyed'));
          runs[kind].p99.push(paced.p99);
          console.log(`round ${round} ${kind.padEnd(5)} at ${RATE}/s    ${formatPaced(paced)}`);
          await settle();
        }
      }
      const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
      console.log(
        `with keys: throughput ${((100 * mean(runs.keyed.rate)) / mean(runs.plain.rate)).toFixed(1)}% of without (target ≥ 90%); p99 at ${RATE}/s ${mean(runs.keyed.p99).toFixed(1)} ms vs ${mean(runs.plain.p99).toFixed(1)} ms, ${((100 * mean(runs.keyed.p99)) / mean(runs.plain.p99) - 100).toFixed(1)}% (target within 20%)`,
      );
    }

    if (ONLY.includes('pending')) {
      await rpc(anvil.rpcUrl, 'evm_setIntervalMining', [0]);
      await rpc(anvil.rpcUrl, 'evm_setAutomine', [false]);
      const total = PENDING_LEVELS[PENDING_LEVELS.length - 1]!;
      const wallets = await createWallets(svc.url, headers, total, 'pending');
      await fund(
        anvil.rpcUrl,
        wallets.map((w) => w.address),
      );
      const sent: Array<{ walletId: string; transactionId: string }> = [];
      for (const level of PENDING_LEVELS) {
        let next = sent.length;
        await Promise.all(
          Array.from({ length: 64 }, async () => {
            while (next < level) {
              const w = wallets[next++]!;
              const r = await fetch(`${svc.url}/v1/wallets/${w.id}/transfer`, {
                method: 'POST',
                headers,
                body: JSON.stringify({ to: RECIPIENT, value: '1', chainId: '31337' }),
              });
              const body = (await r.json()) as { transactionId?: string };
              if (r.status !== 200 || !body.transactionId) throw new Error(`transfer answered ${r.status}`);
              sent.push({ walletId: w.id, transactionId: body.transactionId });
            }
          }),
        );
        // Two full rounds after the level is reached, so the last one saw every pending record.
        await new Promise((r) => setTimeout(r, 2 * POLL_MS + 200));
        const watched = await metric(svc.adminUrl, 'chain_poll_watched');
        const trips = await metric(svc.adminUrl, 'chain_poll_round_trips');
        const lookupMs = (await metric(svc.adminUrl, 'chain_poll_lookup_seconds')) * 1000;
        console.log(
          `pending ${String(level).padStart(5)}: a polling round looked up ${watched} records in ${trips} RPC round trips (${lookupMs.toFixed(0)} ms)`,
        );
      }
      // Include every pending transfer and finalize the blocks (finalized trails by two), then time the records.
      toggleProfiles();
      const t0 = performance.now();
      await rpc(anvil.rpcUrl, 'anvil_mine', ['0x10']);
      const minedMs = performance.now() - t0;
      const db = (await import('better-sqlite3')).default;
      const file = path.join(svc.dataDir, 'service.db');
      let confirmedAt = 0;
      for (;;) {
        const d = new db(file, { readonly: true });
        const left = (
          d.prepare("select count(*) as n from transactions where status != 'confirmed'").get() as { n: number }
        ).n;
        d.close();
        if (left === 0) {
          confirmedAt = performance.now() - t0;
          break;
        }
        if (performance.now() - t0 > 60_000) throw new Error(`${left} records not confirmed after 60 s`);
        await new Promise((r) => setTimeout(r, 20));
      }
      toggleProfiles();
      console.log(
        `${total} pending: blocks mined and finalized in ${minedMs.toFixed(0)} ms; every record confirmed ${confirmedAt.toFixed(0)} ms after that (${(confirmedAt / POLL_MS).toFixed(2)} polling intervals of ${POLL_MS} ms)`,
      );
    }
  } finally {
    await stopAppliance(svc);
    await anvil.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

await main();
