import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { encodeFunctionData, erc20Abi } from 'viem';
import { ANY_NETWORK, type ChainFacts, NO_CHAIN_FACTS, type RequestAction } from '../../../chains/domain/policies.ts';
import type { WalletType } from '../../../chains/domain/wallets.ts';
import { extractAuthorizationFacts } from '../../../chains/evm/extract-authorization-facts.ts';
import { extractEvmTransactionFacts } from '../../../chains/evm/extract-evm-transaction-facts.ts';
import { extractEvmTransferFacts } from '../../../chains/evm/extract-evm-transfer-facts.ts';
import { extractTypedDataFacts } from '../../../chains/evm/extract-typed-data-facts.ts';
import {
  type ActivePolicy,
  evaluatePolicies,
  type PolicyDecision,
  type PolicyRequest,
  type SpendKey,
  type SpendLookup,
  spendWindows,
} from './evaluate-policies.ts';
import { validatePolicy } from './validate-policy.ts';

const ALICE = '0x1111111111111111111111111111111111111111';
const BOB = '0x2222222222222222222222222222222222222222';
const USDC = '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48';
const WALLET = 'w-1';
const AT = Date.UTC(2025, 0, 2, 13, 30);
const DAY_START = Date.UTC(2025, 0, 2);

// biome-ignore lint/suspicious/noExplicitAny: policy documents under test are free-form JSON, edited in place
type Doc = Record<string, any>;

let clock = 0;
/** An active policy from a document (checked valid), created after every earlier one unless told. */
function policy(id: string, doc: Doc, createdAt = ++clock): ActivePolicy {
  const checked = validatePolicy({ name: id, layer: 'guardrail', ...doc });
  assert.ok(checked.valid, JSON.stringify(!checked.valid && checked.errors));
  return { id, version: 1, createdAt, document: checked.policy };
}

/** A one-rule EVM policy (no selector unless `networks`). */
function rule(id: string, r: Doc, scope: Doc = {}): ActivePolicy {
  return policy(id, { scope: { walletType: 'EVM', ...scope }, rules: [{ id: `${id}-rule`, ...r }] });
}

function request(chain: ChainFacts, action: RequestAction = 'sign_transaction', extra: Partial<PolicyRequest> = {}) {
  return {
    wallet: { id: WALLET, type: 'EVM' as WalletType },
    action,
    rawSignature: false,
    chain,
    at: AT,
    ...extra,
  } satisfies PolicyRequest;
}

const native = (to: string, value: bigint, chainId = 1) => extractEvmTransactionFacts({ chainId, to, value });
const erc20 = (fn: 'transfer' | 'approve', to: string, amount: bigint, chainId = 1) =>
  extractEvmTransactionFacts({
    chainId,
    to: USDC,
    data: encodeFunctionData({ abi: erc20Abi, functionName: fn, args: [to as `0x${string}`, amount] }),
  });
const creation = extractEvmTransactionFacts({ chainId: 1, data: '0x6080604052' });
const message = (type: WalletType = 'EVM', raw = type !== 'EVM') =>
  request(NO_CHAIN_FACTS, 'sign_message', { rawSignature: raw, wallet: { id: WALLET, type } });

const nothingCounted = () => 0n;

function decide(policies: ActivePolicy[], req: PolicyRequest, spend: SpendLookup = nothingCounted): PolicyDecision {
  return evaluatePolicies(policies, req, spend);
}

function summary(decision: PolicyDecision) {
  const { trace: _trace, ...rest } = decision as PolicyDecision & { reservations?: unknown };
  if ('reservations' in rest) delete (rest as { reservations?: unknown }).reservations;
  return rest;
}

const toIs = (address: string) => ({ fact: 'to', op: 'eq', value: address });
const valueOver = (value: string) => ({ fact: 'value', op: 'gt', value });

