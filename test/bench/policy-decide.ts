/**
 * The signing-policy decision point (actors/signing/signature-policy.ts) under load. Prints figures; asserts only
 * that no update was lost.
 *
 *   node --import tsx test/bench/policy-decide.ts [--only decide,reserve,message,http] [--seconds 3] [--rounds 10]
 *     [--connections 64] [--rate 0]
 *
 * decide:  the CPU of one decision inside a write (decideWithin in a transaction, no fsync: what a signing request's
 *          event loop pays), with 20 active policies of 10 rules each that all apply, beside permissions off.
 * reserve: decisions on ONE wallet against a spend cap through the group-commit writer on a file database (fsync on),
 *          as many at once as `--concurrency`: decisions per second, and the ledger's total checked against the
 *          allowed count (a lost update would show as a difference).
 * message: the gate as EVM sign-message calls it, with the service's stores and its decision log written as the service
 *          writes it, `--decisions` messages a run, `--rounds` runs with permissions on and off in turn: CPU per decision
 *          of the process (no HTTP, no enclave: what the on path adds, without the noise of the rest).
 * http:    EVM sign-message over HTTP (in-process API with the service's own stores + enclave child, autocannon in
 *          this process), keys with permissions off and on (one policy of 10 rules, made over the API), in turn,
 *          `--rounds` pairs of `--seconds` each (the order inside a pair alternating): each run's requests per second
 *          and CPU per request (this process: its main thread and its other threads; the enclave child apart), then
 *          the median, quartiles and range of the pairs' on/off ratios. `--rate N` holds N requests per second in both
 *          (below what the machine answers): the rates then match, and the CPU per request compares the paths at the
 *          same load (at full speed a slower run also pays more per request for its idle event-loop turns).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import type { ActivePolicy } from '../../actors/signing/policy/evaluate-policies.ts';
import type { HoldResolver, PolicySource } from '../../actors/signing/policy/policy-ports.ts';
import { validatePolicy } from '../../actors/signing/policy/validate-policy.ts';
import { createSignatureGate, type SignatureRequest } from '../../actors/signing/signature-policy.ts';
import { extractEvmTransactionFacts } from '../../chains/evm/extract-evm-transaction-facts.ts';
import { createStore } from '../../store/index.ts';

const { values } = parseArgs({
  options: {
    only: { type: 'string', default: 'decide,reserve,message,http' },
    seconds: { type: 'string', default: '3' },
    rounds: { type: 'string', default: '10' },
    rate: { type: 'string', default: '0' },
    connections: { type: 'string', default: '64' },
    concurrency: { type: 'string', default: '256' },
    decisions: { type: 'string', default: '20000' },
  },
});
const ONLY = new Set(values.only.split(','));
const SECONDS = Number(values.seconds);
const ROUNDS = Number(values.rounds);
/** Requests per second autocannon holds in http mode (0: as many as the service answers). */
const RATE = Number(values.rate);

const WALLET = 'w-bench';
const TO = '0x1111111111111111111111111111111111111111';
const address = (i: number) => `0x${i.toString(16).padStart(40, '0')}`;

/** 20 EVM policies of 10 rules each, none of which denies the benchmark's requests, all of which apply to them. */
function policies(): ActivePolicy[] {
  const out: ActivePolicy[] = [];
  for (let p = 0; p < 20; p++) {
    const rules = [];
    for (let r = 0; r < 10; r++) {
      rules.push(
        r === 0 && p === 0
          ? {
              id: 'cap',
              effect: 'deny',
              // Not 'all': a spend leaf on a message is indeterminate, which a deny rule counts as true.
              actions: ['sign_transaction', 'transfer'],
              conditions: [{ spend: { asset: 'native', window: '24h' }, op: 'gt', value: (10n ** 30n).toString() }],
            }
          : r % 2 === 0
            ? {
                id: `block-${r}`,
                effect: 'deny',
                actions: ['all'],
                conditions: [{ fact: 'wallet.id', op: 'in', value: [`other-${p}-${r}-a`, `other-${p}-${r}-b`] }],
              }
            : {
                id: `big-${r}`,
                effect: 'require_approval',
                actions: ['sign_transaction', 'transfer'],
                conditions: [{ fact: 'to', op: 'in', value: [address(p * 100 + r), address(p * 100 + r + 1)] }],
              },
      );
    }
    const checked = validatePolicy({ name: `p${p}`, layer: 'guardrail', scope: { walletType: 'EVM' }, rules });
    if (!checked.valid) throw new Error(JSON.stringify(checked.errors));
    out.push({ id: `p${p}`, version: 1, createdAt: p, document: checked.policy });
  }
  return out;
}

