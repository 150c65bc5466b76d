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
  type CompiledSpend,
  compilePolicy,
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
  /** Each window a spend leaf read: what it had counted, and this request's amount (null: unknown). */
  spend: Array<SpendKey & { counted: string; amount: string | null }>;
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

interface Policy {
  source: ActivePolicy;
  compiled: CompiledPolicy;
}

/** The state of one evaluation: the request, the spend windows read, the fact behind the last indeterminate result. */
class Evaluation {
  missing: UnavailableFact | undefined;
  readonly network: string | null;
  readonly evm: boolean;
  private readonly reads = new Map<string, { key: SpendKey; counted: bigint; amount: bigint | null }>();

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

  /** The request's amount of `spend.match`: a bigint, or null when its bytes do not tell. */
  amount(spend: CompiledSpend): bigint | null {
    const { moved, complete } = this.request.chain.spend;
    for (const entry of moved) {
      const asset = this.evm ? entry.asset.toLowerCase() : entry.asset;
      if (asset === spend.match) return parseUnsigned(entry.amount);
    }
    return complete ? 0n : null;
  }

  windowStart(spend: CompiledSpend): number | null {
    const at = this.request.at;
    return Number.isFinite(at) && at >= 0 ? Math.floor(at / spend.windowMs) * spend.windowMs : null;
  }

  /** What the window counted before this request, read once per key. */
  counted(key: SpendKey, amount: bigint | null): bigint {
    const id = `${key.policyId}\u0000${key.ruleId}\u0000${key.asset}\u0000${key.window}`;
    const read = this.reads.get(id);
    if (read) return read.counted;
    const counted = this.lookup(key);
    if (typeof counted !== 'bigint' || counted < 0n) {
      throw new TypeError(`the spend lookup answered ${String(counted)} for ${id}: it must be a bigint >= 0`);
    }
    this.reads.set(id, { key, counted, amount });
    return counted;
  }

  spendTrace(): DecisionTrace['spend'] {
    return [...this.reads.values()].map(({ key, counted, amount }) => ({
      ...key,
      counted: counted.toString(),
      amount: amount === null ? null : amount.toString(),
    }));
  }
}

const DIGITS = /^[0-9]{1,80}$/;