describe('evaluatePolicies step 2: which policies apply (P)', () => {
  const denyAll = { effect: 'deny', actions: ['all'] };

  it('matches the wallet type and, when listed, the wallet id', () => {
    const req = request(native(BOB, 1n));
    assert.equal(
      decide([policy('sol', { scope: { walletType: 'SOLANA' }, rules: [{ id: 'r', ...denyAll }] })], req).effect,
      'allow',
    );
    assert.equal(decide([rule('other', denyAll, { walletIds: ['w-2'] })], req).effect, 'allow');
    assert.deepEqual(summary(decide([rule('mine', denyAll, { walletIds: ['w-2', WALLET] })], req)), {
      effect: 'deny',
      reason: 'denied-by-rule',
      policyId: 'mine',
      ruleId: 'mine-rule',
    });
  });

  it('matches the network selector as a set; a request on another chain escapes it', () => {
    const base = rule('base', denyAll, { networks: ['eip155:8453', 'eip155:1'] });
    assert.equal(decide([base], request(native(BOB, 1n, 1))).effect, 'deny');
    assert.equal(decide([base], request(native(BOB, 1n, 8453))).effect, 'deny');
    const other = decide([base], request(native(BOB, 1n, 10)));
    assert.equal(other.effect, 'allow');
    assert.deepEqual(other.trace.policies, []);
  });

  it('lets messages, raw signatures and typed data without a chain id meet only selector-less policies', () => {
    const scoped = rule('scoped', denyAll, { networks: ['eip155:1'] });
    const open = rule('open', denyAll);
    assert.equal(decide([scoped], message()).effect, 'allow');
    assert.equal(decide([scoped, open], message()).effect, 'deny');
    const typedNoChain = extractTypedDataFacts({ domain: { name: 'Mail' }, primaryType: 'Mail' });
    assert.equal(decide([scoped], request(typedNoChain, 'sign_typed_data')).effect, 'allow');
    const typedOnChain1 = extractTypedDataFacts({ domain: { name: 'Mail', chainId: 1 }, primaryType: 'Mail' });
    assert.equal(decide([scoped], request(typedOnChain1, 'sign_typed_data')).effect, 'deny');
    const raw = request(NO_CHAIN_FACTS, 'sign_raw', { rawSignature: true });
    const allowRaw = rule('allow-raw', { effect: 'allow', actions: ['raw_signature'] }, { networks: ['eip155:1'] });
    assert.equal(decide([allowRaw], raw).effect, 'deny');
  });

  it('fail-secure: an EIP-7702 authorization with chain id 0 and a Solana transaction without network meet every selector', () => {
    const mainnetOnly = rule('mainnet', denyAll, { networks: ['eip155:1'] });
    const anyChain = extractAuthorizationFacts({ address: BOB, chainId: 0 });
    assert.equal(anyChain.network, ANY_NETWORK);
    assert.deepEqual(summary(decide([mainnetOnly], request(anyChain, 'sign_authorization'))), {
      effect: 'deny',
      reason: 'denied-by-rule',
      policyId: 'mainnet',
      ruleId: 'mainnet-rule',
    });
    assert.equal(
      decide([mainnetOnly], request(extractAuthorizationFacts({ address: BOB, chainId: 10 }), 'sign_authorization'))
        .effect,
      'allow',
    );

    const solanaAny: ChainFacts = { network: ANY_NETWORK, facts: {}, spend: { moved: [], complete: false } };
    const solanaReq = request(solanaAny, 'sign_transaction', { wallet: { id: WALLET, type: 'SOLANA' } });
    for (const network of ['solana:mainnet', 'solana:devnet']) {
      const p = policy(network, {
        scope: { walletType: 'SOLANA', networks: [network] },
        rules: [{ id: 'r', ...denyAll }],
      });
      assert.equal(decide([p], solanaReq).effect, 'deny', network);
    }
    // ... and has no network fact: a rule reading it is indeterminate.
    const onNetwork = rule('net', {
      effect: 'deny',
      actions: ['all'],
      conditions: [{ fact: 'network', op: 'ne', value: 'eip155:1' }],
    });
    assert.deepEqual(summary(decide([onNetwork], request(anyChain, 'sign_authorization'))), {
      effect: 'deny',
      reason: 'fact-unavailable',
      policyId: 'net',
      ruleId: 'net-rule',
      fact: 'network',
    });
  });
});