function source(active: ActivePolicy[], enabled: { on: boolean }): PolicySource {
  return {
    permissions: () => ({ enabled: enabled.on, approvals: false }),
    activeGuardrails: () => active,
  };
}

const noHolds: HoldResolver = {
  checkReference: () => undefined,
  resolve: () => {
    throw new Error('the benchmark policies never hold');
  },
};

const principal = { keyId: 'key-bench', projectId: 'p-bench', environment: 'development' as const };
let seq = 0;
function request(value: bigint): SignatureRequest {
  const hash = `h${++seq}`;
  return {
    principal,
    wallet: { id: WALLET, type: 'EVM', projectId: 'p-bench' },
    operation: 'sign-transaction',
    rawSignature: false,
    chainId: '1',
    facts: () => extractEvmTransactionFacts({ chainId: 1, to: TO, value }),
    reference: { idempotencyKey: null, route: 'sign-transaction', bodyHash: () => hash },
  };
}

interface Run {
  rate: number;
  /** CPU per request (µs) of this process (process.cpuUsage), and of its main thread and other threads (/proc). */
  cpu: number;
  main: number;
  others: number;
  /** CPU per request (µs) of the enclave child, all its threads; NaN when unknown. */
  enclave: number;
}

/** A process's CPU so far in clock ticks (1/100 s): its main thread, and all its other threads together. */
function processTicks(pid: number): { main: number; others: number } {
  let main = 0;
  let others = 0;
  for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
    let stat: string;
    try {
      stat = fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    } catch {
      continue; // the thread ended meanwhile
    }
    // Fields after the command name (which may hold spaces): utime and stime are the 14th and 15th.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]);
    if (Number(tid) === pid) main += ticks;
    else others += ticks;
  }
  return { main, others };
}

/** Median, quartiles and range (linear interpolation between order statistics). */
function quantiles(xs: number[]): { min: number; q1: number; median: number; q3: number; max: number } {
  const s = [...xs].sort((a, b) => a - b);
  const at = (q: number) => {
    const i = (s.length - 1) * q;
    const lo = Math.floor(i);
    const hi = Math.ceil(i);
    return s[lo]! + (s[hi]! - s[lo]!) * (i - lo);
  };
  return { min: s[0]!, q1: at(0.25), median: at(0.5), q3: at(0.75), max: s[s.length - 1]! };
}

function tempDb(): string {
  return path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'wcs-policy-bench-')), 'service.db');
}

const [load1] = os.loadavg();
console.log(`node ${process.version}, ${os.cpus().length} cores, load average ${load1!.toFixed(2)} (1 min)`);

if (ONLY.has('decide')) {
  const store = createStore(tempDb());
  const enabled = { on: true };
  const gate = createSignatureGate({
    policies: source(policies(), enabled),
    holds: noHolds,
    spend: store.spend,
    decisions: store.policyDecisions,
    writer: store.writer,
  });
  const begin = store.sqlite.prepare('BEGIN IMMEDIATE');
  const commit = store.sqlite.prepare('COMMIT');
  const N = 20_000;
  const time = (label: string, fn: () => void) => {
    for (let i = 0; i < 2000; i++) fn();
    const t = new Float64Array(N);
    for (let i = 0; i < N; i++) {
      const t0 = process.hrtime.bigint();
      fn();
      t[i] = Number(process.hrtime.bigint() - t0);
    }
    t.sort();
    console.log(
      `${label.padEnd(70)} p50 ${(t[N >> 1]! / 1000).toFixed(1).padStart(7)} µs  p99 ${(t[Math.floor(N * 0.99)]! / 1000).toFixed(1).padStart(7)} µs`,
    );
  };
  time('empty transaction (BEGIN IMMEDIATE; COMMIT), no fsync', () => {
    begin.run();
    commit.run();
  });
  enabled.on = false;
  time('permissions off: decideWithin in a transaction', () => {
    begin.run();
    gate.decideWithin(request(1n));
    commit.run();
  });
  enabled.on = true;
  time('permissions on, 20 policies x 10 rules: decideWithin in a transaction', () => {
    begin.run();
    gate.decideWithin(request(1n));
    commit.run();
  });
  store.close();
}

