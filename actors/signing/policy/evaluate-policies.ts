/**
 * The policy decision for one signing request: POLICIES.md §2 steps 2 to 6, pure. The caller (the single decision
 * point) has done steps 0 and 1 (permissions on for the key, the request's reference) and does step 7 and on with the
 * answer (cases, reviews, the spend reservations, all in the transaction that records the attempt).
 *
 * Evaluation is three-valued: a fact the request does not carry makes its condition indeterminate, which a deny or
 * require_approval rule treats as true and an allow rule as not true. Spend leaves read what each window already
 * counted through `spend`; the windows are aligned to the Unix epoch.
 */
import { ANY_NETWORK, type ChainFacts, type FactName, type RequestAction } from '../../../chains/domain/policies.ts';
import type { WalletType } from '../../../chains/domain/wallets.ts';
import {
  ACTION_BIT,
  type CompiledCondition,
  type CompiledPolicy,
  type CompiledRule,
  compilePolicy,
  READ_FOLDED,
  READ_INTEGER,
  type SpendSlot,
} from './compile-policy.ts';
import type { ApprovalBlock, PolicyDocument } from './policy-document.ts';

/** An active guardrail as the store hands it to evaluation. */
export interface ActivePolicy {
  id: string;
  version: number;
  /** When the policy was created (ms since the epoch): evaluation visits the oldest first (ties: by id). */
  createdAt: number;
  /** A document `validatePolicy` accepted; never mutated (it is compiled once per object). */
  document: PolicyDocument;
}

/** A signing request as the policy engine reads it. */
export interface PolicyRequest {
  wallet: { id: string; type: WalletType };
  /** The route's action (`transfer` for a transfer, `yield_*` for yield steps). */
  action: RequestAction;
  /** The spec's raw signatures (`sign-raw`, `sign-message` on COSMOS, SOLANA, STELLAR, SUI): adds `raw_signature`. */
  rawSignature: boolean;
  /** What the chain folder read from the request (chains/<family>/extract-*). */
  chain: ChainFacts;
  /** When the request is decided (ms since the epoch): picks each spend window. */
  at: number;
}

/** One spend window's ledger entry: what it counts is (key, wallet) plus this. */
export interface SpendKey {
  policyId: string;
  ruleId: string;
  network: string;
  /** `native`, or the asset as its chain names it (EVM contracts lower-case, whatever case the policy used). */
  asset: string;
  window: string;
  /** The window's start, ms since the epoch (a multiple of the window's length). */
  windowStart: number;
}

/** What the window `key` already counted (base units; 0n when nothing). */
export type SpendLookup = (key: SpendKey) => bigint;

/** An amount to count in a window once the request is signed (POLICIES.md §4). */
export interface SpendReservation extends SpendKey {
  amount: bigint;
}

/** What a decision rested on, for the decision log (shadow mode): JSON-safe. */
export interface DecisionTrace {
  /** The policies that matched the request (P), oldest first. */
  policies: Array<{ policyId: string; version: number }>;
  /** The facts the applying rules read, with their values; null when the request does not carry it. */
  facts: Partial<Record<FactName, string | null>>;
  /** Each window a spend leaf read: what it had counted before, and this request's amount in it. */
  spend: Array<SpendKey & { counted: string; amount: string }>;
}

/** The fact named by a `fact-unavailable` denial: a fact, or `spend` when the request's amount of an asset is unknown. */
export type UnavailableFact = FactName | 'spend';

export type PolicyDecision =
  | { effect: 'allow'; reservations: SpendReservation[]; trace: DecisionTrace }
  | {
      effect: 'deny';
      reason: 'denied-by-rule' | 'fact-unavailable';
      policyId: string;
      ruleId: string;
      /** fact-unavailable: the first fact the rule needed and the request lacks. */
      fact?: UnavailableFact;
      trace: DecisionTrace;
    }
  | { effect: 'deny'; reason: 'outside-boundary'; policyId: string; trace: DecisionTrace }
  | { effect: 'deny'; reason: 'raw-signature-not-allowed'; trace: DecisionTrace }
  | {
      effect: 'hold';
      policyId: string;
      ruleId: string;
      /** Present: the hold opens an approval case; absent: a review. */
      approval?: ApprovalBlock;
      /** What to reserve should the hold end in an approval. */
      reservations: SpendReservation[];
      trace: DecisionTrace;
    };

// Three-valued logic.
const F = 0;
const T = 1;
const U = 2;
type Truth = typeof F | typeof T | typeof U;

type TraceSpend = DecisionTrace['spend'][number];

/** A policy of P during one evaluation, with the windows its spend leaves read. */
interface Policy {
  source: ActivePolicy;
  compiled: CompiledPolicy;
  /** What each spend window counted, read once per request. */
  reads: Map<SpendSlot, bigint> | null;
}

