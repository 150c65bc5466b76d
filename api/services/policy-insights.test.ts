/**
 * Usage meters and shadow mode over a real store: decisions taken by the real decision point (so the log holds what it
 * writes), policies supplied through in-memory ports.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, test } from 'node:test';
import type { ActivePolicy } from '../../actors/signing/policy/evaluate-policies.ts';
import type { HoldResolver, PolicySource } from '../../actors/signing/policy/policy-ports.ts';
import type { PolicyReader, StoredPolicy } from '../../actors/signing/policy/policy-reader.ts';
import { validatePolicy } from '../../actors/signing/policy/validate-policy.ts';
import { createSignatureGate, type SignatureRequest } from '../../actors/signing/signature-policy.ts';
import { extractEvmTransactionFacts } from '../../chains/evm/extract-evm-transaction-facts.ts';
import { createStore, type Store } from '../../store/index.ts';
import { createPolicyInsights } from './policy-insights.ts';

const KEY = 'key-1';
const PROJECT = 'p-1';
const ALICE = '0x1111111111111111111111111111111111111111';
const BOB = '0x2222222222222222222222222222222222222222';
const ETH = 10n ** 18n;
const DAY = 86_400_000;
const T0 = Date.UTC(2026, 0, 2, 10);

/** Policies by id and version; the active set is what the decision point reads. */
class Policies implements PolicySource, PolicyReader {
  versions = new Map<string, StoredPolicy[]>();
  active = new Set<string>();
  permissions() {
    return { enabled: true, approvals: false };
  }
  activeGuardrails(): ActivePolicy[] {
    return [...this.active].map((id) => {
      const p = this.versions.get(id)!.at(-1)!;
      return { id, version: p.version, createdAt: p.createdAt, document: p.document };
    });
  }
  policyAt(_key: string, id: string) {
    return this.versions.get(id)?.at(-1);
  }
  versionOf(_key: string, id: string, version: number) {
    return this.versions.get(id)?.find((p) => p.version === version);
  }
  /** Writes the next version of `id` (a draft unless activated). */
  put(id: string, doc: Record<string, unknown>, status: 'draft' | 'active' = 'draft'): void {
    const checked = validatePolicy({ name: id, layer: 'guardrail', ...doc });
    assert.ok(checked.valid, JSON.stringify(!checked.valid && checked.errors));
    const list = this.versions.get(id) ?? [];
    list.push({
      id,
      status,
      version: list.length + 1,
      createdAt: list[0]?.createdAt ?? this.versions.size + 1,
      document: checked.policy,
    });
    this.versions.set(id, list);
    if (status === 'active') this.active.add(id);
  }
}

const noHolds: HoldResolver = {
  checkReference: () => undefined,
  resolve: () => ({ kind: 'required', reviewId: 'r', status: 'pending', expiresAt: '2026-01-03T00:00:00Z' }),
};

let store: Store;
let policies: Policies;
let now = T0;
let gate: ReturnType<typeof createSignatureGate>;
let insights: ReturnType<typeof createPolicyInsights>;
const principal = { keyId: KEY, projectId: PROJECT, environment: 'development' as const };

beforeEach(() => {
  store = createStore(':memory:');
  store.sqlite
    .prepare(`insert into projects (id, name, plan, created_at) values (?, 'p', 'starter', '2026-01-01T00:00:00Z')`)
    .run(PROJECT);
  for (const [id, claimedBy] of [
    ['w-1', null],
    ['w-2', 'user-7'],
  ] as const) {
    store.sqlite
      .prepare(
        `insert into wallets (id, project_id, type, scheme, status, address, public_key, user_identifier,
          user_identifier_type, claimed_at, claimed_by_user_id, created_at, updated_at, seq)
         values (?, ?, 'EVM', 'DKLS', 'ready', ?, '00', ?, 'EMAIL', ?, ?, '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z', ?)`,
      )
      .run(id, PROJECT, ALICE, `${id}@x`, claimedBy ? '2026-01-01T00:00:00Z' : null, claimedBy, id === 'w-1' ? 1 : 2);
  }
  policies = new Policies();
  now = T0;
  gate = createSignatureGate({
    policies,
    holds: noHolds,
    spend: store.spend,
    decisions: store.policyDecisions,
    writer: store.writer,
    now: () => now,
  });
  insights = createPolicyInsights({ store, policies, now: () => now });
});
afterEach(() => store.close());

let n = 0;
function send(to: string, value: bigint, walletId = 'w-1'): Promise<string> {
  const hash = `h${++n}`;
  const request: SignatureRequest = {
    principal,
    wallet: { id: walletId, type: 'EVM', projectId: PROJECT },
    operation: 'sign-transaction',
    rawSignature: false,
    chainId: '1',
    facts: () => extractEvmTransactionFacts({ chainId: 1, to, value }),
    reference: { idempotencyKey: null, route: 'sign-transaction', bodyHash: () => hash },
  };
  return Promise.resolve(gate.decide(request)).then((d) => d.effect);
}

const cap = (limit: bigint) => ({
  scope: { walletType: 'EVM', networks: ['eip155:1'] },
  rules: [
    {
      id: 'daily',
      effect: 'deny',
      actions: ['sign_transaction'],
      conditions: [{ spend: { asset: 'native', window: '24h' }, op: 'gt', value: limit.toString() }],
    },
  ],
});