if (ONLY.has('message')) {
  // The gate as `sign-message` calls it (signIfAllowed, the body hashed for its reference, the signature a resolved
  // promise), over the service's stores on a file database with the WAL checkpointed off-thread, and the decision log
  // written as the service writes it (queued, flushed every LOG_FLUSH_MS). CPU per decision of this whole process,
  // permissions on (the benchmark's first policy: 10 rules, 4 of which apply to a message) beside off, in turn.
  const { fingerprintOf } = await import('../../api/services/idempotency.ts');
  const store = createStore(tempDb(), { checkpointOffThread: true });
  const enabled = { on: true };
  const gate = createSignatureGate({
    policies: source(policies().slice(0, 1), enabled),
    holds: store.approvals,
    spend: store.spend,
    decisions: store.policyDecisions,
    writer: store.writer,
  });
  const wallets = Array.from({ length: 16 }, (_, i) => ({
    id: `2f1d0a8e-58a1-4c1e-9d7e-1c2b3a4d5e${i.toString(16).padStart(2, '0')}`,
    type: 'EVM' as const,
    projectId: 'p-bench',
  }));
  const body = { message: 'benchmark message: sign me' };
  const signature = () => Promise.resolve('0x');
  const N = Number(values.decisions);
  /** N decisions, 64 at a time (as many connections), and the log written: CPU µs a decision. */
  const messages = async () => {
    const cpu0 = process.cpuUsage();
    let next = 0;
    await Promise.all(
      Array.from({ length: 64 }, async () => {
        while (next < N) {
          const i = next++;
          await gate.signIfAllowed(
            {
              principal,
              wallet: wallets[i % wallets.length]!,
              operation: 'sign-message',
              rawSignature: false,
              chainId: null,
              reference: { idempotencyKey: null, route: 'sign-message', bodyHash: () => fingerprintOf(body) },
              initiatorUserId: null,
            },
            signature,
          );
          // A turn of the event loop a request, as the service's answers take.
          if (i % 64 === 0) await new Promise((resolve) => setImmediate(resolve));
        }
      }),
    );
    await gate.flush();
    await store.writer.write(() => undefined);
    const cpu = process.cpuUsage(cpu0);
    return (cpu.user + cpu.system) / N;
  };
  for (const on of [false, true]) {
    enabled.on = on;
    await messages(); // warm-up
  }
  const cost: Record<'off' | 'on', number[]> = { off: [], on: [] };
  for (let round = 0; round < ROUNDS; round++) {
    for (const mode of round % 2 === 0 ? (['off', 'on'] as const) : (['on', 'off'] as const)) {
      enabled.on = mode === 'on';
      cost[mode].push(await messages());
    }
  }
  const off = quantiles(cost.off).median;
  const on = quantiles(cost.on).median;
  console.log(
    `message: ${N} sign-message decisions a run, ${ROUNDS} runs each, CPU µs a decision (this process, all threads), medians: off ${off.toFixed(2)}, on ${on.toFixed(2)} (+${(on - off).toFixed(2)}); on ranged ${Math.min(...cost.on).toFixed(2)}–${Math.max(...cost.on).toFixed(2)}`,
  );
  store.close();
}