describe('evaluatePolicies step 3: deny rules', () => {
  it('denies on a true deny rule, naming the policy and rule', () => {
    const big = rule(
      'big',
      { effect: 'deny', actions: ['sign_transaction'], conditions: [valueOver('100')] },
      { networks: ['eip155:1'] },
    );
    assert.deepEqual(summary(decide([big], request(native(BOB, 101n)))), {
      effect: 'deny',
      reason: 'denied-by-rule',
      policyId: 'big',
      ruleId: 'big-rule',
    });
    assert.equal(decide([big], request(native(BOB, 100n))).effect, 'allow');
    // The same value on a chain the policy does not select is allowed.
    assert.equal(decide([big], request(native(BOB, 101n, 8453))).effect, 'allow');
  });

  it('denies on an indeterminate deny rule with fact-unavailable and the missing fact (a contract creation has no to)', () => {
    const blocked = rule('blocklist', { effect: 'deny', actions: ['sign_transaction'], conditions: [toIs(ALICE)] });
    assert.deepEqual(summary(decide([blocked], request(creation))), {
      effect: 'deny',
      reason: 'fact-unavailable',
      policyId: 'blocklist',
      ruleId: 'blocklist-rule',
      fact: 'to',
    });
    assert.equal(decide([blocked], request(native(BOB, 1n))).effect, 'allow');
    assert.equal(decide([blocked], request(native(ALICE, 1n))).effect, 'deny');
  });

  it('ignores deny rules for other actions, and applies all to every action, raw signatures too', () => {
    const transfers = rule('t', { effect: 'deny', actions: ['transfer'] });
    assert.equal(decide([transfers], request(native(BOB, 1n))).effect, 'allow');
    assert.equal(
      decide([transfers], request(extractEvmTransferFacts('1', { kind: 'NATIVE', to: BOB, value: '1' }), 'transfer'))
        .effect,
      'deny',
    );
    const everything = rule('a', { effect: 'deny', actions: ['all'] });
    const raw = request(NO_CHAIN_FACTS, 'sign_raw', { rawSignature: true });
    assert.deepEqual(summary(decide([everything], raw)), {
      effect: 'deny',
      reason: 'denied-by-rule',
      policyId: 'a',
      ruleId: 'a-rule',
    });
  });

  it('reports the oldest policy first whatever the order given, then rules in order', () => {
    const older = rule('older', { effect: 'deny', actions: ['all'] }, {});
    const newer = rule('newer', { effect: 'deny', actions: ['all'] }, {});
    const req = request(native(BOB, 1n));
    assert.equal((decide([newer, older], req) as { policyId: string }).policyId, 'older');
    const tieA = { ...newer, id: 'a-tie', createdAt: 5 };
    const tieB = { ...older, id: 'b-tie', createdAt: 5 };
    assert.equal((decide([tieB, tieA], req) as { policyId: string }).policyId, 'a-tie');
    const two = policy('two', {
      scope: { walletType: 'EVM' },
      rules: [
        { id: 'first', effect: 'deny', actions: ['all'], conditions: [valueOver('1000')] },
        { id: 'second', effect: 'deny', actions: ['all'], conditions: [toIs(BOB)] },
        { id: 'third', effect: 'deny', actions: ['all'] },
      ],
    });
    assert.equal((decide([two], req) as { ruleId: string }).ruleId, 'second');
  });

  it("deny beats an older policy's boundary and hold (steps 3 before 4 and 6)", () => {
    const boundary = rule('boundary', { effect: 'allow', actions: ['sign_transaction'], conditions: [toIs(ALICE)] });
    const hold = rule('hold', { effect: 'require_approval', actions: ['all'] });
    const deny = rule('deny', { effect: 'deny', actions: ['all'], conditions: [toIs(BOB)] });
    assert.deepEqual(summary(decide([boundary, hold, deny], request(native(BOB, 1n)))), {
      effect: 'deny',
      reason: 'denied-by-rule',
      policyId: 'deny',
      ruleId: 'deny-rule',
    });
  });
});

