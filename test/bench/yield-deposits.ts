/**
 * Concurrent yield deposits against the running appliance (supervisor, enclave and API processes) and anvil started
 * with Sepolia's chain id, mining a block a second, the local lending protocol at the real Sepolia addresses
 * (fixtures/lending-protocol.ts). Run: `npm run bench:yield-deposits`.
 *
 *   BENCH_DEPOSITS   deposits, one per wallet, all posted at once (default 200)
 *   BENCH_POLL_MS    CHAIN_POLL_INTERVAL_MS of the service (default 1000): how often records and operations are
 *                    looked at
 *   BENCH_TIMEOUT_S  how long the deposits may take to end (default 300)
 *   BENCH_PROFILE=1  write a CPU profile of the API from the first deposit to the last confirmed (the temporary
 *                    directory, wcs-profile-<pid>.cpuprofile)
 *
 * The target (issue 24): 200 concurrent deposits from distinct wallets all reach `confirmed` with exactly one approval
 * and one supply each, checked on-chain: each wallet's nonce is 2, its supplied balance (aToken) is the amount and its
 * allowance to the pool is back to 0; each operation answers `confirmed` with the steps [approve, supply]. The bench
 * fails (exit 1) when one of these does not hold.
 *
 * Printed: the time from admission (the operation's createdAt) to `confirmed` (its updatedAt when it became so, both
 * written by the service) beside the blocks it needed (the head when it was admitted to the head when it was
 * confirmed, as the bench saw anvil's head every 20 ms), split at the approval's and the supply's blocks; and the
 * theoretical minimum: the approval mined (+1 block), its second confirmation (+1: the supply follows it then, not at
 * its finality), the supply mined (+1), its second confirmation (+1): 4 blocks, each step noticed at the next poll. Beside them: one deposit alone just before, on the same machine (the reference: what the 200 cost each
 * other), the RPC requests the service made (through a counting proxy between it and anvil), the CPU
 * of each process, and the machine's load averages.
 *
 * Interval mining, not automine: with automine a block is mined only when a transaction arrives, so the approval's
 * finality and the supply's second confirmation would wait for other deposits' transactions (and the last
 * operations for none): the blocks an operation needs would measure the other operations, not the service.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { encodeFunctionData, erc20Abi } from 'viem';
import { formatUsdcAmount } from '../../chains/evm/format-usdc-amount.ts';
import { startAnvil } from '../../fixtures/anvil.ts';
import { installLendingProtocol, SEPOLIA_CHAIN_ID } from '../../fixtures/lending-protocol.ts';
import { createPartnerKey } from '../helpers/http.ts';
import { BENCH_ADMIN_TOKEN, ROOT, startAppliance, stopAppliance } from './appliance.ts';
import { countsBetween, formatCounts, formatLatency, startCountingRpcProxy } from './counting-rpc-proxy.ts';
import { createWallets, fund } from './evm-wallets.ts';
import { applianceProcesses, withCpu } from './process-cpu.ts';

const DEPOSITS = Number(process.env['BENCH_DEPOSITS'] ?? 200);
const POLL_MS = Number(process.env['BENCH_POLL_MS'] ?? 1000);
const TIMEOUT_S = Number(process.env['BENCH_TIMEOUT_S'] ?? 300);
const PROFILE = process.env['BENCH_PROFILE'] === '1';
const BLOCK_S = 1;
/** Each wallet holds 1000.5 USDC and deposits 100.000001 USDC plus its index in base units: no two amounts alike. */
const FUNDS = 1_000_500_000n;
const amountOf = (i: number) => 100_000_001n + BigInt(i);
/** Approval mined, final two blocks later, supply mined, its second confirmation. */
const MIN_BLOCKS = 1 + 1 + 1 + 1;

const loadNow = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');

/** A batch of JSON-RPC calls straight to the node (not through the proxy: the bench's reads are not counted). */
async function batch<T = string>(rpcUrl: string, calls: Array<{ method: string; params: unknown[] }>): Promise<T[]> {
  const out: T[] = [];
  for (let i = 0; i < calls.length; i += 500) {
    const part = calls.slice(i, i + 500);
    const r = await fetch(rpcUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(part.map((c, j) => ({ jsonrpc: '2.0', id: j, ...c }))),
    });
    const answers = (await r.json()) as Array<{ id: number; result?: T; error?: { message: string } }>;
    answers.sort((a, b) => a.id - b.id);
    for (const a of answers) {
      if (a.error) throw new Error(`node answered an error: ${a.error.message}`);
      out.push(a.result as T);
    }
  }
  return out;
}