if (ONLY.has('reserve')) {
  const store = createStore(tempDb());
  const gate = createSignatureGate({
    policies: source(
      (() => {
        const checked = validatePolicy({
          name: 'cap',
          layer: 'guardrail',
          scope: { walletType: 'EVM', networks: ['eip155:1'] },
          rules: [
            {
              id: 'cap',
              effect: 'deny',
              actions: ['sign_transaction'],
              conditions: [{ spend: { asset: 'native', window: '24h' }, op: 'gt', value: '15000' }],
            },
          ],
        });
        if (!checked.valid) throw new Error('cap');
        return [{ id: 'cap', version: 1, createdAt: 0, document: checked.policy }];
      })(),
      { on: true },
    ),
    holds: noHolds,
    spend: store.spend,
    decisions: store.policyDecisions,
    writer: store.writer,
  });
  const total = Number(values.decisions);
  const concurrency = Number(values.concurrency);
  let allowed = 0;
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) {
        next += 1;
        const d = await gate.decide(request(1n));
        if (d.effect === 'allow') allowed += 1;
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  const day = 86_400_000;
  const counted = store.spend.windowTotal(
    {
      apiKeyId: principal.keyId,
      walletId: WALLET,
      network: 'eip155:1',
      asset: 'native',
      windowMs: day,
      windowStart: Math.floor(Date.now() / day) * day,
    },
    { materialize: false },
  );
  console.log(
    `reserve: ${total} decisions on one wallet, ${concurrency} at once, cap 15000 x 1 wei: ${(total / seconds).toFixed(0)} decisions/s; allowed ${allowed}, ledger ${counted}${BigInt(allowed) === counted && allowed === Math.min(total, 15000) ? ' (no lost update)' : ' LOST UPDATE'}`,
  );
  store.close();
  if (BigInt(allowed) !== counted) process.exitCode = 1;
}

