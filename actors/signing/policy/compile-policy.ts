/**
 * A valid policy document turned into what evaluation walks: action bitmasks, `in` lists as Sets (of bigints for
 * integer facts), EVM addresses lower-cased, each rule's spend windows as shared slots. Compiled once per document
 * object (documents are immutable per version), so a request pays only for the walk (test/bench/policy-eval.ts).
 */
import {
  EVM_CASE_INSENSITIVE_FACTS,
  type FactName,
  INTEGER_FACTS,
  type IntegerOperator,
  POLICY_ACTIONS,
  type PolicyAction,
  type PolicyEffect,
  spendWindowMs,
} from '../../../chains/domain/policies.ts';
import type { WalletType } from '../../../chains/domain/wallets.ts';
import type { ApprovalBlock, Condition, PolicyDocument } from './policy-document.ts';
import { validatePolicy } from './validate-policy.ts';

/** The bit of each action in a rule's or a request's action mask. */
export const ACTION_BIT: Readonly<Record<PolicyAction, number>> = Object.fromEntries(
  POLICY_ACTIONS.map((action, i) => [action, 1 << i]),
) as Record<PolicyAction, number>;

const ALL_BITS = (1 << POLICY_ACTIONS.length) - 1;
const RAW_BIT = ACTION_BIT.raw_signature;
const CASE_INSENSITIVE: ReadonlySet<string> = new Set(EVM_CASE_INSENSITIVE_FACTS);
const INTEGER: ReadonlySet<string> = new Set(INTEGER_FACTS);

/** How a leaf reads its fact: as written, lower-cased (EVM addresses and hex), or as an unsigned integer. */
export const READ_TEXT = 0;
export const READ_FOLDED = 1;
export const READ_INTEGER = 2;

export type CompiledCondition =
  | { kind: 'all' | 'any'; items: CompiledCondition[] }
  | { kind: 'not'; item: CompiledCondition }
  | {
      kind: 'member';
      fact: FactName;
      read: typeof READ_TEXT | typeof READ_FOLDED | typeof READ_INTEGER;
      /** in/eq: true; not_in/ne: false. */
      inside: boolean;
      set: ReadonlySet<string | bigint>;
    }
  | { kind: 'compare'; fact: FactName; op: IntegerOperator; limit: bigint }
  | { kind: 'spend'; slot: SpendSlot; op: IntegerOperator; limit: bigint };

/** One spend window of one rule: every leaf of the rule on the same asset and window shares it. */
export interface SpendSlot {
  /** The asset as the spend key names it and as moved assets are compared with it (EVM: lower-case). */
  asset: string;
  window: string;
  windowMs: number;
}

export interface CompiledRule {
  id: string;
  effect: PolicyEffect;
  /** The actions it applies to (every bit for `all`). */
  mask: number;
  /** It names `raw_signature` explicitly (step 5 of POLICIES.md §2). */
  namesRaw: boolean;
  /** null: no conditions, the rule holds. */
  condition: CompiledCondition | null;
  /** Its spend windows, each once. */
  slots: SpendSlot[];
  /** The facts its conditions read, for the decision's trace. */
  facts: FactName[];
  approval?: ApprovalBlock;
}

export interface CompiledPolicy {
  walletType: WalletType;
  walletIds: ReadonlySet<string> | null;
  networks: ReadonlySet<string> | null;
  rules: CompiledRule[];
  /** The facts read by the rules that apply to a request's action mask, computed once per mask. */
  factsFor(mask: number): readonly FactName[];
}

const cache = new WeakMap<PolicyDocument, CompiledPolicy>();

/**
 * The compiled form of a stored policy document. Throws when the document is not valid (the store keeps only
 * documents `validatePolicy` accepted: anything else is a fault, and nothing is signed on it).
 */
export function compilePolicy(document: PolicyDocument, name: string): CompiledPolicy {
  const cached = cache.get(document);
  if (cached) return cached;
  const checked = validatePolicy(document);
  if (!checked.valid) {
    const first = checked.errors[0]!;
    throw new Error(`policy ${name} is not a valid policy document (${first.code} at ${first.path}: ${first.message})`);
  }
  const { scope, rules } = checked.policy;
  const evm = scope.walletType === 'EVM';
  const compiledRules: CompiledRule[] = rules.map((rule) => {
    const slots = new Map<string, SpendSlot>();
    const facts = new Set<FactName>();
    const conditions = rule.conditions ?? [];
    const condition =
      conditions.length === 0
        ? null
        : compileCondition(conditions.length === 1 ? conditions[0]! : { all: conditions }, evm, slots, facts);
    const mask =
      rule.actions[0] === 'all'
        ? ALL_BITS
        : (rule.actions as PolicyAction[]).reduce((bits, action) => bits | ACTION_BIT[action], 0);
    return {
      id: rule.id,
      effect: rule.effect,
      mask,
      namesRaw: rule.actions[0] !== 'all' && (mask & RAW_BIT) !== 0,
      condition,
      slots: [...slots.values()],
      facts: [...facts],
      ...(rule.approval ? { approval: rule.approval } : {}),
    };
  });
  const byMask = new Map<number, readonly FactName[]>();
  const compiled: CompiledPolicy = {
    walletType: scope.walletType,
    walletIds: scope.walletIds ? new Set(scope.walletIds) : null,
    networks: scope.networks ? new Set(scope.networks) : null,
    rules: compiledRules,
    factsFor(mask) {
      let facts = byMask.get(mask);
      if (!facts) {
        facts = [...new Set(compiledRules.filter((r) => (r.mask & mask) !== 0).flatMap((r) => r.facts))];
        byMask.set(mask, facts);
      }
      return facts;
    },
  };
  cache.set(document, compiled);
  return compiled;
}

function compileCondition(
  condition: Condition,
  evm: boolean,
  slots: Map<string, SpendSlot>,
  facts: Set<FactName>,
): CompiledCondition {
  if ('all' in condition)
    return { kind: 'all', items: condition.all.map((c) => compileCondition(c, evm, slots, facts)) };
  if ('any' in condition)
    return { kind: 'any', items: condition.any.map((c) => compileCondition(c, evm, slots, facts)) };
  if ('not' in condition) return { kind: 'not', item: compileCondition(condition.not, evm, slots, facts) };
  if ('spend' in condition) {
    const asset = evm ? condition.spend.asset.toLowerCase() : condition.spend.asset;
    const { window } = condition.spend;
    const id = `${asset}\u0000${window}`;
    let slot = slots.get(id);
    if (!slot) {
      slot = { asset, window, windowMs: spendWindowMs(window)! };
      slots.set(id, slot);
    }
    return { kind: 'spend', slot, op: condition.op, limit: BigInt(condition.value) };
  }
  const { fact, op } = condition;
  facts.add(fact);
  if (op === 'lt' || op === 'lte' || op === 'gt' || op === 'gte') {
    return { kind: 'compare', fact, op, limit: BigInt(condition.value as string) };
  }
  const operands = typeof condition.value === 'string' ? [condition.value] : condition.value;
  const read = INTEGER.has(fact) ? READ_INTEGER : evm && CASE_INSENSITIVE.has(fact) ? READ_FOLDED : READ_TEXT;
  const set = new Set<string | bigint>(
    operands.map((value) =>
      read === READ_INTEGER ? BigInt(value) : read === READ_FOLDED ? value.toLowerCase() : value,
    ),
  );
  return { kind: 'member', fact, read, inside: op === 'eq' || op === 'in', set };
}
