/**
 * Yield position reads against the running appliance (supervisor, enclave and API processes) and anvil started with
 * Sepolia's chain id, the local lending protocol at the real Sepolia addresses (fixtures/lending-protocol.ts).
 * Prints figures; asserts nothing. Run: `node --import tsx test/bench/yield-position.ts`.
 *
 *   BENCH_RATE       steady rate of the paced phases, open loop (default 200/s)
 *   BENCH_SECONDS    length of each phase (default 10)
 *   BENCH_ROUNDS     rounds of the paced phases (default 2)
 *   BENCH_WALLETS    wallets read in turn, each with USDC supplied from its own address (default 50)
 *   BENCH_PROFILE=1  write a CPU profile of the API during the paced position phase (the temporary directory,
 *                    wcs-profile-<pid>.cpuprofile)
 *
 * The target (issue 24): one RPC round trip per read (test/yield-position.spec.ts counts them) and p99 < 50 ms at
 * 200 reads/s. Beside the route, measured in the same run at the same rate: the node alone answering the very
 * request the service sends for a read (`eth_chainId` and the reader's `eth_call` in one batch), and one bare
 * `eth_call` of the reader; and the service alone on an authenticated read that asks no node (`GET
 * /v1/wallets/{walletId}`). The paced phases are open loop (paced-load.ts: a latency counts from the moment its
 * request was due), after a warm-up of position reads that is shown apart; a last phase saturates the route with
 * autocannon (closed loop) for its most reads per second.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { encodeAbiParameters } from 'viem';
import YieldSnapshotReader from '../../chains/evm/contracts/YieldSnapshotReader.json' with { type: 'json' };
import { encodeLendingCall, type LendingCall } from '../../chains/evm/encode-lending-call.ts';
import { startAnvil } from '../../fixtures/anvil.ts';
import { mine, rpc } from '../../fixtures/evm-helpers.ts';
import {
  installLendingProtocol,
  type LocalLendingProtocol,
  SEPOLIA_CHAIN_ID,
} from '../../fixtures/lending-protocol.ts';
import { createPartnerKey } from '../helpers/http.ts';
import { BENCH_ADMIN_TOKEN, ROOT, startAppliance, stopAppliance } from './appliance.ts';
import { createWallets, fund } from './evm-wallets.ts';
import { type PacedRequest, type PacedResult, pacedLoad } from './paced-load.ts';
import { applianceProcesses, withCpu } from './process-cpu.ts';

const RATE = Number(process.env['BENCH_RATE'] ?? 200);
const SECONDS = Number(process.env['BENCH_SECONDS'] ?? 10);
const WALLETS = Number(process.env['BENCH_WALLETS'] ?? 50);
const COUNT = RATE * SECONDS;
const PROFILE = process.env['BENCH_PROFILE'] === '1';
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 2);

/** The machine's load averages (1, 5, 15 minutes): the machine is shared, so figures are read beside them. */
const loadNow = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');

function line(name: string, r: PacedResult): string {
  const ms = (v: number) => `${v.toFixed(1)} ms`;
  return `${name.padEnd(52)} ${r.achieved.toFixed(0).padStart(4)} /s   p50 ${ms(r.p50)}   p90 ${ms(r.p90)}   p99 ${ms(r.p99)}   max ${ms(r.max)}   non-2xx/errors ${r.bad}   (sends at most ${r.sendLagMax.toFixed(1)} ms late)`;
}

/** Sends `call` from `from` (impersonated on anvil: the wallet's own address) and waits for its receipt. */
async function sendFrom(
  rpcUrl: string,
  protocol: LocalLendingProtocol,
  from: string,
  call: LendingCall,
): Promise<void> {
  const { to, data } = encodeLendingCall(protocol.market, call);
  const hash = await rpc<string>(rpcUrl, 'eth_sendTransaction', [{ from, to, data }]);
  for (;;) {
    const receipt = await rpc<{ status: string } | null>(rpcUrl, 'eth_getTransactionReceipt', [hash]);
    if (receipt) {
      if (receipt.status !== '0x1') throw new Error(`${call.kind} from ${from} reverted`);
      return;
    }
    await new Promise((r) => setTimeout(r, 5));
  }
}