if (ONLY.has('http')) {
  // The service as it runs: policies in its store, written over the API; approvals' store as the hold resolver.
  const { startTestService } = await import('../helpers/service.ts');
  const svc = await startTestService();
  try {
    /** A key, permissions on or off, with 16 EVM wallets; `policy` created and activated over the API. */
    const keyWith = async (on: boolean, policy?: Record<string, unknown>) => {
      const partner = await svc.newPartner();
      if (on) {
        const r = await svc.admin('PUT', `/api-keys/${partner.keyId}/permissions`, { enabled: true, approvals: true });
        if (r.status !== 200) throw new Error(JSON.stringify(r.body));
      }
      if (policy) {
        const c = await svc.v1(partner.secret, 'POST', '/permissions-v2/policies', { policy });
        const a = await svc.v1(partner.secret, 'POST', `/permissions-v2/policies/${c.body.id}/activate`, {
          expectedRevision: c.body.revision,
        });
        if (a.status !== 200) throw new Error(JSON.stringify(a.body));
      }
      const ids: string[] = [];
      for (let i = 0; i < 16; i++) {
        const r = await svc.v1(partner.secret, 'POST', '/wallets', {
          type: 'EVM',
          userIdentifier: `bench-${partner.keyId}-${i}`,
          userIdentifierType: 'CUSTOM_ID',
        });
        ids.push(r.body.id as string);
      }
      return { secret: partner.secret, ids };
    };
    // One policy on the key's EVM wallets, every network (the one a message meets): the benchmark's first 10 rules,
    // four of which apply to messages.
    const first = policies()[0]!.document as unknown as { rules: unknown[] };
    const keys = {
      off: await keyWith(false),
      noPolicy: await keyWith(true),
      policy: await keyWith(true, {
        name: 'bench',
        layer: 'guardrail',
        scope: { walletType: 'EVM' },
        rules: first.rules,
      }),
    };
    const enclavePid = svc.enclave.pid;
    const run = async (label: string, key: { secret: string; ids: string[] }): Promise<Run> => {
      let k = 0;
      const cpu0 = process.cpuUsage();
      const threads0 = processTicks(process.pid);
      const enclave0 = enclavePid === undefined ? undefined : processTicks(enclavePid);
      const r = await autocannon({
        url: svc.url,
        connections: Number(values.connections),
        duration: SECONDS,
        ...(RATE > 0 ? { overallRate: RATE } : {}),
        requests: [
          {
            method: 'POST',
            headers: { 'x-api-key': key.secret, 'content-type': 'application/json' },
            body: JSON.stringify({ message: 'benchmark message: sign me' }),
            setupRequest: (req) => ({ ...req, path: `/v1/wallets/${key.ids[k++ % key.ids.length]}/sign-message` }),
          },
        ],
      });
      const cpu = process.cpuUsage(cpu0);
      const threads1 = processTicks(process.pid);
      const enclave1 = enclavePid === undefined ? undefined : processTicks(enclavePid);
      const n = r.requests.total;
      // This process's CPU per request: the API and autocannon (the enclave child signs apart). Split by thread from
      // /proc in clock ticks (10 ms): the main thread (the API's JavaScript, and autocannon's) and the others (V8's
      // collector and compiler threads, libuv's pool running fdatasync, the WAL checkpointer).
      const perRequest = (cpu.user + cpu.system) / n;
      const tick = 10_000 / n;
      const main = (threads1.main - threads0.main) * tick;
      const others = (threads1.others - threads0.others) * tick;
      const enclave =
        enclave0 && enclave1 ? (enclave1.main + enclave1.others - enclave0.main - enclave0.others) * tick : NaN;
      const rate = n / SECONDS;
      console.log(
        `${label.padEnd(44)} ${rate.toFixed(0).padStart(6)} req/s  p50 ${String(r.latency.p50).padStart(2)} ms  CPU/req µs: API+load ${perRequest.toFixed(0).padStart(3)} (main ${main.toFixed(0).padStart(3)}, other threads ${others.toFixed(0).padStart(3)}), enclave ${enclave.toFixed(0).padStart(3)}  non-2xx ${r.non2xx}`,
      );
      return { rate, cpu: perRequest, main, others, enclave };
    };
    // A warm-up, then off and on in turn, ROUNDS times in short runs (the machine is shared: a pair's ratio is taken
    // between two runs seconds apart, and the order inside a pair alternates so that a drift does not favour one).
    await run('warm-up (permissions off)', keys.off);
    await run('warm-up (permissions on)', keys.policy);
    const pairs: Array<{ off: Run; on: Run }> = [];
    for (let round = 0; round < ROUNDS; round++) {
      const runOff = () => run(`[${round + 1}/${ROUNDS}] permissions off`, keys.off);
      const runOn = () => run(`[${round + 1}/${ROUNDS}] permissions on, 1 policy x 10 rules`, keys.policy);
      if (round % 2 === 0) {
        const off = await runOff();
        pairs.push({ off, on: await runOn() });
      } else {
        const on = await runOn();
        pairs.push({ off: await runOff(), on });
      }
    }
    await run('permissions on, no policy', keys.noPolicy);
    const sum = (xs: number[]) => xs.reduce((x, y) => x + y, 0);
    const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
    const spread = (label: string, xs: number[]) => {
      const q = quantiles(xs);
      console.log(
        `${label.padEnd(44)} median ${pct(q.median)}  quartiles ${pct(q.q1)}–${pct(q.q3)}  range ${pct(q.min)}–${pct(q.max)}  (${xs.length} pairs)`,
      );
    };
    console.log(`load average ${os.loadavg()[0]!.toFixed(2)} (1 min) at the end`);
    spread(
      'on / off, rate',
      pairs.map((p) => p.on.rate / p.off.rate),
    );
    spread(
      'on / off, CPU per request (API + load)',
      pairs.map((p) => p.on.cpu / p.off.cpu),
    );
    const medianOf = (f: (r: Run) => number, which: 'on' | 'off') => quantiles(pairs.map((p) => f(p[which]))).median;
    for (const [name, f] of [
      ['API + load', (r: Run) => r.cpu],
      ['main thread', (r: Run) => r.main],
      ['other threads', (r: Run) => r.others],
      ['enclave child', (r: Run) => r.enclave],
    ] as const) {
      const off = medianOf(f, 'off');
      const on = medianOf(f, 'on');
      console.log(
        `CPU per request, ${name.padEnd(14)} median off ${off.toFixed(0).padStart(4)} µs, on ${on.toFixed(0).padStart(4)} µs (${on - off >= 0 ? '+' : ''}${(on - off).toFixed(0)})`,
      );
    }
    console.log(
      `on / off over all runs: ${pct(sum(pairs.map((p) => p.on.rate)) / sum(pairs.map((p) => p.off.rate)))} of the rate; CPU per request ${pct(sum(pairs.map((p) => p.on.cpu)) / sum(pairs.map((p) => p.off.cpu)))}`,
    );
  } finally {
    await svc.stop();
  }
}
