/**
 * Properties of the policy engine over generated documents and requests (fast-check): evaluation never throws on a
 * valid document and any request; a deny rule never lets through what it matches; allow rules only ever widen a
 * boundary that exists; the decision does not depend on the order policies are handed over; and the three-valued
 * logic agrees with a plain reference implementation of Kleene's logic.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  ANY_NETWORK,
  type ChainFacts,
  DENIAL_REASONS,
  EVM_CASE_INSENSITIVE_FACTS,
  FACTS_BY_WALLET_TYPE,
  type FactName,
  INTEGER_FACTS,
  type RequestAction,
  WALLET_FACTS,
} from '../../../chains/domain/policies.ts';
import type { WalletType } from '../../../chains/domain/wallets.ts';
import {
  type ActivePolicy,
  evaluatePolicies,
  type PolicyRequest,
  type SpendKey,
  spendWindows,
} from './evaluate-policies.ts';
import { actionsOfWalletType } from './policy-actions.ts';
import { validatePolicy } from './validate-policy.ts';

// biome-ignore lint/suspicious/noExplicitAny: generated policy documents are free-form JSON
type Doc = Record<string, any>;

const TYPES = ['EVM', 'SOLANA', 'STELLAR', 'COSMOS', 'SUI'] as const satisfies readonly WalletType[];
const WALLETS = ['w-1', 'w-2'];
const NETWORKS: Record<WalletType, string[]> = {
  EVM: ['eip155:1', 'eip155:8453'],
  SOLANA: ['solana:mainnet', 'solana:devnet'],
  STELLAR: ['stellar:pubnet', 'stellar:testnet'],
  COSMOS: ['cosmos:cosmoshub-4', 'cosmos:osmosis-1'],
  SUI: ['sui'],
};
const TOKEN = '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48';
const ASSETS: Record<WalletType, string[]> = {
  EVM: ['native', TOKEN, TOKEN.toLowerCase()],
  SOLANA: ['native', 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v'],
  STELLAR: ['native', `USDC:G${'A'.repeat(55)}`],
  COSMOS: ['native', 'uatom'],
  SUI: ['native'],
};
/** Strings conditions compare and requests carry: addresses in both cases, assets, networks, ids, selectors. */
const STRINGS = [
  '0x1111111111111111111111111111111111111111',
  '0xAbCd000000000000000000000000000000000001',
  '0xabcd000000000000000000000000000000000001',
  TOKEN,
  'native',
  'eip155:1',
  'solana:mainnet',
  'w-1',
  'w-2',
  'EVM',
  'SOLANA',
  '0xa9059cbb',
  '0x',
];
const INTEGERS = ['0', '1', '2', '5', '10', '20', '1000'];
const INTEGER_FACT_SET: ReadonlySet<string> = new Set(INTEGER_FACTS);
const FOLDED: ReadonlySet<string> = new Set(EVM_CASE_INSENSITIVE_FACTS);
const WINDOWS = ['1ms', '30m', '1h', '24h', '7d'];

const integer = fc.constantFrom(...INTEGERS);

function leafOf(type: WalletType, raw: boolean, withSpend = !raw): fc.Arbitrary<Doc> {
  const facts = raw ? [...WALLET_FACTS] : [...FACTS_BY_WALLET_TYPE[type]];
  const factLeaf = fc.constantFrom(...facts).chain((fact) => {
    const values = INTEGER_FACT_SET.has(fact) ? integer : fc.constantFrom(...STRINGS);
    const ops: fc.Arbitrary<Doc>[] = [
      fc.record({ fact: fc.constant(fact), op: fc.constantFrom('eq', 'ne'), value: values }),
      fc.record({
        fact: fc.constant(fact),
        op: fc.constantFrom('in', 'not_in'),
        value: fc.array(values, { minLength: 1, maxLength: 3 }),
      }),
    ];
    if (INTEGER_FACT_SET.has(fact)) {
      ops.push(fc.record({ fact: fc.constant(fact), op: fc.constantFrom('lt', 'lte', 'gt', 'gte'), value: integer }));
    }
    return fc.oneof(...ops);
  });
  if (!withSpend) return factLeaf;
  const spendLeaf = fc.record({
    spend: fc.record({ asset: fc.constantFrom(...ASSETS[type]), window: fc.constantFrom(...WINDOWS) }),
    op: fc.constantFrom('lt', 'lte', 'gt', 'gte'),
    value: integer,
  });
  return fc.oneof(factLeaf, spendLeaf);
}