describe('evaluatePolicies step 4: boundaries', () => {
  const allowList = rule('allow-list', {
    effect: 'allow',
    actions: ['transfer', 'sign_transaction'],
    conditions: [{ fact: 'to', op: 'in', value: [ALICE, '0x3333333333333333333333333333333333333333'] }],
  });

  it('denies outside-boundary when a policy allows the action but no allow rule holds', () => {
    assert.equal(decide([allowList], request(native(ALICE, 5n))).effect, 'allow');
    assert.deepEqual(summary(decide([allowList], request(native(BOB, 5n)))), {
      effect: 'deny',
      reason: 'outside-boundary',
      policyId: 'allow-list',
    });
    // Not knowing the destination is not being inside the boundary.
    assert.equal((decide([allowList], request(creation)) as { reason?: string }).reason, 'outside-boundary');
  });

  it('leaves actions no allow rule names allowed', () => {
    assert.equal(decide([allowList], message()).effect, 'allow');
    assert.equal(
      decide([allowList], request(extractTypedDataFacts({ domain: {}, primaryType: 'M' }), 'sign_typed_data')).effect,
      'allow',
    );
  });

  it("needs every policy of P satisfied: one allowing does not lift another's boundary", () => {
    const onlyBob = rule('only-bob', { effect: 'allow', actions: ['sign_transaction'], conditions: [toIs(BOB)] });
    assert.deepEqual(summary(decide([allowList, onlyBob], request(native(ALICE, 5n)))), {
      effect: 'deny',
      reason: 'outside-boundary',
      policyId: 'only-bob',
    });
    const alsoAlice = policy('two-rules', {
      scope: { walletType: 'EVM' },
      rules: [
        { id: 'bob', effect: 'allow', actions: ['sign_transaction'], conditions: [toIs(BOB)] },
        { id: 'alice', effect: 'allow', actions: ['sign_transaction'], conditions: [toIs(ALICE)] },
      ],
    });
    assert.equal(decide([allowList, alsoAlice], request(native(ALICE, 5n))).effect, 'allow');
  });

  it('draws the boundary with the first allow rule for an action: adding it can turn an allow into a denial', () => {
    // By design (POLICIES.md §2 step 4): allow rules fence an action in; only once a policy has one does any other
    // allow rule widen it (the property tests check that).
    const cap = { id: 'cap', effect: 'deny', actions: ['sign_transaction'], conditions: [valueOver('100')] };
    const fence = { id: 'fence', effect: 'allow', actions: ['sign_transaction'], conditions: [toIs(ALICE)] };
    const before = policy('p', { scope: { walletType: 'EVM' }, rules: [cap] });
    const after = policy('p', { scope: { walletType: 'EVM' }, rules: [cap, fence] });
    assert.equal(decide([before], request(native(BOB, 1n))).effect, 'allow');
    assert.equal((decide([after], request(native(BOB, 1n))) as { reason?: string }).reason, 'outside-boundary');
  });

  it('does not draw a boundary from allow rules that name only raw_signature', () => {
    const rawOnly = rule('raw', {
      effect: 'allow',
      actions: ['raw_signature'],
      conditions: [{ fact: 'wallet.id', op: 'eq', value: 'w-9' }],
    });
    assert.equal(decide([rawOnly], request(native(BOB, 1n))).effect, 'allow');
  });
});

describe('evaluatePolicies step 5: raw signatures', () => {
  const raw = request(NO_CHAIN_FACTS, 'sign_raw', { rawSignature: true });

  it('refuses a raw signature when no policy exists (permissions on)', () => {
    assert.deepEqual(summary(decide([], raw)), { effect: 'deny', reason: 'raw-signature-not-allowed' });
  });

  it('allows it only through a true allow rule naming raw_signature in a policy of P', () => {
    const mine = rule('mine', {
      effect: 'allow',
      actions: ['raw_signature'],
      conditions: [{ fact: 'wallet.id', op: 'eq', value: WALLET }],
    });
    const theirs = rule('theirs', {
      effect: 'allow',
      actions: ['raw_signature'],
      conditions: [{ fact: 'wallet.id', op: 'eq', value: 'w-2' }],
    });
    assert.equal(decide([mine], raw).effect, 'allow');
    assert.equal((decide([theirs], raw) as { reason?: string }).reason, 'raw-signature-not-allowed');
    const signRawOnly = rule('sign-raw', { effect: 'allow', actions: ['sign_raw'] });
    assert.equal((decide([signRawOnly], raw) as { reason?: string }).reason, 'raw-signature-not-allowed');
    const solana = policy('solana', {
      scope: { walletType: 'SOLANA' },
      rules: [{ id: 'r', effect: 'allow', actions: ['raw_signature'] }],
    });
    assert.equal((decide([solana], raw) as { reason?: string }).reason, 'raw-signature-not-allowed');
  });

  it("counts sign-message of COSMOS, SOLANA, STELLAR and SUI as raw, not EVM's", () => {
    assert.equal(decide([], message('EVM')).effect, 'allow');
    for (const type of ['COSMOS', 'SOLANA', 'STELLAR', 'SUI'] as const) {
      assert.equal((decide([], message(type)) as { reason?: string }).reason, 'raw-signature-not-allowed', type);
      const allow = policy(type, {
        scope: { walletType: type },
        rules: [{ id: 'r', effect: 'allow', actions: ['raw_signature'] }],
      });
      assert.equal(decide([allow], message(type)).effect, 'allow', type);
    }
  });
});