async function main(): Promise<void> {
  execFileSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' });
  console.log(`machine: ${os.cpus().length} cores, ${os.cpus()[0]?.model ?? ''}; load before: ${loadNow()}`);
  const anvil = await startAnvil({ chainId: SEPOLIA_CHAIN_ID });
  const protocol = await installLendingProtocol(anvil.rpcUrl);
  // Past the genesis block, whose eth_call anvil runs with a timestamp of 1.
  await mine(anvil.rpcUrl, 1);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wcs-bench-chains-'));
  const chainsFile = path.join(dir, 'chains.json');
  fs.writeFileSync(
    chainsFile,
    JSON.stringify({ evm: [{ chainId: SEPOLIA_CHAIN_ID, rpcUrl: anvil.rpcUrl, environment: 'any' }] }),
  );
  const svc = await startAppliance({
    env: {
      CHAINS_FILE: chainsFile,
      ...(PROFILE ? { NODE_OPTIONS: `--import ${path.join(ROOT, 'test/bench/cpu-profile-preload.mjs')}` } : {}),
    },
  });
  try {
    const { secretKey } = await createPartnerKey(svc.adminUrl, BENCH_ADMIN_TOKEN, {
      plan: 'enterprise',
      rateLimitPerMinute: 10_000_000,
    });
    const headers = { 'x-api-key': secretKey };
    const wallets = await createWallets(svc.url, { ...headers, 'content-type': 'application/json' }, WALLETS, 'yield');
    await fund(
      anvil.rpcUrl,
      wallets.map((w) => w.address),
    );
    // Each wallet supplies 100.000001 × (its index + 1) USDC from its own address, as a deposit would.
    for (const [i, w] of wallets.entries()) {
      const amount = 100_000_001n * BigInt(i + 1);
      await protocol.fundUsdc(w.address, amount);
      await rpc(anvil.rpcUrl, 'anvil_impersonateAccount', [w.address]);
      await sendFrom(anvil.rpcUrl, protocol, w.address, { kind: 'approve', amount });
      await sendFrom(anvil.rpcUrl, protocol, w.address, {
        kind: 'supply',
        amount,
        onBehalfOf: w.address as `0x${string}`,
      });
      await rpc(anvil.rpcUrl, 'anvil_stopImpersonatingAccount', [w.address]);
    }
    await protocol.accrueInterest(37n);
    const probe = await (
      await fetch(`${svc.url}/v1/wallets/${wallets[0]!.id}/yield/position?chainId=${SEPOLIA_CHAIN_ID}`, { headers })
    ).json();
    console.log(`a read: ${JSON.stringify(probe)}`);

    const procs = applianceProcesses(svc.proc.pid!, { anvil: anvil.pid, 'bench (load)': process.pid });
    const node = new URL(anvil.rpcUrl);
    const readerCall = (i: number) => ({
      data: `${YieldSnapshotReader.bytecode}${encodeAbiParameters(
        [{ type: 'address' }, { type: 'address' }, { type: 'address' }],
        [protocol.market.pool, protocol.market.usdc, wallets[i % wallets.length]!.address as `0x${string}`],
      ).slice(2)}`,
    });
    const phases: Array<[string, (i: number) => PacedRequest]> = [
      [
        'node alone: the read request (eth_chainId + eth_call batch)',
        (i) => ({
          method: 'POST',
          path: node.pathname,
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify([
            { jsonrpc: '2.0', id: 0, method: 'eth_chainId', params: [] },
            { jsonrpc: '2.0', id: 1, method: 'eth_call', params: [readerCall(i), 'latest'] },
          ]),
        }),
      ],
      [
        'node alone: one eth_call of the reader',
        (i) => ({
          method: 'POST',
          path: node.pathname,
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_call', params: [readerCall(i), 'latest'] }),
        }),
      ],
      [
        'service alone: GET /v1/wallets/{walletId}',
        (i) => ({ method: 'GET', path: `/v1/wallets/${wallets[i % wallets.length]!.id}`, headers }),
      ],
      [
        'GET /v1/wallets/{walletId}/yield/position',
        (i) => ({
          method: 'GET',
          path: `/v1/wallets/${wallets[i % wallets.length]!.id}/yield/position?chainId=${SEPOLIA_CHAIN_ID}`,
          headers,
        }),
      ],
    ];
    console.log(
      `\n${COUNT} requests at a steady ${RATE}/s each (open loop), wallets read in turn: ${WALLETS}; ${ROUNDS} rounds ` +
        'of the four phases, so that drift of the shared machine falls on each',
    );
    // The service's first seconds of reads compile and size what later ones reuse (JIT, connections to the node,
    // the heap): shown, and kept out of the rounds.
    const warm = await pacedLoad(svc.url, RATE, COUNT / 2, phases[phases.length - 1]![1]);
    console.log(line(`warm-up (not counted): position reads, ${RATE}/s`, warm));
    for (let round = 1; round <= ROUNDS; round++) {
      console.log(`round ${round}; load ${loadNow()}`);
      for (const [name, make] of phases) {
        const origin = name.startsWith('node') ? node.origin : svc.url;
        const profiled = PROFILE && name.includes('yield') && procs['api'] !== undefined;
        if (profiled) process.kill(procs['api']!, 'SIGUSR2');
        const r = await withCpu(
          procs,
          'request',
          () => COUNT,
          () => pacedLoad(origin, RATE, COUNT, make),
        );
        if (profiled) {
          process.kill(procs['api']!, 'SIGUSR2');
          console.log(`  CPU profile: ${os.tmpdir()}/wcs-profile-${procs['api']}.cpuprofile`);
        }
        console.log(line(`${name}, ${RATE}/s`, r));
      }
    }

    let n = 0;
    const most = await autocannon({
      url: svc.url,
      connections: 32,
      duration: SECONDS,
      requests: [
        {
          method: 'GET',
          headers,
          setupRequest: (req) => ({
            ...req,
            path: `/v1/wallets/${wallets[n++ % wallets.length]!.id}/yield/position?chainId=${SEPOLIA_CHAIN_ID}`,
          }),
        },
      ],
    });
    console.log(
      `\nposition reads, 32 connections, saturating (autocannon): ${most.requests.average.toFixed(0)} /s   p50 ${most.latency.p50} ms   p99 ${most.latency.p99} ms   non-2xx/errors ${most.non2xx + most.errors + most.timeouts}`,
    );
    console.log(`load after: ${loadNow()}`);
  } finally {
    await stopAppliance(svc);
    await anvil.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

await main();
