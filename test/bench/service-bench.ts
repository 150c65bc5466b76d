/**
 * Benchmarks against a running service (the real supervisor, enclave and API processes) with autocannon.
 * Prints figures; asserts nothing. Run: `npm run bench` (or `node --import tsx test/bench/service-bench.ts`).
 *
 *   BENCH_SECONDS      duration of each load phase (default 10)
 *   BENCH_SETTLE_MS    pause between readiness and the first load phase (default 0): the API starts its chain
 *                      workers right after it listens, which competes with the first seconds of load
 *   BENCH_ONLY         comma list of phases: startup,create,get,sign-evm,sign-solana,sign-mixed (default all)
 *
 * sign-evm also measures the raw in-process secp256k1 signing rate on every core (before the service
 * starts, so nothing else competes) and prints the HTTP rate as a share of it.
 *
 * sign-mixed measures the latency of small Solana sign-message requests alone, then while other wallets keep the
 * service busy with slow work (64 KiB EVM messages, 256 KiB EIP-712 typed data, wallet creations with their
 * fsyncs): a request must not wait behind another wallet's work.
 */
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import autocannon from 'autocannon';
import { EIP712_MAIL } from '../../fixtures/eip712-mail.ts';
import { createPartnerKey } from '../helpers/http.ts';
import { BENCH_ADMIN_TOKEN, ROOT, startAppliance, stopAppliance } from './appliance.ts';
import { rawSigningRate } from './raw-signing-rate.ts';

const SECONDS = Number(process.env['BENCH_SECONDS'] ?? 10);
const SETTLE_MS = Number(process.env['BENCH_SETTLE_MS'] ?? 0);
/** Requests per second of the small requests in sign-mixed. */
const LIGHT_RATE = 1000;
const ONLY = (process.env['BENCH_ONLY'] ?? 'startup,create,get,sign-evm,sign-solana,sign-mixed').split(',');

function report(name: string, r: autocannon.Result): void {
  const non2xx = r.non2xx + r.errors + r.timeouts;
  console.log(
    `${name.padEnd(34)} ${r.requests.average.toFixed(0).padStart(7)} req/s   p50 ${String(r.latency.p50).padStart(4)} ms   p99 ${String(
      r.latency.p99,
    ).padStart(4)} ms   max ${r.latency.max} ms   total ${r.requests.total}   non-2xx/errors ${non2xx}`,
  );
}

/** `count` ready wallets of `type`, created one after another. */
async function createWallets(url: string, headers: Record<string, string>, type: string, count: number) {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const res = await fetch(`${url}/v1/wallets`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ type, userIdentifier: `${type}-${i}-${Date.now()}`, userIdentifierType: 'CUSTOM_ID' }),
    });
    ids.push(((await res.json()) as { id: string }).id);
  }
  return ids;
}