describe('evaluatePolicies step 6: holds', () => {
  const stages = { stages: [{ role: 'approver', threshold: 2 }] };

  it('holds on a true or indeterminate require_approval rule, with its approval block (a case) or without (a review)', () => {
    const withCase = rule('case', {
      effect: 'require_approval',
      actions: ['sign_transaction'],
      conditions: [valueOver('10')],
      approval: stages,
    });
    assert.deepEqual(summary(decide([withCase], request(native(BOB, 11n)))), {
      effect: 'hold',
      policyId: 'case',
      ruleId: 'case-rule',
      approval: stages,
    });
    assert.equal(decide([withCase], request(native(BOB, 10n))).effect, 'allow');
    const review = rule('review', {
      effect: 'require_approval',
      actions: ['sign_transaction'],
      conditions: [toIs(ALICE)],
    });
    assert.deepEqual(summary(decide([review], request(creation))), {
      effect: 'hold',
      policyId: 'review',
      ruleId: 'review-rule',
    });
  });

  it("takes the oldest policy's hold first, after every deny, boundary and raw check passed", () => {
    const first = rule('first', { effect: 'require_approval', actions: ['all'] });
    const second = rule('second', { effect: 'require_approval', actions: ['all'], approval: stages });
    assert.equal((decide([second, first], request(native(BOB, 1n))) as { policyId: string }).policyId, 'first');
    const boundary = rule('boundary', { effect: 'allow', actions: ['sign_transaction'], conditions: [toIs(ALICE)] });
    assert.equal(
      (decide([first, boundary], request(native(BOB, 1n))) as { reason?: string }).reason,
      'outside-boundary',
    );
    const raw = request(NO_CHAIN_FACTS, 'sign_raw', { rawSignature: true });
    assert.equal((decide([first], raw) as { reason?: string }).reason, 'raw-signature-not-allowed');
  });
});