function conditionOf(type: WalletType, raw: boolean, withSpend = !raw): fc.Arbitrary<Doc> {
  const leaf = leafOf(type, raw, withSpend);
  return fc.letrec<{ node: Doc }>((tie) => ({
    node: fc.oneof(
      { maxDepth: 3, depthIdentifier: `condition-${type}-${raw}-${withSpend}` },
      leaf,
      fc.record({ all: fc.array(tie('node'), { minLength: 1, maxLength: 3 }) }),
      fc.record({ any: fc.array(tie('node'), { minLength: 1, maxLength: 3 }) }),
      fc.record({ not: tie('node') }),
    ),
  })).node;
}

function ruleOf(type: WalletType, id: string, effect?: string): fc.Arbitrary<Doc> {
  const possible = [...actionsOfWalletType(type)];
  return fc
    .record({
      effect: effect ? fc.constant(effect) : fc.constantFrom('allow', 'deny', 'require_approval'),
      actions: fc.oneof(fc.constant(['all']), fc.subarray(possible, { minLength: 1 })),
      approval: fc.option(fc.constant({ stages: [{ role: 'approver', threshold: 2 }] }), { nil: undefined }),
      seed: fc.nat(),
    })
    .chain(({ effect: e, actions, approval, seed }) => {
      const finalActions = e === 'allow' && actions[0] === 'all' ? [possible[seed % possible.length]] : actions;
      const raw = (finalActions as string[]).includes('raw_signature');
      return fc.array(conditionOf(type, raw), { maxLength: 3 }).map((conditions) => ({
        id,
        effect: e,
        actions: finalActions,
        ...(conditions.length > 0 ? { conditions } : {}),
        ...(e === 'require_approval' && approval ? { approval } : {}),
      }));
    });
}

function documentOf(type: WalletType): fc.Arbitrary<Doc> {
  return fc
    .record({
      walletIds: fc.option(fc.subarray(WALLETS, { minLength: 1 }), { nil: undefined }),
      networks: fc.option(fc.subarray(NETWORKS[type], { minLength: 1 }), { nil: undefined }),
      count: fc.integer({ min: 1, max: 4 }),
    })
    .chain(({ walletIds, networks, count }) =>
      fc.tuple(...Array.from({ length: count }, (_, i) => ruleOf(type, `r${i}`))).map((rules) => ({
        name: 'generated',
        layer: 'guardrail',
        scope: { walletType: type, ...(walletIds ? { walletIds } : {}), ...(networks ? { networks } : {}) },
        rules,
      })),
    );
}

let serial = 0;
function active(doc: Doc, createdAt: number): ActivePolicy {
  const checked = validatePolicy(doc);
  if (!checked.valid) assert.fail(`generated an invalid document: ${JSON.stringify(checked.errors)}`);
  return { id: `p${++serial}`, version: 1, createdAt, document: checked.policy };
}

const policiesOf = (type: WalletType) =>
  fc.array(
    fc.tuple(fc.oneof(documentOf(type), documentOf(TYPES[(TYPES.indexOf(type) + 1) % TYPES.length]!)), fc.nat(5)),
    { maxLength: 4 },
  );

function requestOf(type: WalletType): fc.Arbitrary<PolicyRequest> {
  const names = FACTS_BY_WALLET_TYPE[type].filter((f) => f !== 'wallet.id' && f !== 'wallet.type' && f !== 'network');
  const factValue = (name: FactName) =>
    INTEGER_FACT_SET.has(name)
      ? fc.constantFrom(...INTEGERS, '007', '1e3', '-1', '', (2n ** 256n).toString())
      : fc.constantFrom(...STRINGS);
  const facts = fc.record(Object.fromEntries(names.map((n) => [n, factValue(n)])), {
    requiredKeys: [],
  }) as fc.Arbitrary<ChainFacts['facts']>;
  const moved = fc.array(
    fc.record({ asset: fc.constantFrom(...ASSETS[type]), amount: fc.constantFrom(...INTEGERS, 'x') }),
    { maxLength: 3 },
  );
  return fc.record({
    wallet: fc.record({ id: fc.constantFrom(...WALLETS), type: fc.constant(type) }),
    action: fc.constantFrom(
      ...([...actionsOfWalletType(type)].filter((a) => a !== 'raw_signature') as RequestAction[]),
    ),
    rawSignature: fc.boolean(),
    chain: fc.record({
      network: fc.constantFrom<string | null>(...NETWORKS[type], 'eip155:10', null, ANY_NETWORK),
      facts,
      spend: fc.record({ moved, complete: fc.boolean() }),
    }),
    at: fc.oneof(
      fc.integer({ min: 0, max: 4_000_000_000_000 }),
      fc.constantFrom(Number.NaN, -1, Number.POSITIVE_INFINITY, 0),
    ),
  });
}