describe('usage', () => {
  test('each spend condition as a meter: used in the current window, the limit, the epoch-aligned reset', async () => {
    policies.put('cap', cap(5n * ETH), 'active');
    assert.equal(await send(ALICE, 2n * ETH), 'allow');
    assert.equal(await send(ALICE, ETH), 'allow');
    assert.deepEqual(insights.usage(principal, 'w-1', 'cap'), {
      meters: [
        {
          ruleId: 'daily',
          asset: 'native',
          window: '24h',
          limit: (5n * ETH).toString(),
          used: (3n * ETH).toString(),
          resetsAt: '2026-01-03T00:00:00.000Z',
        },
      ],
    });
    // Another network counts apart; the next day starts from zero.
    assert.equal(insights.usage(principal, 'w-1', 'cap', 'eip155:8453').meters[0]!.used, '0');
    now = T0 + DAY;
    assert.equal(insights.usage(principal, 'w-1', 'cap').meters[0]!.used, '0');
  });

  test('errors: a missing policy, a foreign wallet, a network of another type, a user who did not claim it', () => {
    policies.put('cap', cap(ETH), 'active');
    assert.throws(() => insights.usage(principal, 'w-1', 'nope'), { code: 'POLICY_NOT_FOUND', httpStatus: 404 });
    assert.throws(() => insights.usage(principal, 'w-9', 'cap'), { code: 'WALLET_NOT_FOUND' });
    assert.throws(() => insights.usage(principal, 'w-1', 'cap', 'solana:mainnet'), { code: 'INVALID_REQUEST' });
    assert.throws(() => insights.userUsage(principal, 'user-7', 'cap', 'w-1'), { code: 'WALLET_NOT_FOUND' });
    assert.equal(insights.userUsage(principal, 'user-7', 'cap', 'w-2').meters.length, 1);
  });
});

describe('simulate (shadow mode)', () => {
  test('counts what a draft would have denied over logged traffic, beside the versions then active', async () => {
    policies.put(
      'open',
      { scope: { walletType: 'EVM' }, rules: [{ id: 'any', effect: 'allow', actions: ['sign_transaction'] }] },
      'active',
    );
    for (const v of [1n, 2n, 3n]) {
      now += 1000;
      assert.equal(await send(ALICE, v * ETH), 'allow');
    }
    now += 1000;
    assert.equal(await send(BOB, ETH), 'allow');
    // A draft: a daily cap of 4 ETH, and no sending to BOB.
    policies.put('draft', {
      scope: { walletType: 'EVM', networks: ['eip155:1'] },
      rules: [
        {
          id: 'cap',
          effect: 'deny',
          actions: ['sign_transaction'],
          conditions: [{ spend: { asset: 'native', window: '24h' }, op: 'gt', value: (4n * ETH).toString() }],
        },
        {
          id: 'no-bob',
          effect: 'deny',
          actions: ['sign_transaction'],
          conditions: [{ fact: 'to', op: 'eq', value: BOB }],
        },
      ],
    });
    const r = insights.simulate(principal, 'draft', {
      from: new Date(T0).toISOString(),
      to: new Date(T0 + DAY).toISOString(),
    });
    assert.equal(r.evaluated, 4);
    // 1 + 2 = 3 allowed; 3 more would make 6 > 4: denied (and not counted); BOB: denied by rule.
    assert.equal(r.wouldDeny, 2);
    assert.equal(r.wouldRequireApproval, 0);
    assert.equal(r.changed, 2);
    assert.deepEqual(
      r.items.map((i) => [i.actual.effect, i.simulated.effect, i.simulated.ruleId]),
      [
        ['allow', 'deny', 'cap'],
        ['allow', 'deny', 'no-bob'],
      ],
    );
    // Nothing was written by the simulation.
    assert.equal(store.policyDecisions.between(KEY, 0, Number.MAX_SAFE_INTEGER, 100).length, 4);
  });

  test('a next version of an active policy replaces its own version in the replay; spend before the span counts', async () => {
    policies.put('cap', cap(10n * ETH), 'active');
    assert.equal(await send(ALICE, 3n * ETH), 'allow');
    const from = now + 1;
    now += 60_000;
    assert.equal(await send(ALICE, 3n * ETH), 'allow');
    // The next version lowers the cap to 5: the 3 before the span plus these 3 would be over it.
    policies.put('cap', cap(5n * ETH));
    const r = insights.simulate(principal, 'cap', {
      from: new Date(from).toISOString(),
      to: new Date(from + DAY).toISOString(),
    });
    assert.equal(r.evaluated, 1);
    assert.equal(r.wouldDeny, 1);
    assert.equal(r.items[0]!.simulated.reason, 'denied-by-rule');
  });

  test('a span that is empty or backwards', () => {
    policies.put('cap', cap(ETH));
    const iso = (t: number) => new Date(t).toISOString();
    assert.deepEqual(insights.simulate(principal, 'cap', { from: iso(T0), to: iso(T0 + 1) }).evaluated, 0);
    assert.throws(() => insights.simulate(principal, 'cap', { from: iso(T0), to: iso(T0) }), {
      code: 'INVALID_REQUEST',
    });
    assert.throws(() => insights.simulate(principal, 'cap', { from: iso(T0), to: iso(T0 + 40 * DAY) }), {
      code: 'INVALID_REQUEST',
    });
  });
});
