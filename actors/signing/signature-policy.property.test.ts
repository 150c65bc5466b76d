/**
 * Properties of the decision point's spend reservations (POLICIES.md §4) over the real store (ledger, decision log,
 * writer) and validated cap policies (fast-check, fc.commands): random sequences of new requests, replays of the same
 * spendRef (an identical body, a payment's replacement), bursts of concurrent requests, releases, and a fake clock
 * moving across windows, against a model that decides each request in the order it was sent. What is checked:
 * - never overspend: in every window of every cap, what the ledger counts stays within the cap;
 * - the gate answers exactly what the model answers (so the property above is not met by refusing everything), and a
 *   replay never adds to the ledger while its first reservation is not released;
 * - what the store's windows count equals the model's unreleased entries counted in [start, end).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { extractEvmTransactionFacts } from '../../chains/evm/extract-evm-transaction-facts.ts';
import { createStore, type Store } from '../../store/index.ts';
import type { ActivePolicy } from './policy/evaluate-policies.ts';
import type { KeyPermissions, PolicySource } from './policy/policy-ports.ts';
import { validatePolicy } from './policy/validate-policy.ts';
import { createSignatureGate, holdsNotWired, type SignatureRequest } from './signature-policy.ts';

const ALICE = '0x1111111111111111111111111111111111111111';
const NETWORK = 'eip155:1';
const WALLETS = ['w-1', 'w-2'] as const;
/** Window lengths (ms), short so that the fake clock crosses many of them in one sequence. */
const WINDOWS = [7, 30, 100] as const;
const T0 = Date.UTC(2026, 0, 1);

type Op = 'gt' | 'gte';
interface Cap {
  windowMs: (typeof WINDOWS)[number];
  op: Op;
  limit: bigint;
}

/** The key's switch on, and its one active guardrail: a deny rule per cap on native spend in a window. */
class CapPolicies implements PolicySource {
  readonly active: ActivePolicy[];
  constructor(caps: Cap[]) {
    const checked = validatePolicy({
      name: 'caps',
      layer: 'guardrail',
      scope: { walletType: 'EVM', networks: [NETWORK] },
      rules: caps.map((c, i) => ({
        id: `cap-${i}`,
        effect: 'deny',
        actions: ['sign_transaction'],
        conditions: [{ spend: { asset: 'native', window: `${c.windowMs}ms` }, op: c.op, value: c.limit.toString() }],
      })),
    });
    assert.ok(checked.valid, JSON.stringify(!checked.valid && checked.errors));
    this.active = [{ id: 'caps', version: 1, createdAt: 1, document: checked.policy }];
  }
  permissions(): KeyPermissions {
    return { enabled: true, approvals: false };
  }
  activeGuardrails(): ActivePolicy[] {
    return this.active;
  }
}

/**
 * A request's name, fixed when it is first sent: a payment (its transaction id is the spendRef, its replacements are
 * decided again under it) or a sign request with an Idempotency-Key (its reference is the spendRef, a replay is the
 * identical body again). Either way, a replay has the same wallet and amount.
 */
interface Ref {
  spendRef: string;
  kind: 'payment' | 'keyed';
  wallet: (typeof WALLETS)[number];
  amount: bigint;
}

interface Entry {
  wallet: string;
  amount: bigint;
  countedAt: number;
  released: boolean;
}

class Model {
  now: number;
  refs: Ref[] = [];
  /** The ledger by spendRef (one network and asset here). */
  entries = new Map<string, Entry>();
  constructor(
    readonly caps: Cap[],
    start: number,
  ) {
    this.now = start;
  }
  counted(wallet: string, start: number, windowMs: number): bigint {
    let sum = 0n;
    for (const e of this.entries.values()) {
      if (!e.released && e.wallet === wallet && e.countedAt >= start && e.countedAt < start + windowMs) sum += e.amount;
    }
    return sum;
  }
  /** POLICIES.md §4: the request's own amount, counted already by a replay, is not counted twice. */
  decide(ref: Ref): 'allow' | 'deny' {
    const own = this.entries.get(ref.spendRef);
    for (const cap of this.caps) {
      const start = Math.floor(this.now / cap.windowMs) * cap.windowMs;
      let total = this.counted(ref.wallet, start, cap.windowMs);
      if (own && !own.released && own.countedAt >= start && own.countedAt < start + cap.windowMs) {
        total = total > own.amount ? total - own.amount : 0n;
      }
      const after = total + ref.amount;
      if (cap.op === 'gt' ? after > cap.limit : after >= cap.limit) return 'deny';
    }
    if (ref.amount > 0n && !(own && !own.released)) {
      this.entries.set(ref.spendRef, { wallet: ref.wallet, amount: ref.amount, countedAt: this.now, released: false });
    }
    return 'allow';
  }
}