const DIGITS = /^[0-9]{1,80}$/;

/** A decimal string as a bigint; null for anything else (a fact that is not a number is as good as absent). */
function parseUnsigned(value: unknown): bigint | null {
  return typeof value === 'string' && DIGITS.test(value) ? BigInt(value) : null;
}

/** The state of one evaluation: the request, its facts as the leaves read them, the windows read. */
class Evaluation {
  missing: UnavailableFact | undefined;
  readonly network: string | null;
  readonly evm: boolean;
  readonly trace: TraceSpend[] = [];
  // Made when a leaf first reads one: most requests read few facts, many none folded or as integers.
  private folded: Map<FactName, string | undefined> | undefined;
  private integers: Map<FactName, bigint | null> | undefined;
  private moved: Map<string, bigint | null> | undefined;

  constructor(
    readonly request: PolicyRequest,
    private readonly lookup: SpendLookup,
  ) {
    const network = request.chain.network;
    this.network = typeof network === 'string' && network !== ANY_NETWORK ? network : null;
    this.evm = request.wallet.type === 'EVM';
  }

  fact(name: FactName): string | undefined {
    switch (name) {
      case 'wallet.id':
        return this.request.wallet.id;
      case 'wallet.type':
        return this.request.wallet.type;
      case 'network':
        return this.network ?? undefined;
      default: {
        const value = this.request.chain.facts[name];
        return typeof value === 'string' ? value : undefined;
      }
    }
  }

  /** The fact lower-cased, computed once per request. */
  foldedFact(name: FactName): string | undefined {
    if (!this.folded) this.folded = new Map();
    const folded = this.folded;
    if (folded.has(name)) return folded.get(name);
    const value = this.fact(name)?.toLowerCase();
    folded.set(name, value);
    return value;
  }

  /** The fact as an unsigned integer (null when absent or not one), computed once per request. */
  integerFact(name: FactName): bigint | null {
    if (!this.integers) this.integers = new Map();
    const integers = this.integers;
    let value = integers.get(name);
    if (value === undefined) {
      value = parseUnsigned(this.fact(name));
      integers.set(name, value);
    }
    return value;
  }

  /** The request's amount of `asset` (as slots name it): a bigint, or null when its bytes do not tell. */
  amount(asset: string): bigint | null {
    let moved = this.moved;
    if (!moved) {
      moved = new Map();
      for (const entry of this.request.chain.spend.moved) {
        const name = this.evm ? entry.asset.toLowerCase() : entry.asset;
        const amount = parseUnsigned(entry.amount);
        const before = moved.get(name);
        // Entries of one asset add up; one that is not a number makes the asset's amount unknown.
        moved.set(name, before === undefined ? amount : before === null || amount === null ? null : before + amount);
      }
      this.moved = moved;
    }
    const amount = moved.get(asset);
    return amount !== undefined ? amount : this.request.chain.spend.complete ? 0n : null;
  }

  windowStart(slot: SpendSlot): number | null {
    const at = this.request.at;
    return Number.isFinite(at) && at >= 0 ? Math.floor(at / slot.windowMs) * slot.windowMs : null;
  }

  /** What `slot`'s window counted before this request, read from the ledger once per request. */
  counted(policy: Policy, ruleId: string, slot: SpendSlot, network: string, windowStart: number, amount: bigint) {
    policy.reads ??= new Map();
    const read = policy.reads.get(slot);
    if (read !== undefined) return read;
    const key: SpendKey = {
      policyId: policy.source.id,
      ruleId,
      network,
      asset: slot.asset,
      window: slot.window,
      windowStart,
    };
    const counted = this.lookup(key);
    if (typeof counted !== 'bigint' || counted < 0n) {
      throw new TypeError(
        `the spend lookup answered ${String(counted)} for ${key.policyId}/${ruleId}/${slot.asset}/${slot.window}: it must be a bigint >= 0`,
      );
    }
    policy.reads.set(slot, counted);
    this.trace.push({
      policyId: key.policyId,
      ruleId,
      network,
      asset: slot.asset,
      window: slot.window,
      windowStart,
      counted: counted.toString(),
      amount: amount.toString(),
    });
    return counted;
  }
}

function compare(op: 'lt' | 'lte' | 'gt' | 'gte', left: bigint, right: bigint): boolean {
  switch (op) {
    case 'lt':
      return left < right;
    case 'lte':
      return left <= right;
    case 'gt':
      return left > right;
    case 'gte':
      return left >= right;
  }
}