describe('evaluatePolicies: three-valued conditions and operators', () => {
  const denyWhen = (condition: Doc) => rule('p', { effect: 'deny', actions: ['all'], conditions: [condition] });
  const outcome = (condition: Doc, chain: ChainFacts = creation) => {
    const d = decide([denyWhen(condition)], request(chain));
    if (d.effect !== 'deny') return d.effect;
    const { reason, fact } = d as { reason: string; fact?: string };
    return fact ? `${reason}:${fact}` : reason;
  };
  const missingTo = toIs(ALICE); // indeterminate on a creation
  const yes = { fact: 'tx.chainId', op: 'eq', value: '1' };
  const no = { fact: 'tx.chainId', op: 'eq', value: '2' };

  it('follows Kleene logic for all, any and not, and names the fact behind an indeterminate result', () => {
    assert.equal(outcome({ not: missingTo }), 'fact-unavailable:to');
    assert.equal(outcome({ any: [missingTo, yes] }), 'denied-by-rule');
    assert.equal(outcome({ any: [missingTo, no] }), 'fact-unavailable:to');
    assert.equal(outcome({ all: [missingTo, no] }), 'allow');
    assert.equal(outcome({ all: [missingTo, yes] }), 'fact-unavailable:to');
    assert.equal(outcome({ not: { all: [yes, no] } }), 'denied-by-rule');
    assert.equal(
      outcome({ any: [{ all: [missingTo, no] }, { fact: 'value', op: 'gt', value: '0' }] }),
      'fact-unavailable:value',
    );
  });

  it('treats ne and not_in on an absent fact as indeterminate, never as true', () => {
    const allow = (condition: Doc) =>
      rule('a', { effect: 'allow', actions: ['sign_transaction'], conditions: [condition] });
    assert.equal(decide([allow({ fact: 'to', op: 'ne', value: ALICE })], request(creation)).effect, 'deny');
    assert.equal(decide([allow({ fact: 'to', op: 'not_in', value: [ALICE] })], request(creation)).effect, 'deny');
    assert.equal(
      decide([allow({ fact: 'to', op: 'not_in', value: [ALICE] })], request(native(BOB, 1n))).effect,
      'allow',
    );
  });

  it('compares EVM addresses and selectors case-insensitively, other chains exactly', () => {
    const checksummed = '0xAbCdEf0000000000000000000000000000000001';
    assert.equal(outcome(toIs(checksummed), native(checksummed.toLowerCase(), 1n)), 'denied-by-rule');
    assert.equal(
      outcome(toIs(checksummed.toLowerCase()), { ...native(BOB, 1n), facts: { to: checksummed } }),
      'denied-by-rule',
    );
    assert.equal(
      outcome({ fact: 'tx.selector', op: 'in', value: ['0xA9059CBB'] }, erc20('transfer', BOB, 1n)),
      'denied-by-rule',
    );
    const mint = 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v';
    const sol = policy('sol', {
      scope: { walletType: 'SOLANA' },
      rules: [{ id: 'r', effect: 'deny', actions: ['all'], conditions: [{ fact: 'asset', op: 'eq', value: mint }] }],
    });
    const solReq = (asset: string) =>
      request(
        { network: 'solana:mainnet', facts: { asset }, spend: { moved: [], complete: false } },
        'sign_transaction',
        {
          wallet: { id: WALLET, type: 'SOLANA' },
        },
      );
    assert.equal(decide([sol], solReq(mint)).effect, 'deny');
    assert.equal(decide([sol], solReq(mint.toLowerCase())).effect, 'allow');
  });

  it('compares integers as numbers, and a fact that is not one as absent', () => {
    assert.equal(outcome({ fact: 'value', op: 'gte', value: '5' }, native(BOB, 5n)), 'denied-by-rule');
    assert.equal(outcome({ fact: 'value', op: 'gt', value: '5' }, native(BOB, 5n)), 'allow');
    assert.equal(outcome({ fact: 'value', op: 'lt', value: '5' }, native(BOB, 4n)), 'denied-by-rule');
    assert.equal(outcome({ fact: 'value', op: 'lte', value: '4' }, native(BOB, 5n)), 'allow');
    const huge = (2n ** 256n - 1n).toString();
    assert.equal(outcome({ fact: 'value', op: 'eq', value: huge }, native(BOB, 2n ** 256n - 1n)), 'denied-by-rule');
    assert.equal(
      outcome({ fact: 'value', op: 'in', value: ['7'] }, { ...native(BOB, 1n), facts: { value: '007' } }),
      'denied-by-rule',
    );
    assert.equal(
      outcome({ fact: 'value', op: 'gt', value: '1' }, { ...native(BOB, 1n), facts: { value: '1e9' } }),
      'fact-unavailable:value',
    );
  });
});