let store: Store;
before(() => {
  store = createStore(':memory:');
});
after(() => store.close());

interface Real {
  key: string;
  gate: ReturnType<typeof createSignatureGate>;
  clock: { now: number };
}

let serial = 0;

function requestOf(ref: Ref, key: string): SignatureRequest {
  const facts = extractEvmTransactionFacts({ chainId: 1, to: ALICE, value: ref.amount });
  const base = {
    principal: { keyId: key, projectId: 'p-1', environment: 'development' as const },
    wallet: { id: ref.wallet, type: 'EVM' as const, projectId: 'p-1' },
    operation: 'sign-transaction' as const,
    rawSignature: false,
    chainId: '1',
    facts: () => facts,
  };
  return ref.kind === 'payment'
    ? { ...base, spendRef: ref.spendRef }
    : {
        ...base,
        reference: {
          idempotencyKey: ref.spendRef.slice('key:'.length),
          route: 'sign-transaction',
          bodyHash: () => `${ref.wallet}:${ref.amount}`,
        },
      };
}

/** Never overspend, and the store's windows agree with the model's ledger. */
function checkLedger(m: Model, r: Real) {
  const entries = store.spend.entriesBetween(r.key, 0, Number.MAX_SAFE_INTEGER);
  for (const cap of m.caps) {
    const sums = new Map<string, bigint>();
    for (const e of entries) {
      if (e.releasedAt !== null) continue;
      const id = `${e.walletId}@${Math.floor(e.countedAt / cap.windowMs) * cap.windowMs}`;
      sums.set(id, (sums.get(id) ?? 0n) + BigInt(e.amount));
    }
    for (const [id, sum] of sums) {
      assert.ok(
        cap.op === 'gt' ? sum <= cap.limit : sum < cap.limit,
        `window ${id} of ${cap.windowMs}ms counts ${sum}`,
      );
    }
    for (const wallet of WALLETS) {
      const start = Math.floor(m.now / cap.windowMs) * cap.windowMs;
      const w = { apiKeyId: r.key, walletId: wallet, network: NETWORK, asset: 'native', windowMs: cap.windowMs };
      assert.equal(
        store.spend.windowTotal({ ...w, windowStart: start }, { materialize: false }),
        m.counted(wallet, start, cap.windowMs),
        `${wallet}, ${cap.windowMs}ms window at ${start - T0}`,
      );
    }
  }
  const unreleased = entries.filter((e) => e.releasedAt === null).map((e) => e.spendRef);
  assert.equal(new Set(unreleased).size, unreleased.length, 'a spendRef counts at most once');
  assert.deepEqual(
    unreleased.sort(),
    [...m.entries]
      .filter(([, e]) => !e.released)
      .map(([ref]) => ref)
      .sort(),
  );
}

type Cmd = fc.AsyncCommand<Model, Real>;

/** What a request names: a new one (kind, wallet, amount), or the replay of one sent before (by index). */
type Pick = { replay: number } | { kind: Ref['kind']; wallet: (typeof WALLETS)[number]; amount: bigint };

function refOf(m: Model, pick: Pick): Ref {
  if ('replay' in pick && m.refs.length > 0) return m.refs[pick.replay % m.refs.length]!;
  // A replay before anything was sent is a new keyed request.
  const fresh: Pick = 'replay' in pick ? { kind: 'keyed', wallet: 'w-1', amount: BigInt(pick.replay % 7) } : pick;
  const n = m.refs.length + 1;
  const ref: Ref = {
    spendRef: fresh.kind === 'payment' ? `tx-${n}` : `key:k-${n}`,
    kind: fresh.kind,
    wallet: fresh.wallet,
    amount: fresh.amount,
  };
  m.refs.push(ref);
  return ref;
}

const showPick = (p: Pick) => ('replay' in p ? `replay#${p.replay}` : `${p.kind}(${p.wallet},${p.amount})`);