function evaluate(condition: CompiledCondition, policy: Policy, ruleId: string, e: Evaluation): Truth {
  switch (condition.kind) {
    case 'all': {
      let missing: UnavailableFact | undefined;
      for (const item of condition.items) {
        const truth = evaluate(item, policy, ruleId, e);
        if (truth === F) return F;
        if (truth === U && missing === undefined) missing = e.missing;
      }
      if (missing === undefined) return T;
      e.missing = missing;
      return U;
    }
    case 'any': {
      let missing: UnavailableFact | undefined;
      for (const item of condition.items) {
        const truth = evaluate(item, policy, ruleId, e);
        if (truth === T) return T;
        if (truth === U && missing === undefined) missing = e.missing;
      }
      if (missing === undefined) return F;
      e.missing = missing;
      return U;
    }
    case 'not': {
      const truth = evaluate(condition.item, policy, ruleId, e);
      return truth === U ? U : truth === T ? F : T;
    }
    case 'member': {
      const value =
        condition.read === READ_INTEGER
          ? e.integerFact(condition.fact)
          : condition.read === READ_FOLDED
            ? e.foldedFact(condition.fact)
            : e.fact(condition.fact);
      // An absent fact, or an integer fact that is not one, is indeterminate: never a guess.
      if (value === undefined || value === null) {
        e.missing = condition.fact;
        return U;
      }
      return condition.set.has(value) === condition.inside ? T : F;
    }
    case 'compare': {
      const value = e.integerFact(condition.fact);
      if (value === null) {
        e.missing = condition.fact;
        return U;
      }
      return compare(condition.op, value, condition.limit) ? T : F;
    }
    case 'spend': {
      const network = e.network;
      if (network === null) {
        e.missing = 'network';
        return U;
      }
      const { slot } = condition;
      const windowStart = e.windowStart(slot);
      const amount = e.amount(slot.asset);
      if (windowStart === null || amount === null) {
        e.missing = 'spend';
        return U;
      }
      const counted = e.counted(policy, ruleId, slot, network, windowStart, amount);
      return compare(condition.op, counted + amount, condition.limit) ? T : F;
    }
  }
}

function evaluateRule(rule: CompiledRule, policy: Policy, e: Evaluation): Truth {
  e.missing = undefined;
  return rule.condition === null ? T : evaluate(rule.condition, policy, rule.id, e);
}

function matches(policy: CompiledPolicy, request: PolicyRequest): boolean {
  if (policy.walletType !== request.wallet.type) return false;
  if (policy.walletIds !== null && !policy.walletIds.has(request.wallet.id)) return false;
  if (policy.networks === null) return true;
  // Fail-secure: a request that could be on any network meets every selector; one that names none meets only
  // selector-less policies (POLICIES.md §2 step 2).
  const network = request.chain.network;
  if (network === ANY_NETWORK) return true;
  return typeof network === 'string' && policy.networks.has(network);
}

