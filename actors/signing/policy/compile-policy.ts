/**
 * A valid policy document turned into what evaluation walks: action bitmasks, `in` lists as Sets, integer operands
 * as bigints, EVM addresses lower-cased, each rule's spend leaves listed for the reservations. Compiled once per
 * document object (documents are immutable per version), so a request pays only for the walk.
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

export type CompiledCondition =
  | { kind: 'all' | 'any'; items: CompiledCondition[] }
  | { kind: 'not'; item: CompiledCondition }
  | {
      kind: 'fact';
      fact: FactName;
      /** Lower-case the fact before testing it (EVM addresses and hex). */
      foldCase: boolean;
      /** The fact is an unsigned integer: tested as a bigint. */
      integer: boolean;
      op: 'eq' | 'ne' | 'in' | 'not_in' | IntegerOperator;
      /** eq/ne/in/not_in: the operands (strings; integers in canonical decimal). */
      set: ReadonlySet<string>;
      /** lt/lte/gt/gte: the operand. */
      limit: bigint;
    }
  | CompiledSpend;

export interface CompiledSpend {
  kind: 'spend';
  /** The asset as the spend key names it, and as the request's moved assets are compared with it (EVM: lower-case). */
  match: string;
  window: string;
  windowMs: number;
  op: IntegerOperator;
  limit: bigint;
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
  spends: CompiledSpend[];
  /** The facts its conditions read, for the decision's trace. */
  facts: FactName[];
  approval?: ApprovalBlock;
}

export interface CompiledPolicy {
  walletType: WalletType;
  walletIds: ReadonlySet<string> | null;
  networks: ReadonlySet<string> | null;
  rules: CompiledRule[];
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
  const compiled: CompiledPolicy = {
    walletType: scope.walletType,
    walletIds: scope.walletIds ? new Set(scope.walletIds) : null,
    networks: scope.networks ? new Set(scope.networks) : null,
    rules: rules.map((rule) => {
      const spends: CompiledSpend[] = [];
      const facts = new Set<FactName>();
      const conditions = rule.conditions ?? [];
      const condition =
        conditions.length === 0
          ? null
          : compileCondition(conditions.length === 1 ? conditions[0]! : { all: conditions }, evm, spends, facts);
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
        spends,
        facts: [...facts],
        ...(rule.approval ? { approval: rule.approval } : {}),
      };
    }),
  };
  cache.set(document, compiled);
  return compiled;
}

function canonicalInteger(value: string): string {
  return BigInt(value).toString();
}

function compileCondition(
  condition: Condition,
  evm: boolean,
  spends: CompiledSpend[],
  facts: Set<FactName>,
): CompiledCondition {
  if ('all' in condition)
    return { kind: 'all', items: condition.all.map((c) => compileCondition(c, evm, spends, facts)) };
  if ('any' in condition)
    return { kind: 'any', items: condition.any.map((c) => compileCondition(c, evm, spends, facts)) };
  if ('not' in condition) return { kind: 'not', item: compileCondition(condition.not, evm, spends, facts) };
  if ('spend' in condition) {
    const { asset, window } = condition.spend;
    const spend: CompiledSpend = {
      kind: 'spend',
      match: evm ? asset.toLowerCase() : asset,
      window,
      windowMs: spendWindowMs(window)!,
      op: condition.op,
      limit: BigInt(condition.value),
    };
    spends.push(spend);
    return spend;
  }
  const { fact, op } = condition;
  facts.add(fact);
  const foldCase = evm && CASE_INSENSITIVE.has(fact);
  const integer = INTEGER.has(fact);
  const operands = typeof condition.value === 'string' ? [condition.value] : condition.value;
  const normalize = (value: string) => (integer ? canonicalInteger(value) : foldCase ? value.toLowerCase() : value);
  const isIntegerOp = op === 'lt' || op === 'lte' || op === 'gt' || op === 'gte';
  return {
    kind: 'fact',
    fact,
    foldCase,
    integer,
    op,
    set: isIntegerOp ? new Set() : new Set(operands.map(normalize)),
    limit: isIntegerOp ? BigInt(condition.value as string) : 0n,
  };
}