describe('evaluatePolicies: spend windows', () => {
  const cap = (limit: string, asset = 'native', window = '24h', actions = ['sign_transaction', 'transfer']) =>
    rule(
      'cap',
      { effect: 'deny', actions, conditions: [{ spend: { asset, window }, op: 'gt', value: limit }] },
      { networks: ['eip155:1'] },
    );

  it('adds the request to what the epoch-aligned window counted, and asks the ledger with the exact key', () => {
    const keys: SpendKey[] = [];
    const ledger = (counted: bigint) => (key: SpendKey) => {
      keys.push(key);
      return counted;
    };
    assert.equal(decide([cap('1000')], request(native(BOB, 100n)), ledger(900n)).effect, 'allow');
    assert.deepEqual(keys[0], {
      policyId: 'cap',
      ruleId: 'cap-rule',
      network: 'eip155:1',
      asset: 'native',
      window: '24h',
      windowStart: DAY_START,
    });
    assert.deepEqual(summary(decide([cap('1000')], request(native(BOB, 100n)), ledger(901n))), {
      effect: 'deny',
      reason: 'denied-by-rule',
      policyId: 'cap',
      ruleId: 'cap-rule',
    });
    keys.length = 0;
    decide([cap('1000', 'native', '7m')], request(native(BOB, 1n)), ledger(0n));
    assert.equal(keys[0]!.windowStart, Math.floor(AT / 420_000) * 420_000);
  });

  it('counts an ERC-20 transfer in its token and an approve as nothing; gas never', () => {
    const tokenCap = cap('1000', USDC);
    const seen: bigint[] = [];
    const ledger = () => 950n;
    const t = decide([tokenCap], request(erc20('transfer', BOB, 51n)), ledger);
    assert.equal(t.effect, 'deny');
    seen.push(...t.trace.spend.map((s) => BigInt(s.amount!)));
    const a = decide([tokenCap], request(erc20('approve', BOB, 10n ** 30n)), ledger);
    assert.equal(a.effect, 'allow');
    assert.deepEqual((a as { reservations: unknown[] }).reservations, []);
    assert.deepEqual(seen, [51n]);
    // A plain value transfer moves none of the token.
    assert.equal(decide([tokenCap], request(native(BOB, 10n ** 18n)), ledger).effect, 'allow');
  });

  it('is indeterminate when the amount or the network is unknown (a deny then denies with the missing fact)', () => {
    const tokenCap = rule('cap', {
      effect: 'deny',
      actions: ['all'],
      conditions: [{ spend: { asset: USDC, window: '1h' }, op: 'gt', value: '0' }],
    });
    const call = extractEvmTransactionFacts({ chainId: 1, to: BOB, data: '0xdeadbeef' });
    assert.deepEqual(summary(decide([tokenCap], request(call))), {
      effect: 'deny',
      reason: 'fact-unavailable',
      policyId: 'cap',
      ruleId: 'cap-rule',
      fact: 'spend',
    });
    assert.equal((decide([tokenCap], message()) as { fact?: string }).fact, 'network');
    const nativeCap = rule('n', {
      effect: 'deny',
      actions: ['all'],
      conditions: [{ spend: { asset: 'native', window: '1h' }, op: 'gt', value: '10' }],
    });
    // The native value of any call is known.
    assert.equal(
      decide([nativeCap], request(extractEvmTransactionFacts({ chainId: 1, to: BOB, value: 10n, data: '0xdeadbeef' })))
        .effect,
      'allow',
    );
  });

  it('reserves what the request adds to each window of the rules that apply, once per rule, asset (whatever its case) and window', () => {
    const doc = policy('meters', {
      scope: { walletType: 'EVM' },
      rules: [
        {
          id: 'usdc-day',
          effect: 'deny',
          actions: ['transfer'],
          conditions: [
            {
              any: [
                { spend: { asset: USDC, window: '1d' }, op: 'gt', value: '100' },
                { spend: { asset: USDC.toLowerCase(), window: '1d' }, op: 'gt', value: '100' },
              ],
            },
          ],
        },
        {
          id: 'native-hour',
          effect: 'deny',
          actions: ['transfer'],
          conditions: [{ spend: { asset: 'native', window: '1h' }, op: 'gt', value: '100' }],
        },
        {
          id: 'messages',
          effect: 'deny',
          actions: ['sign_message'],
          conditions: [{ spend: { asset: USDC, window: '1d' }, op: 'gt', value: '100' }],
        },
        {
          id: 'ok',
          effect: 'allow',
          actions: ['transfer'],
          conditions: [{ spend: { asset: USDC, window: '30d' }, op: 'lte', value: '1000' }],
        },
      ],
    });
    const transfer = request(
      extractEvmTransferFacts('1', { kind: 'ERC20', to: BOB, value: '40', tokenAddress: USDC }),
      'transfer',
    );
    assert.deepEqual(
      spendWindows([doc], transfer).map((k) => `${k.ruleId} ${k.asset} ${k.window}`),
      [`usdc-day ${USDC.toLowerCase()} 1d`, 'native-hour native 1h', `ok ${USDC.toLowerCase()} 30d`],
    );
    assert.deepEqual(spendWindows([doc], message()), []);
    const decision = decide([doc], transfer);
    assert.equal(decision.effect, 'allow');
    assert.deepEqual((decision as { reservations: unknown }).reservations, [
      {
        policyId: 'meters',
        ruleId: 'usdc-day',
        network: 'eip155:1',
        asset: USDC.toLowerCase(),
        window: '1d',
        windowStart: DAY_START,
        amount: 40n,
      },
      {
        policyId: 'meters',
        ruleId: 'ok',
        network: 'eip155:1',
        asset: USDC.toLowerCase(),
        window: '30d',
        windowStart: Math.floor(AT / (30 * 86_400_000)) * 30 * 86_400_000,
        amount: 40n,
      },
    ]);
  });

  it('reads each window once per request, and a hold carries the reservations it would make', () => {
    let reads = 0;
    const ledger = () => {
      reads++;
      return 0n;
    };
    const doc = policy('twice', {
      scope: { walletType: 'EVM' },
      rules: [
        {
          id: 'hold',
          effect: 'require_approval',
          actions: ['sign_transaction'],
          conditions: [
            {
              all: [
                { spend: { asset: 'native', window: '1d' }, op: 'gt', value: '5' },
                { spend: { asset: 'native', window: '1d' }, op: 'gt', value: '6' },
              ],
            },
          ],
        },
      ],
    });
    const decision = decide([doc], request(native(BOB, 10n)), ledger);
    assert.equal(reads, 1);
    assert.equal(decision.effect, 'hold');
    assert.deepEqual(
      (decision as { reservations: Array<{ amount: bigint }> }).reservations.map((r) => r.amount),
      [10n],
    );
  });
});