/** A decimal string as a bigint; null for anything else (a fact that is not a number is as good as absent). */
function parseUnsigned(value: unknown): bigint | null {
  return typeof value === 'string' && DIGITS.test(value) ? BigInt(value) : null;
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

function evaluate(condition: CompiledCondition, policyId: string, ruleId: string, e: Evaluation): Truth {
  switch (condition.kind) {
    case 'all': {
      let missing: UnavailableFact | undefined;
      for (const item of condition.items) {
        const truth = evaluate(item, policyId, ruleId, e);
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
        const truth = evaluate(item, policyId, ruleId, e);
        if (truth === T) return T;
        if (truth === U && missing === undefined) missing = e.missing;
      }
      if (missing === undefined) return F;
      e.missing = missing;
      return U;
    }
    case 'not': {
      const truth = evaluate(condition.item, policyId, ruleId, e);
      return truth === U ? U : truth === T ? F : T;
    }
    case 'fact': {
      const raw = e.fact(condition.fact);
      if (raw === undefined) {
        e.missing = condition.fact;
        return U;
      }
      let value: string = raw;
      let number: bigint | null = null;
      if (condition.integer) {
        number = parseUnsigned(raw);
        // A malformed integer fact is as good as an absent one: never a guess.
        if (number === null) {
          e.missing = condition.fact;
          return U;
        }
        value = number.toString();
      } else if (condition.foldCase) {
        value = raw.toLowerCase();
      }
      switch (condition.op) {
        case 'eq':
        case 'in':
          return condition.set.has(value) ? T : F;
        case 'ne':
        case 'not_in':
          return condition.set.has(value) ? F : T;
        default:
          return number !== null && compare(condition.op, number, condition.limit) ? T : F;
      }
    }
    case 'spend': {
      const network = e.network;
      if (network === null) {
        e.missing = 'network';
        return U;
      }
      const windowStart = e.windowStart(condition);
      const amount = e.amount(condition);
      if (windowStart === null || amount === null) {
        e.missing = 'spend';
        return U;
      }
      const key: SpendKey = {
        policyId,
        ruleId,
        network,
        asset: condition.match,
        window: condition.window,
        windowStart,
      };
      return compare(condition.op, e.counted(key, amount) + amount, condition.limit) ? T : F;
    }
  }
}

function evaluateRule(rule: CompiledRule, policyId: string, e: Evaluation): Truth {
  e.missing = undefined;
  return rule.condition === null ? T : evaluate(rule.condition, policyId, rule.id, e);
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

/** The amounts the request adds to the windows of the rules that apply to it (POLICIES.md §4). */
function reservations(matched: Policy[], mask: number, e: Evaluation): SpendReservation[] {
  const out: SpendReservation[] = [];
  const network = e.network;
  if (network === null) return out;
  const seen = new Set<string>();
  for (const { source, compiled } of matched) {
    for (const rule of compiled.rules) {
      if ((rule.mask & mask) === 0) continue;
      for (const spend of rule.spends) {
        const amount = e.amount(spend);
        const windowStart = e.windowStart(spend);
        if (amount === null || amount === 0n || windowStart === null) continue;
        const id = `${source.id}\u0000${rule.id}\u0000${spend.match}\u0000${spend.window}`;
        if (seen.has(id)) continue;
        seen.add(id);
        out.push({
          policyId: source.id,
          ruleId: rule.id,
          network,
          asset: spend.match,
          window: spend.window,
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
    for (const rule of compiled.rules) {
      if ((rule.mask & mask) === 0) continue;
      for (const name of rule.facts) {
        if (!(name in facts)) facts[name] = e.fact(name) ?? null;
      }
    }
  }
  return {
    policies: matched.map(({ source }) => ({ policyId: source.id, version: source.version })),
    facts,
    spend: e.spendTrace(),
  };
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
  for (const source of [...policies].sort(byAge)) {
    const compiled = compilePolicy(source.document, source.id);
    if (matches(compiled, request)) matched.push({ source, compiled });
  }

  // Step 3: deny rules.
  for (const { source, compiled } of matched) {
    for (const rule of compiled.rules) {
      if (rule.effect !== 'deny' || (rule.mask & mask) === 0) continue;
      const truth = evaluateRule(rule, source.id, e);
      if (truth === F) continue;
      const denial = { effect: 'deny' as const, policyId: source.id, ruleId: rule.id };
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
  for (const { source, compiled } of matched) {
    let bounded = false;
    let inside = false;
    for (const rule of compiled.rules) {
      if (rule.effect !== 'allow' || (rule.mask & actionBit) === 0) continue;
      bounded = true;
      if (evaluateRule(rule, source.id, e) === T) {
        inside = true;
        break;
      }
    }
    if (bounded && !inside) {
      return { effect: 'deny', reason: 'outside-boundary', policyId: source.id, trace: trace(matched, mask, e) };
    }
  }

  // Step 5: a raw signature needs an allow rule naming raw_signature that holds.
  if (request.rawSignature) {
    let allowed = false;
    for (const { source, compiled } of matched) {
      for (const rule of compiled.rules) {
        if (rule.effect === 'allow' && rule.namesRaw && evaluateRule(rule, source.id, e) === T) {
          allowed = true;
          break;
        }
      }
      if (allowed) break;
    }
    if (!allowed) return { effect: 'deny', reason: 'raw-signature-not-allowed', trace: trace(matched, mask, e) };
  }

  // Step 6: holds (deny has already won).
  for (const { source, compiled } of matched) {
    for (const rule of compiled.rules) {
      if (rule.effect !== 'require_approval' || (rule.mask & mask) === 0) continue;
      if (evaluateRule(rule, source.id, e) === F) continue;
      return {
        effect: 'hold',
        policyId: source.id,
        ruleId: rule.id,
        ...(rule.approval ? { approval: rule.approval } : {}),
        reservations: reservations(matched, mask, e),
        trace: trace(matched, mask, e),
      };
    }
  }

  return { effect: 'allow', reservations: reservations(matched, mask, e), trace: trace(matched, mask, e) };
}