function byAge(a: ActivePolicy, b: ActivePolicy): number {
  return a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

/** The policies oldest first, copied and sorted only when they are not already in that order. */
function oldestFirst(policies: readonly ActivePolicy[]): readonly ActivePolicy[] {
  for (let i = 1; i < policies.length; i++) {
    if (byAge(policies[i - 1]!, policies[i]!) > 0) return [...policies].sort(byAge);
  }
  return policies;
}

/** The amounts the request adds to each window of the rules that apply to it (POLICIES.md §4). */
function reservations(matched: Policy[], mask: number, e: Evaluation): SpendReservation[] {
  const out: SpendReservation[] = [];
  const network = e.network;
  if (network === null) return out;
  for (const policy of matched) {
    for (const rule of policy.compiled.rules) {
      if ((rule.mask & mask) === 0) continue;
      for (const slot of rule.slots) {
        const amount = e.amount(slot.asset);
        const windowStart = e.windowStart(slot);
        if (amount === null || amount === 0n || windowStart === null) continue;
        out.push({
          policyId: policy.source.id,
          ruleId: rule.id,
          network,
          asset: slot.asset,
          window: slot.window,
          windowStart,
          amount,
        });
      }
    }
  }
  return out;
}

function trace(matched: Policy[], mask: number, e: Evaluation): DecisionTrace {
  const facts: DecisionTrace['facts'] = {};
  for (const { compiled } of matched) {
    for (const name of compiled.factsFor(mask)) {
      if (facts[name] === undefined) facts[name] = e.fact(name) ?? null;
    }
  }
  return {
    policies: matched.map(({ source }) => ({ policyId: source.id, version: source.version })),
    facts,
    spend: e.trace,
  };
}

/**
 * Every spend window `evaluatePolicies` may read for `request` (one key per rule, asset and window of the policies
 * that match it and the rules that apply), so that the store can load their counts in one query and hand
 * evaluation a lookup into them. Empty when the request names no network (its spend leaves are indeterminate).
 */
export function spendWindows(policies: readonly ActivePolicy[], request: PolicyRequest): SpendKey[] {
  const e = new Evaluation(request, () => 0n);
  const network = e.network;
  if (network === null) return [];
  const mask = ACTION_BIT[request.action] | (request.rawSignature ? ACTION_BIT.raw_signature : 0);
  const keys: SpendKey[] = [];
  for (const source of oldestFirst(policies)) {
    const compiled = compilePolicy(source.document, source.id);
    if (!matches(compiled, request)) continue;
    for (const rule of compiled.rules) {
      if ((rule.mask & mask) === 0) continue;
      for (const slot of rule.slots) {
        const windowStart = e.windowStart(slot);
        if (windowStart === null) continue;
        keys.push({
          policyId: source.id,
          ruleId: rule.id,
          network,
          asset: slot.asset,
          window: slot.window,
          windowStart,
        });
      }
    }
  }
  return keys;
}

/**
 * Decides a signing request against the key's active guardrails (POLICIES.md §2 steps 2 to 6):
 * 2. P: the policies whose walletType, walletIds and network selector match the request;
 * 3. a deny rule of P that applies and is true or indeterminate denies (`denied-by-rule`, `fact-unavailable`), the
 *    oldest policy first and its rules in order;
 * 4. a policy of P with allow rules for the request's action (`raw_signature` aside), none true, denies
 *    (`outside-boundary`); an action no allow rule names stays allowed;
 * 5. a raw signature needs a true allow rule naming `raw_signature` (`raw-signature-not-allowed`);
 * 6. a require_approval rule that applies and is true or indeterminate holds (the first, in the same order);
 *    otherwise the request is allowed, with the spend it adds to each window of the rules that apply.
 * Throws only when a document is not a valid one (a fault of the store: nothing is signed) or `spend` misbehaves.
 */
export function evaluatePolicies(
  policies: readonly ActivePolicy[],
  request: PolicyRequest,
  spend: SpendLookup,
): PolicyDecision {
  const e = new Evaluation(request, spend);
  const actionBit = ACTION_BIT[request.action];
  const mask = actionBit | (request.rawSignature ? ACTION_BIT.raw_signature : 0);

  // Step 2.
  const matched: Policy[] = [];
  for (const source of oldestFirst(policies)) {
    const compiled = compilePolicy(source.document, source.id);
    if (matches(compiled, request)) matched.push({ source, compiled, reads: null });
  }

  // Step 3: deny rules.
  for (const policy of matched) {
    for (const rule of policy.compiled.rules) {
      if (rule.effect !== 'deny' || (rule.mask & mask) === 0) continue;
      const truth = evaluateRule(rule, policy, e);
      if (truth === F) continue;
      const denial = { effect: 'deny' as const, policyId: policy.source.id, ruleId: rule.id };
      return truth === T
        ? { ...denial, reason: 'denied-by-rule', trace: trace(matched, mask, e) }
        : {
            ...denial,
            reason: 'fact-unavailable',
            ...(e.missing !== undefined ? { fact: e.missing } : {}),
            trace: trace(matched, mask, e),
          };
    }
  }

  // Step 4: each policy's boundary for the action (allow rules naming only raw_signature do not draw one).
  for (const policy of matched) {
    let bounded = false;
    let inside = false;
    for (const rule of policy.compiled.rules) {
      if (rule.effect !== 'allow' || (rule.mask & actionBit) === 0) continue;
      bounded = true;
      if (evaluateRule(rule, policy, e) === T) {
        inside = true;
        break;
      }
    }
    if (bounded && !inside) {
      return { effect: 'deny', reason: 'outside-boundary', policyId: policy.source.id, trace: trace(matched, mask, e) };
    }
  }

  // Step 5: a raw signature needs an allow rule naming raw_signature that holds.
  if (request.rawSignature) {
    let allowed = false;
    for (const policy of matched) {
      for (const rule of policy.compiled.rules) {
        if (rule.effect === 'allow' && rule.namesRaw && evaluateRule(rule, policy, e) === T) {
          allowed = true;
          break;
        }
      }
      if (allowed) break;
    }
    if (!allowed) return { effect: 'deny', reason: 'raw-signature-not-allowed', trace: trace(matched, mask, e) };
  }

  // Step 6: holds (deny has already won).
  for (const policy of matched) {
    for (const rule of policy.compiled.rules) {
      if (rule.effect !== 'require_approval' || (rule.mask & mask) === 0) continue;
      if (evaluateRule(rule, policy, e) === F) continue;
      return {
        effect: 'hold',
        policyId: policy.source.id,
        ruleId: rule.id,
        ...(rule.approval ? { approval: rule.approval } : {}),
        reservations: reservations(matched, mask, e),
        trace: trace(matched, mask, e),
      };
    }
  }

  return { effect: 'allow', reservations: reservations(matched, mask, e), trace: trace(matched, mask, e) };
}