describe('evaluatePolicies: the trace and faults', () => {
  it('traces P, the facts the applying rules read (null when absent) and the windows read', () => {
    const doc = policy('traced', {
      scope: { walletType: 'EVM' },
      rules: [
        {
          id: 'a',
          effect: 'deny',
          actions: ['sign_transaction'],
          conditions: [toIs(ALICE), { fact: 'typedData.primaryType', op: 'eq', value: 'x' }],
        },
        {
          id: 'b',
          effect: 'deny',
          actions: ['sign_transaction'],
          conditions: [{ spend: { asset: 'native', window: '1d' }, op: 'gt', value: '100' }],
        },
        {
          id: 'c',
          effect: 'deny',
          actions: ['sign_message'],
          conditions: [{ fact: 'tx.selector', op: 'eq', value: '0x' }],
        },
      ],
    });
    const decision = decide([doc], request(native(BOB, 7n)), () => 3n);
    assert.equal(decision.effect, 'allow');
    assert.deepEqual(decision.trace, {
      policies: [{ policyId: 'traced', version: 1 }],
      facts: { to: BOB, 'typedData.primaryType': null },
      spend: [
        {
          policyId: 'traced',
          ruleId: 'b',
          network: 'eip155:1',
          asset: 'native',
          window: '1d',
          windowStart: DAY_START,
          counted: '3',
          amount: '7',
        },
      ],
    });
    assert.doesNotThrow(() => JSON.stringify(decision.trace));
  });

  it('throws on a document that is not valid (the store holds only valid ones): nothing is signed on it', () => {
    const broken = {
      id: 'x',
      version: 1,
      createdAt: 1,
      document: { name: 'x', layer: 'guardrail', scope: { walletType: 'EVM' }, rules: [] },
    } as unknown as ActivePolicy;
    assert.throws(() => decide([broken], request(native(BOB, 1n))), /policy x is not a valid policy document/);
  });

  it('throws when the spend ledger answers something other than a count', () => {
    const doc = rule('c', {
      effect: 'deny',
      actions: ['all'],
      conditions: [{ spend: { asset: 'native', window: '1d' }, op: 'gt', value: '1' }],
    });
    assert.throws(() => decide([doc], request(native(BOB, 1n)), (() => -1n) as () => bigint), /bigint >= 0/);
  });
});