async function main(): Promise<void> {
  execFileSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' });
  console.log(`machine: ${os.cpus().length} cores, ${os.cpus()[0]?.model}, node ${process.version}`);
  if (ONLY.includes('startup')) {
    const times: number[] = [];
    for (let i = 0; i < 3; i++) {
      const s = await startAppliance();
      times.push(s.readyMs);
      await stopAppliance(s);
    }
    console.log(`start-up to ready (empty data dir)   ${times.map((t) => `${t.toFixed(0)} ms`).join(', ')}`);
  }
  const raw: Record<string, number> = {};
  if (ONLY.includes('sign-evm')) {
    for (const primitive of ['libsecp256k1', 'libsecp256k1-sign+recover', 'noble-secp256k1'] as const) {
      raw[primitive] = await rawSigningRate(primitive, SECONDS);
      console.log(
        `raw in-process ${primitive.padEnd(26)} ${raw[primitive]!.toFixed(0).padStart(7)} sig/s on ${os.cpus().length} cores`,
      );
    }
  }
  if (!['create', 'get', 'sign-evm', 'sign-solana', 'sign-mixed'].some((phase) => ONLY.includes(phase))) return;

  const svc = await startAppliance();
  await new Promise((r) => setTimeout(r, SETTLE_MS));
  try {
    const { secretKey: key } = await createPartnerKey(svc.adminUrl, BENCH_ADMIN_TOKEN, {
      plan: 'enterprise',
      rateLimitPerMinute: 10_000_000,
    });
    const headers = { 'x-api-key': key, 'content-type': 'application/json' };
    let n = 0;
    if (ONLY.includes('create')) {
      const r = await autocannon({
        url: `${svc.url}/v1/wallets`,
        connections: 32,
        duration: SECONDS,
        requests: [
          {
            method: 'POST',
            headers,
            setupRequest: (req) => ({
              ...req,
              body: JSON.stringify({ type: 'EVM', userIdentifier: `bench-${n++}`, userIdentifierType: 'CUSTOM_ID' }),
            }),
          },
        ],
      });
      report('POST /v1/wallets (EVM), 32 conns', r);
    }
    if (ONLY.includes('get')) {
      const ids = await createWallets(svc.url, headers, 'EVM', 64);
      let j = 0;
      const r = await autocannon({
        url: svc.url,
        connections: 64,
        duration: SECONDS,
        requests: [
          {
            method: 'GET',
            headers: { 'x-api-key': key },
            setupRequest: (req) => ({ ...req, path: `/v1/wallets/${ids[j++ % ids.length]}` }),
          },
        ],
      });
      report('GET /v1/wallets/{id}, 64 conns', r);
    }
    for (const [phase, type] of [
      ['sign-evm', 'EVM'],
      ['sign-solana', 'SOLANA'],
    ] as const) {
      if (!ONLY.includes(phase)) continue;
      const ids = await createWallets(svc.url, headers, type, 64);
      let k = 0;
      const r = await autocannon({
        url: svc.url,
        connections: 64,
        duration: SECONDS,
        requests: [
          {
            method: 'POST',
            headers,
            body: JSON.stringify({ message: 'benchmark message: sign me' }),
            setupRequest: (req) => ({ ...req, path: `/v1/wallets/${ids[k++ % ids.length]}/sign-message` }),
          },
        ],
      });
      report(`POST sign-message (${type}), 64 conns`, r);
      if (type === 'EVM') {
        for (const [primitive, rate] of Object.entries(raw)) {
          console.log(
            `  EVM sign-message over HTTP / raw ${primitive}: ${((100 * r.requests.average) / rate).toFixed(0)}%`,
          );
        }
      }
    }
    if (ONLY.includes('sign-mixed')) {
      // Open loop (fixed request rates), so that the small requests' latency alone and beside the slow work compare.
      const light = await createWallets(svc.url, headers, 'SOLANA', 16);
      const heavy = await createWallets(svc.url, headers, 'EVM', 16);
      let l = 0;
      let h = 0;
      const load = (
        rate: number,
        connections: number,
        route: (i: number) => string,
        body: () => string,
      ): Promise<autocannon.Result> => {
        let i = 0;
        return autocannon({
          url: svc.url,
          connections,
          overallRate: rate,
          duration: SECONDS,
          requests: [{ method: 'POST', headers, setupRequest: (req) => ({ ...req, path: route(i++), body: body() }) }],
        });
      };
      const small = JSON.stringify({ message: 'small message' });
      const lightLoad = () =>
        load(
          LIGHT_RATE,
          16,
          () => `/v1/wallets/${light[l++ % light.length]}/sign-message`,
          () => small,
        );
      report(`small Solana sign-message alone, ${LIGHT_RATE}/s`, await lightLoad());
      const bigMessage = JSON.stringify({ message: 'x'.repeat(64 * 1024) });
      const bigTypedData = JSON.stringify({
        typedData: { ...EIP712_MAIL, message: { ...EIP712_MAIL.message, contents: 'x'.repeat(256 * 1024) } },
      });
      const [underLoad, big, typed, creates] = await Promise.all([
        lightLoad(),
        load(
          200,
          16,
          () => `/v1/wallets/${heavy[h++ % heavy.length]}/sign-message`,
          () => bigMessage,
        ),
        load(
          10,
          8,
          () => `/v1/wallets/${heavy[h++ % heavy.length]}/sign-typed-data`,
          () => bigTypedData,
        ),
        load(
          200,
          16,
          () => '/v1/wallets',
          () => JSON.stringify({ type: 'SUI', userIdentifier: `mixed-${n++}`, userIdentifierType: 'CUSTOM_ID' }),
        ),
      ]);
      report('  the same, beside the three loads below', underLoad);
      report('  64 KiB EVM sign-message, 200/s', big);
      report('  256 KiB EIP-712 sign-typed-data, 10/s', typed);
      report('  POST /v1/wallets (SUI), 200/s', creates);
    }
  } finally {
    await stopAppliance(svc);
  }
}

void main();