/** One request, decided alone: through `decide` (its own transaction), or `decideWithin` a payment's admission. */
class Decide implements Cmd {
  constructor(
    readonly pick: Pick,
    readonly within: boolean,
  ) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const ref = refOf(m, this.pick);
    const request = requestOf(ref, r.key);
    const got = this.within
      ? await store.writer.write(() => r.gate.decideWithin(request))
      : await r.gate.decide(request);
    assert.equal(got.effect, m.decide(ref), `${ref.spendRef} (${ref.wallet}, ${ref.amount})`);
    checkLedger(m, r);
  }
  toString() {
    return `decide${this.within ? 'Within' : ''}(${showPick(this.pick)})`;
  }
}

/** Requests sent at once (new ones and replays mixed): the writer decides them one after the other. */
class Burst implements Cmd {
  constructor(readonly picks: Pick[]) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const refs = this.picks.map((p) => refOf(m, p));
    const got = await Promise.all(refs.map((ref) => r.gate.decide(requestOf(ref, r.key))));
    const expected = refs.map((ref) => m.decide(ref));
    assert.deepEqual(
      got.map((d) => d.effect),
      expected,
    );
    checkLedger(m, r);
  }
  toString() {
    return `burst(${this.picks.map(showPick).join(',')})`;
  }
}

/** No usable signature of a request exists (a payment stopped before signing): what it counted is released. */
class Release implements Cmd {
  constructor(readonly index: number) {}
  check = (m: Readonly<Model>) => m.refs.length > 0;
  async run(m: Model, r: Real) {
    const ref = m.refs[this.index % m.refs.length]!;
    await store.writer.write(() => store.spend.release(r.key, ref.spendRef, m.now));
    const e = m.entries.get(ref.spendRef);
    if (e) e.released = true;
    checkLedger(m, r);
  }
  toString() {
    return `release#${this.index}`;
  }
}

class Advance implements Cmd {
  constructor(readonly ms: number) {}
  check = () => true;
  async run(m: Model, r: Real) {
    m.now += this.ms;
    r.clock.now = m.now;
    checkLedger(m, r);
  }
  toString() {
    return `advance(${this.ms})`;
  }
}

const pick: fc.Arbitrary<Pick> = fc.oneof(
  fc.record({ replay: fc.nat(20) }),
  fc.record({
    kind: fc.constantFrom<Ref['kind']>('payment', 'keyed'),
    wallet: fc.constantFrom(...WALLETS),
    amount: fc.oneof({ weight: 1, arbitrary: fc.constant(0n) }, { weight: 6, arbitrary: fc.bigInt(1n, 8n) }),
  }),
);

const commands = fc.commands(
  [
    fc.tuple(pick, fc.boolean()).map(([p, within]) => new Decide(p, within)),
    fc.array(pick, { minLength: 2, maxLength: 12 }).map((picks) => new Burst(picks)),
    fc.nat(20).map((i) => new Release(i)),
    fc.integer({ min: 0, max: 40 }).map((ms) => new Advance(ms)),
  ],
  { size: '+1', maxCommands: 40 },
);

const caps = fc.array(
  fc.record({
    windowMs: fc.constantFrom(...WINDOWS),
    op: fc.constantFrom<Op>('gt', 'gte'),
    limit: fc.bigInt(0n, 20n),
  }),
  { minLength: 1, maxLength: 2 },
);

describe('the decision point over the spend ledger: properties', () => {
  it('never overspends a cap, answers what a sequential model answers, and counts a spendRef at most once', async () => {
    let allowed = 0;
    let denied = 0;
    await fc.assert(
      fc.asyncProperty(caps, commands, fc.nat(99), async (capList, cmds, offset) => {
        const key = `key-${++serial}`;
        const clock = { now: T0 + offset };
        const gate = createSignatureGate({
          policies: new CapPolicies(capList),
          holds: holdsNotWired,
          spend: store.spend,
          decisions: store.policyDecisions,
          writer: store.writer,
          now: () => clock.now,
        });
        const model = new Model(capList, clock.now);
        const decide = model.decide.bind(model);
        model.decide = (ref) => {
          const d = decide(ref);
          if (d === 'allow') allowed++;
          else denied++;
          return d;
        };
        try {
          await fc.asyncModelRun(() => ({ model, real: { key, gate, clock } }), cmds);
        } finally {
          await gate.flush();
        }
      }),
      { numRuns: 100 },
    );
    // Both answers were exercised, so neither "allow everything" nor "deny everything" could pass.
    assert.ok(allowed > 200 && denied > 200, `allowed ${allowed}, denied ${denied}`);
  });
});