/** Watches anvil's head every 20 ms: when (Date.now) each block was first seen. */
function watchHead(rpcUrl: string) {
  const seen: Array<{ block: number; at: number }> = [];
  let stopped = false;
  const done = (async () => {
    while (!stopped) {
      try {
        const [head] = await batch(rpcUrl, [{ method: 'eth_blockNumber', params: [] }]);
        const block = Number(BigInt(head!));
        if (seen.length === 0 || seen[seen.length - 1]!.block !== block) seen.push({ block, at: Date.now() });
      } catch {
        // the node is stopping
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  return {
    /** The head as seen at `at` (ms since the epoch). */
    headAt(at: number): number {
      let head = seen[0]?.block ?? 0;
      for (const s of seen) {
        if (s.at > at) break;
        head = s.block;
      }
      return head;
    },
    /** When `block` was first seen (or the first block after it, should the watcher have missed it). */
    seenAt(block: number): number {
      return seen.find((s) => s.block >= block)?.at ?? Number.NaN;
    },
    head: () => seen[seen.length - 1]?.block ?? 0,
    async stop() {
      stopped = true;
      await done;
    },
  };
}

function percentiles(values: number[]) {
  const s = [...values].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)]!;
  return { p50: at(0.5), p95: at(0.95), max: s[s.length - 1]!, min: s[0]! };
}

interface OperationView {
  id: string;
  status: string;
  amount: string;
  transactions: Array<{ type: string; transactionId: string; status: string; hash: string | null }>;
  error: { code: string; message: string } | null;
}

async function main(): Promise<void> {
  execFileSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' });
  console.log(`machine: ${os.cpus().length} cores, ${os.cpus()[0]?.model ?? ''}; load before: ${loadNow()}`);
  const anvil = await startAnvil({ chainId: SEPOLIA_CHAIN_ID, blockTimeSeconds: BLOCK_S, slotsInAnEpoch: 1 });
  const protocol = await installLendingProtocol(anvil.rpcUrl);
  const proxy = await startCountingRpcProxy(anvil.rpcUrl);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wcs-bench-chains-'));
  const chainsFile = path.join(dir, 'chains.json');
  fs.writeFileSync(
    chainsFile,
    JSON.stringify({ evm: [{ chainId: SEPOLIA_CHAIN_ID, rpcUrl: proxy.url, environment: 'any' }] }),
  );
  const svc = await startAppliance({
    // The machine is shared: under a load of 10 on two cores the service has taken over 30 s to start.
    readyTimeoutMs: 120_000,
    env: {
      CHAINS_FILE: chainsFile,
      CHAIN_POLL_INTERVAL_MS: String(POLL_MS),
      ...(PROFILE ? { NODE_OPTIONS: `--import ${path.join(ROOT, 'test/bench/cpu-profile-preload.mjs')}` } : {}),
    },
  });
  const head = watchHead(anvil.rpcUrl);
  let failures = 0;
  const problem = (message: string) => {
    failures += 1;
    if (failures <= 20) console.log(`  PROBLEM: ${message}`);
  };
  try {
    const { secretKey } = await createPartnerKey(svc.adminUrl, BENCH_ADMIN_TOKEN, {
      plan: 'enterprise',
      rateLimitPerMinute: 10_000_000,
    });
    const headers = { 'x-api-key': secretKey, 'content-type': 'application/json' };
    const [reference, ...wallets] = await createWallets(svc.url, headers, DEPOSITS + 1, 'yield-deposit');
    wallets.sort((a, b) => a.id.localeCompare(b.id));
    await fund(anvil.rpcUrl, [reference!.address, ...wallets.map((w) => w.address)]);
    for (const w of [reference!, ...wallets]) await protocol.fundUsdc(w.address, FUNDS);
    console.log(`${DEPOSITS + 1} wallets created and funded (1 ETH and ${formatUsdcAmount(FUNDS)} USDC each)`);
    // Past a few blocks, so the service's first polls have seen the chain before the deposits.
    await new Promise((r) => setTimeout(r, 2 * POLL_MS));

    const procs = applianceProcesses(svc.proc.pid!, { anvil: anvil.pid, 'bench (proxy, polls)': process.pid });
    const db = new Database(path.join(svc.dataDir, 'service.db'), { readonly: true, fileMustExist: true });

    // The reference, on the same machine just before: one deposit alone, its time and blocks.
    {
      const r = await fetch(`${svc.url}/v1/wallets/${reference!.id}/yield/deposits`, {
        method: 'POST',
        headers: { ...headers, 'idempotency-key': 'bench-reference' },
        body: JSON.stringify({ chainId: SEPOLIA_CHAIN_ID, amount: '100' }),
        signal: AbortSignal.timeout(60_000),
      });
      const { id } = (await r.json()) as OperationView;
      if (r.status !== 202) throw new Error(`the reference deposit answered ${r.status}`);
      const one = db.prepare(
        'select status, created_at as createdAt, updated_at as updatedAt from yield_operations where id = ?',
      );
      const started = Date.now();
      for (;;) {
        const row = one.get(id) as { status: string; createdAt: string; updatedAt: string };
        if (row.status !== 'pending' && row.status !== 'submitted') {
          const from = Date.parse(row.createdAt);
          const to = Date.parse(row.updatedAt);
          if (row.status !== 'confirmed') problem(`the reference deposit ended ${row.status}`);
          console.log(
            `\nreference: one deposit alone: ${row.status} ${to - from} ms after admission, ${head.headAt(to) - head.headAt(from)} blocks (the minimum: ${MIN_BLOCKS}); load ${loadNow()}`,
          );
          break;
        }
        if (Date.now() - started > 120_000) throw new Error('the reference deposit did not end in 120 s');
        await new Promise((r) => setTimeout(r, 100));
      }
    }

    const rows = db.prepare(
      "select id, status, created_at as createdAt, updated_at as updatedAt from yield_operations where idempotency_key like 'bench-deposit-%'",
    );
    const countsBefore = proxy.counts();
    const loadAtStart = loadNow();
    const t0 = Date.now();
    const headAtStart = head.head();
    console.log(
      `\n${DEPOSITS} deposits posted at once, one per wallet (anvil: a block every ${BLOCK_S} s, service poll interval ${POLL_MS} ms); head ${headAtStart}; load ${loadAtStart}`,
    );

    const toggleProfile = () => {
      if (PROFILE && procs['api'] !== undefined) process.kill(procs['api'], 'SIGUSR2');
    };
    toggleProfile();
    const { admitted, ended } = await withCpu(
      procs,
      'deposit',
      () => DEPOSITS,
      async () => {
        const posted = await Promise.all(
          wallets.map(async (w, i) => {
            const sent = Date.now();
            const r = await fetch(`${svc.url}/v1/wallets/${w.id}/yield/deposits`, {
              method: 'POST',
              headers: { ...headers, 'idempotency-key': `bench-deposit-${w.id}` },
              body: JSON.stringify({ chainId: SEPOLIA_CHAIN_ID, amount: formatUsdcAmount(amountOf(i)) }),
              // A POST that never answers is a finding, named here rather than a bench that hangs.
              signal: AbortSignal.timeout(120_000),
            });
            const body = (await r.json()) as OperationView;
            if (r.status !== 202) throw new Error(`deposit ${i} answered ${r.status}: ${JSON.stringify(body)}`);
            return { wallet: w, index: i, id: body.id, answerMs: Date.now() - sent };
          }),
        );
        const answers = percentiles(posted.map((p) => p.answerMs));
        console.log(
          `  all admitted in ${((Date.now() - t0) / 1000).toFixed(1)} s: the 202 answers p50 ${answers.p50} ms, p95 ${answers.p95} ms, max ${answers.max} ms`,
        );
        // The operations' rows, read-only, every 100 ms: the bench asks the API nothing while they run.
        let lastReport = Date.now();
        for (;;) {
          const all = rows.all() as Array<{ id: string; status: string; createdAt: string; updatedAt: string }>;
          const byStatus: Record<string, number> = {};
          for (const row of all) byStatus[row.status] = (byStatus[row.status] ?? 0) + 1;
          const open = (byStatus['pending'] ?? 0) + (byStatus['submitted'] ?? 0);
          if (Date.now() - lastReport >= 5_000 || open === 0) {
            lastReport = Date.now();
            console.log(
              `  +${((Date.now() - t0) / 1000).toFixed(0).padStart(3)} s  head ${head.head()}  ${Object.entries(
                byStatus,
              )
                .map(([s, n]) => `${s} ${n}`)
                .join(', ')}`,
            );
          }
          if (open === 0) return { admitted: posted, ended: new Map(all.map((row) => [row.id, row])) };
          if (Date.now() - t0 > TIMEOUT_S * 1000) {
            problem(`${open} operations still open after ${TIMEOUT_S} s`);
            return { admitted: posted, ended: new Map(all.map((row) => [row.id, row])) };
          }
          await new Promise((r) => setTimeout(r, 100));
        }
      },
    );
    toggleProfile();
    if (PROFILE) console.log(`  CPU profile of the API: ${os.tmpdir()}/wcs-profile-${procs['api']}.cpuprofile`);
    const spent = countsBetween(countsBefore, proxy.counts());
    const loadAtEnd = loadNow();
    db.close();

    // What the partner sees: each operation as the API answers it.
    const views = new Map<string, OperationView>();
    let next = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < admitted.length) {
          const a = admitted[next++]!;
          const r = await fetch(`${svc.url}/v1/wallets/${a.wallet.id}/yield/operations/${a.id}`, {
            headers,
            signal: AbortSignal.timeout(60_000),
          });
          views.set(a.id, (await r.json()) as OperationView);
        }
      }),
    );
    const statuses: Record<string, number> = {};
    for (const a of admitted) {
      const v = views.get(a.id)!;
      statuses[v.status] = (statuses[v.status] ?? 0) + 1;
      if (v.status !== 'confirmed') problem(`operation ${a.id} is ${v.status}: ${JSON.stringify(v.error)}`);
      const types = v.transactions.map((t) => t.type).join(',');
      if (types !== 'approve,supply') problem(`operation ${a.id} has the steps [${types}]`);
    }
    console.log(`\nas the API answers them: ${JSON.stringify(statuses)}`);

    // On the chain: one approval and one supply per wallet (nonce 2), the amount supplied, nothing left allowed.
    const addresses = admitted.map((a) => a.wallet.address as `0x${string}`);
    const [nonces, supplied, allowances] = await Promise.all([
      batch(
        anvil.rpcUrl,
        addresses.map((a) => ({ method: 'eth_getTransactionCount', params: [a, 'latest'] })),
      ),
      batch(
        anvil.rpcUrl,
        addresses.map((a) => ({
          method: 'eth_call',
          params: [
            { to: protocol.aToken, data: encodeFunctionData({ abi: erc20Abi, functionName: 'balanceOf', args: [a] }) },
            'latest',
          ],
        })),
      ),
      batch(
        anvil.rpcUrl,
        addresses.map((a) => ({
          method: 'eth_call',
          params: [
            {
              to: protocol.market.usdc,
              data: encodeFunctionData({ abi: erc20Abi, functionName: 'allowance', args: [a, protocol.market.pool] }),
            },
            'latest',
          ],
        })),
      ),
    ]);
    let onChainOk = 0;
    for (const [k, a] of admitted.entries()) {
      const bad: string[] = [];
      if (Number(BigInt(nonces[k]!)) !== 2) bad.push(`nonce ${Number(BigInt(nonces[k]!))}`);
      if (BigInt(supplied[k]!) !== amountOf(a.index))
        bad.push(`supplied ${BigInt(supplied[k]!)} ≠ ${amountOf(a.index)}`);
      if (BigInt(allowances[k]!) !== 0n) bad.push(`allowance ${BigInt(allowances[k]!)}`);
      if (bad.length > 0) problem(`wallet ${a.wallet.address}: ${bad.join(', ')}`);
      else onChainOk += 1;
    }
    console.log(
      `on chain: ${onChainOk}/${admitted.length} wallets with nonce 2 (one approval, one supply), the amount supplied, allowance 0`,
    );

    // The steps' blocks, from their receipts.
    const hashes = admitted.map((a) => views.get(a.id)!.transactions.map((t) => t.hash));
    const receipts = await batch<{ blockNumber: string } | null>(
      anvil.rpcUrl,
      hashes.flat().map((h) => ({ method: 'eth_getTransactionReceipt', params: [h] })),
    );
    // When the service wrote each step's record, and resolved it (final): the time between the blocks, by stage.
    const records = new Database(path.join(svc.dataDir, 'service.db'), { readonly: true, fileMustExist: true });
    const recordOf = records.prepare(
      'select created_at as createdAt, resolved_at as resolvedAt from transactions where id = ?',
    );
    const stepTimes = (id: string) => {
      const t = recordOf.get(id) as { createdAt: string; resolvedAt: string | null } | undefined;
      return { created: Date.parse(t?.createdAt ?? ''), resolved: Date.parse(t?.resolvedAt ?? '') };
    };
    const stages: Record<string, number[]> = {
      'admitted to the approval prepared': [],
      'approval prepared to mined (signed, sent, next block)': [],
      'approval mined to the supply prepared (second confirmation + operation poll)': [],
      'supply prepared to mined (signed, sent, next block)': [],
      'supply mined to confirmed (second block + poll)': [],
    };
    const timing: Array<{ ms: number; blocks: number; toApproval: number; toSupply: number; toConfirmed: number }> = [];
    let r = 0;
    for (const [k, a] of admitted.entries()) {
      const steps = hashes[k]!.map(() => receipts[r++]);
      const row = ended.get(a.id);
      if (row?.status !== 'confirmed' || steps.length !== 2 || steps.some((s) => !s)) continue;
      const admittedAt = Date.parse(row.createdAt);
      const confirmedAt = Date.parse(row.updatedAt);
      const admittedHead = head.headAt(admittedAt);
      const confirmedHead = head.headAt(confirmedAt);
      const approval = Number(BigInt(steps[0]!.blockNumber));
      const supply = Number(BigInt(steps[1]!.blockNumber));
      const [approvalRecord, supplyRecord] = views.get(a.id)!.transactions.map((t) => stepTimes(t.transactionId));
      const values = [
        approvalRecord!.created - admittedAt,
        head.seenAt(approval) - approvalRecord!.created,
        supplyRecord!.created - head.seenAt(approval),
        head.seenAt(supply) - supplyRecord!.created,
        confirmedAt - head.seenAt(supply),
      ];
      for (const [j, list] of Object.values(stages).entries()) list.push(values[j]!);
      timing.push({
        ms: confirmedAt - admittedAt,
        blocks: confirmedHead - admittedHead,
        toApproval: approval - admittedHead,
        toSupply: supply - approval,
        toConfirmed: confirmedHead - supply,
      });
    }
    if (timing.length > 0) {
      const line = (name: string, values: number[], unit: string) => {
        const p = percentiles(values);
        return `  ${name.padEnd(62)} p50 ${p.p50}${unit}   p95 ${p.p95}${unit}   max ${p.max}${unit}   (min ${p.min}${unit})`;
      };
      console.log(`\nadmission to confirmed, ${timing.length} operations:`);
      console.log(
        line(
          'time (ms)',
          timing.map((t) => t.ms),
          ' ms',
        ),
      );
      console.log(
        line(
          'blocks (head at admission to head at confirmed)',
          timing.map((t) => t.blocks),
          '',
        ),
      );
      console.log(
        line(
          '  admission to the approval mined (blocks)',
          timing.map((t) => t.toApproval),
          '',
        ),
      );
      console.log(
        line(
          '  approval mined to supply mined (blocks)',
          timing.map((t) => t.toSupply),
          '',
        ),
      );
      console.log(
        line(
          '  supply mined to head at confirmed (blocks)',
          timing.map((t) => t.toConfirmed),
          '',
        ),
      );
      console.log('  the time by stage (ms; a block is mined every second, the watcher sees it within 20 ms):');
      for (const [name, values] of Object.entries(stages)) console.log(line(`  ${name}`, values, ' ms'));
      console.log(
        `  theoretical minimum: ${MIN_BLOCKS} blocks (approval mined +1, its second confirmation +1, supply mined +1, its second confirmation +1); ` +
          `at a block every ${BLOCK_S} s, ${MIN_BLOCKS - 1}–${MIN_BLOCKS} s after admission (where in its block it came) plus the ` +
          `poll that notices the second confirmation (up to ${POLL_MS} ms); the supply makes the next block only when ` +
          'the approval’s second confirmation is noticed (the operation’s poll) and the supply signed and sent within a block',
      );
    }
    console.log(
      `\nRPC made by the service from the first deposit to the last confirmed: ${formatCounts(spent)}; ${(spent.requests / DEPOSITS).toFixed(1)} HTTP requests and ${(spent.calls / DEPOSITS).toFixed(1)} calls per deposit`,
    );
    console.log(`  the node's answer times by first method: ${formatLatency(spent)}`);
    records.close();
    console.log(`load averages (1, 5, 15 min): at the start ${loadAtStart}, at the end ${loadAtEnd}`);
  } finally {
    await head.stop();
    await stopAppliance(svc);
    await proxy.close();
    await anvil.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
  if (failures > 0) {
    console.log(`\n${failures} problem(s): the target is not met`);
    process.exitCode = 1;
  } else {
    console.log(
      `\nall ${DEPOSITS} deposits confirmed with exactly one approval and one supply each (checked on chain)`,
    );
  }
}

await main();