/** What a window counted: any deterministic function of its key. */
function ledger(key: SpendKey): bigint {
  let h = 0;
  for (const c of `${key.policyId}|${key.ruleId}|${key.asset}|${key.window}|${key.windowStart}`) {
    h = (h * 31 + c.charCodeAt(0)) | 0;
  }
  return BigInt(Math.abs(h) % 25);
}

const scenario = fc
  .constantFrom(...TYPES)
  .chain((type) => fc.record({ type: fc.constant(type), policies: policiesOf(type), request: requestOf(type) }));

const toActive = (policies: Array<[Doc, number]>) => policies.map(([doc, age]) => active(doc, age));

const DENYING: ReadonlySet<string> = new Set(['denied-by-rule', 'fact-unavailable']);

describe('evaluatePolicies: properties', () => {
  it('never throws on valid documents and any request, and answers a well-formed decision', () => {
    fc.assert(
      fc.property(scenario, ({ policies, request }) => {
        const decision = evaluatePolicies(toActive(policies), request, ledger);
        assert.ok(['allow', 'deny', 'hold'].includes(decision.effect));
        if (decision.effect === 'deny') assert.ok((DENIAL_REASONS as readonly string[]).includes(decision.reason));
        JSON.stringify(decision.trace);
        if (decision.effect !== 'deny') {
          for (const r of decision.reservations) assert.ok(r.amount > 0n && r.windowStart % 1 === 0);
        }
      }),
      { numRuns: 400 },
    );
  });

  it('a deny rule never lets through what it matches, whatever other policies exist', () => {
    const withDeny = scenario.chain((s) =>
      fc.record({
        s: fc.constant(s),
        deny: ruleOf(s.type, 'deny', 'deny').map((rule) => ({
          name: 'deny',
          layer: 'guardrail',
          scope: { walletType: s.type },
          rules: [rule],
        })),
        age: fc.nat(5),
      }),
    );
    let matched = 0;
    fc.assert(
      fc.property(withDeny, ({ s, deny, age }) => {
        const q = active(deny, age);
        const alone = evaluatePolicies([q], s.request, ledger);
        if (alone.effect !== 'deny' || !DENYING.has(alone.reason)) return;
        matched++;
        const all = evaluatePolicies([...toActive(s.policies), q], s.request, ledger);
        assert.equal(all.effect, 'deny');
        assert.ok(all.effect === 'deny' && DENYING.has(all.reason), JSON.stringify(all));
      }),
      { numRuns: 400 },
    );
    assert.ok(matched > 50, `only ${matched} generated deny rules matched their request`);
  });

  it('adding an allow rule never turns an allow into a deny where it draws no new boundary, nor when it holds', () => {
    const withAllow = scenario.chain((s) =>
      fc.record({
        s: fc.constant(s),
        rule: ruleOf(s.type, 'added', 'allow'),
        index: fc.nat(),
        holds: fc.boolean(),
      }),
    );
    let checked = 0;
    fc.assert(
      fc.property(withAllow, ({ s, rule, index, holds }) => {
        // The rule is added to a policy of the request's wallet type (another type's could not hold it).
        const candidates = s.policies.flatMap(([doc], j) => (doc.scope.walletType === s.type ? [j] : []));
        if (candidates.length === 0) return;
        const before = toActive(s.policies);
        if (evaluatePolicies(before, s.request, ledger).effect !== 'allow') return;
        const i = candidates[index % candidates.length]!;
        const [doc, age] = s.policies[i]!;
        const action = s.request.action;
        // A rule that holds: no conditions, and the request's action.
        const added = holds
          ? { ...rule, actions: [...new Set([...rule.actions, action])], conditions: undefined }
          : rule;
        const widensOnly =
          holds ||
          !added.actions.includes(action) ||
          doc.rules.some((r: Doc) => r.effect === 'allow' && r.actions.includes(action));
        if (!widensOnly || doc.rules.length >= 50) return;
        const changed = { ...doc, rules: [...doc.rules, JSON.parse(JSON.stringify(added))] };
        const after = before.map((p, j) => (j === i ? { ...active(changed, age), id: p.id } : p));
        checked++;
        assert.equal(evaluatePolicies(after, s.request, ledger).effect, 'allow');
      }),
      { numRuns: 600 },
    );
    assert.ok(checked > 30, `only ${checked} cases exercised`);
  });

  it('reads only windows spendWindows lists, and reserves only in them', () => {
    fc.assert(
      fc.property(scenario, ({ policies, request }) => {
        const list = toActive(policies);
        const listed = new Set(spendWindows(list, request).map((key) => JSON.stringify(key)));
        const asked: SpendKey[] = [];
        const decision = evaluatePolicies(list, request, (key) => {
          asked.push(key);
          return ledger(key);
        });
        for (const key of asked) assert.ok(listed.has(JSON.stringify(key)), JSON.stringify(key));
        if (decision.effect !== 'deny') {
          for (const { amount: _amount, ...key } of decision.reservations) {
            assert.ok(listed.has(JSON.stringify(key)), JSON.stringify(key));
          }
        }
      }),
      { numRuns: 300 },
    );
  });

  it('decides the same whatever order the policies are handed over in', () => {
    fc.assert(
      fc.property(scenario, fc.nat(), ({ policies, request }, seed) => {
        const list = toActive(policies);
        const shuffled = [...list].sort(
          (a, b) => ((a.createdAt * 7919 + seed) % 13) - ((b.createdAt * 7919 + seed) % 13),
        );
        assert.deepEqual(evaluatePolicies(shuffled, request, ledger), evaluatePolicies(list, request, ledger));
      }),
    );
  });

  it("agrees with a reference implementation of Kleene's three-valued logic", () => {
    type Truth = 'T' | 'F' | 'U';
    function factOf(request: PolicyRequest, name: FactName): string | undefined {
      if (name === 'wallet.id') return request.wallet.id;
      if (name === 'wallet.type') return request.wallet.type;
      if (name === 'network') {
        const n = request.chain.network;
        return n === null || n === ANY_NETWORK ? undefined : n;
      }
      return request.chain.facts[name];
    }
    function truth(node: Doc, request: PolicyRequest): Truth {
      if (node.all) {
        const t = node.all.map((n: Doc) => truth(n, request));
        return t.includes('F') ? 'F' : t.includes('U') ? 'U' : 'T';
      }
      if (node.any) {
        const t = node.any.map((n: Doc) => truth(n, request));
        return t.includes('T') ? 'T' : t.includes('U') ? 'U' : 'F';
      }
      if (node.not) {
        const t = truth(node.not, request);
        return t === 'U' ? 'U' : t === 'T' ? 'F' : 'T';
      }
      const raw = factOf(request, node.fact);
      if (raw === undefined) return 'U';
      const operands: string[] = Array.isArray(node.value) ? node.value : [node.value];
      let member: boolean;
      let compared: number | undefined;
      if (INTEGER_FACT_SET.has(node.fact)) {
        if (!/^[0-9]+$/.test(raw)) return 'U';
        const n = BigInt(raw);
        member = operands.some((v) => BigInt(v) === n);
        const limit = BigInt(operands[0]!);
        compared = n < limit ? -1 : n > limit ? 1 : 0;
      } else {
        const fold = request.wallet.type === 'EVM' && FOLDED.has(node.fact);
        const norm = (v: string) => (fold ? v.toLowerCase() : v);
        member = operands.some((v) => norm(v) === norm(raw));
      }
      const result: Record<string, boolean> = {
        eq: member,
        in: member,
        ne: !member,
        not_in: !member,
        lt: compared === -1,
        lte: compared !== undefined && compared <= 0,
        gt: compared === 1,
        gte: compared !== undefined && compared >= 0,
      };
      return result[node.op] ? 'T' : 'F';
    }
    const oneDeny = fc.constantFrom(...TYPES).chain((type) =>
      fc.record({
        request: requestOf(type),
        conditions: fc.array(conditionOf(type, false, false), { minLength: 1, maxLength: 3 }),
      }),
    );
    fc.assert(
      fc.property(oneDeny, ({ request, conditions }) => {
        const doc = {
          name: 'kleene',
          layer: 'guardrail',
          scope: { walletType: request.wallet.type },
          rules: [
            {
              id: 'k',
              effect: 'deny',
              actions: ['all'],
              conditions: [{ any: [{ fact: 'wallet.id', op: 'in', value: WALLETS }] }, ...conditions],
            },
          ],
        };
        const expected = truth({ all: doc.rules[0]!.conditions }, request);
        const decision = evaluatePolicies([active(doc, 0)], request, ledger);
        const got =
          decision.effect !== 'deny'
            ? 'F'
            : decision.reason === 'denied-by-rule'
              ? 'T'
              : decision.reason === 'fact-unavailable'
                ? 'U'
                : 'F';
        assert.equal(got, expected);
      }),
      { numRuns: 500 },
    );
  });
});
