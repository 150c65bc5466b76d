/**
 * Validation of a policy document (POLICIES.md §1): every error with its code, a JSON-pointer `path` into the document
 * and a `message` a partner can act on. Pure; the bounds of POLICY_LIMITS keep a hostile document cheap (each value
 * is visited at most once, descent stops at the bounds, and validation stops after `POLICY_LIMITS.errors` errors).
 */

import { describeType } from '../../../chains/describe-type.ts';
import {
  ALL_ACTIONS,
  CONDITION_COMBINATORS,
  CONDITION_OPERATORS,
  type ConditionOperator,
  FACT_NAMES,
  FACTS_BY_WALLET_TYPE,
  type FactName,
  INTEGER_FACTS,
  INTEGER_OPERATORS,
  type IntegerOperator,
  NATIVE_ASSET,
  NETWORK_SELECTORS,
  POLICY_ACTIONS,
  POLICY_EFFECTS,
  type PolicyAction,
  type PolicyEffect,
  type PolicyErrorCode,
  SPEND_ASSETS,
  spendWindowMs,
  WALLET_FACTS,
} from '../../../chains/domain/policies.ts';
import { WALLET_TYPES, type WalletType } from '../../../chains/domain/wallets.ts';
import { isPlainObject } from '../../../chains/is-plain-object.ts';
import { actionsOfWalletType } from './policy-actions.ts';
import type { ApprovalBlock, Condition, PolicyDocument, PolicyRule, PolicyScope } from './policy-document.ts';
import { IDENTIFIER, MAX_UINT256, POLICY_LIMITS, WALLET_ID } from './policy-limits.ts';

export interface PolicyValidationError {
  code: PolicyErrorCode;
  /** JSON pointer (RFC 6901) to the value at fault; `''` is the document itself. */
  path: string;
  message: string;
}

export type PolicyValidation =
  | { valid: true; policy: PolicyDocument }
  | { valid: false; errors: PolicyValidationError[] };

const L = POLICY_LIMITS;
const DECIMAL = /^(?:0|[1-9][0-9]*)$/;
const READ_ONLY = new Set(['id', 'status', 'version', 'revision', 'apiKeyId', 'createdAt', 'updatedAt']);
const STRING_OPS: ReadonlySet<string> = new Set(['eq', 'ne']);
const LIST_OPS: ReadonlySet<string> = new Set(['in', 'not_in']);
const INTEGER_OPS: ReadonlySet<string> = new Set(INTEGER_OPERATORS);
const INTEGER_FACT_SET: ReadonlySet<string> = new Set(INTEGER_FACTS);
const WALLET_FACT_SET: ReadonlySet<string> = new Set(WALLET_FACTS);

/** RFC 6901: `~` is written `~0` and `/` is written `~1` inside a reference token. */
function pointer(parent: string, token: string | number): string {
  return `${parent}/${String(token).replaceAll('~', '~0').replaceAll('/', '~1')}`;
}

function quote(text: string): string {
  return JSON.stringify(text.length > 64 ? `${text.slice(0, 64)}…` : text);
}

function oneOf(values: readonly string[]): string {
  return values.join(', ');
}

interface RuleContext {
  walletType: WalletType | undefined;
  /** The rule names `raw_signature`: its conditions may read only `wallet.*`. */
  raw: boolean;
  nodes: number;
}

class Validator {
  readonly errors: PolicyValidationError[] = [];
  private policyNodes = 0;
  private listItems = 0;

  get full(): boolean {
    return this.errors.length >= L.errors;
  }

  error(code: PolicyErrorCode, path: string, message: string): undefined {
    if (!this.full) this.errors.push({ code, path, message });
    return undefined;
  }

  invalid(path: string, message: string): undefined {
    return this.error('partner_policy_schema_invalid', path, message);
  }

  /** Reports each key of `object` outside `known` (read-only service fields named as such). */
  unknownFields(object: Record<string, unknown>, path: string, known: readonly string[], what: string): void {
    for (const key of Object.keys(object)) {
      if (this.full) return;
      if (known.includes(key)) continue;
      const field = quote(key);
      this.error(
        'policy_schema_field_unknown',
        pointer(path, key),
        path === '' && READ_ONLY.has(key)
          ? `${field} is set by the service and is not part of the policy document: leave it out`
          : `${field} is not a field of ${what} (fields: ${oneOf(known)})`,
      );
    }
  }

  string(value: unknown, path: string, what: string, max: number, pattern?: RegExp): string | undefined {
    if (value === undefined) return this.invalid(path, `${what} is required`);
    if (typeof value !== 'string') return this.invalid(path, `${what} must be a string, got ${describeType(value)}`);
    if (value.length === 0 || value.length > max) {
      return this.invalid(path, `${what} must be 1 to ${max} characters, got ${value.length}`);
    }
    if (!value.isWellFormed())
      return this.invalid(path, `${what} must be well-formed Unicode (it holds a lone surrogate)`);
    if (pattern && !pattern.test(value))
      return this.invalid(path, `${what} ${quote(value)} does not match ${pattern.source}`);
    return value;
  }

  array(value: unknown, path: string, what: string, min: number, max: number): unknown[] | undefined {
    if (!Array.isArray(value)) return this.invalid(path, `${what} must be an array, got ${describeType(value)}`);
    if (value.length < min || value.length > max) {
      return this.invalid(
        path,
        min === max
          ? `${what} must have ${min} items`
          : `${what} must have ${min} to ${max} items, got ${value.length}`,
      );
    }
    return value;
  }

  /** An unsigned integer as a canonical decimal string, at most 2^256 - 1. */
  integer(value: unknown, path: string, what: string): string | undefined {
    if (value === undefined) return this.invalid(path, `${what} is required: an unsigned integer as a decimal string`);
    if (typeof value !== 'string') {
      return this.invalid(
        path,
        `${what} must be an unsigned integer written as a decimal string in base units, got ${describeType(value)}`,
      );
    }
    if (value.length > L.integerDigits || !DECIMAL.test(value) || BigInt(value) > MAX_UINT256) {
      return this.invalid(
        path,
        `${what} must be an unsigned integer as a decimal string (no sign, point, exponent or leading zero), at most 2^256 - 1`,
      );
    }
    return value;
  }

  document(doc: unknown): PolicyDocument | undefined {
    if (!isPlainObject(doc)) return this.invalid('', `a policy must be a JSON object, got ${describeType(doc)}`);
    // The layer first: a delegation policy is refused as a whole, whatever else it holds.
    const layer = doc['layer'];
    if (layer === 'delegation') {
      return this.error(
        'permissions_v2_extension_unavailable',
        '/layer',
        'delegation policies (user-owned wallets) are not available: this service has no end-user sessions; write a guardrail',
      );
    }
    if (layer !== 'guardrail') {
      this.error(
        'layer_invalid',
        '/layer',
        layer === undefined
          ? 'layer is required: guardrail (policies of app-owned wallets)'
          : `layer must be guardrail, got ${typeof layer === 'string' ? quote(layer) : describeType(layer)}`,
      );
    }
    this.unknownFields(doc, '', ['name', 'layer', 'scope', 'rules'], 'a policy');
    const name = this.string(doc['name'], '/name', 'name', L.nameLength);
    const scope = this.scope(doc['scope']);
    const rules = this.rules(doc['rules'], scope?.walletType);
    if (this.errors.length > 0 || !name || !scope || !rules) return undefined;
    return { name, layer: 'guardrail', scope, rules };
  }

  scope(value: unknown): PolicyScope | undefined {
    if (value === undefined) return this.invalid('/scope', 'scope is required, with at least walletType');
    if (!isPlainObject(value)) return this.invalid('/scope', `scope must be an object, got ${describeType(value)}`);
    this.unknownFields(value, '/scope', ['walletType', 'walletIds', 'networks'], 'scope');
    const type = value['walletType'];
    let walletType: WalletType | undefined;
    if (type === undefined) {
      this.invalid('/scope/walletType', `scope.walletType is required (${oneOf(WALLET_TYPES)})`);
    } else if (typeof type !== 'string' || !(WALLET_TYPES as readonly string[]).includes(type)) {
      this.invalid('/scope/walletType', `scope.walletType must be one of ${oneOf(WALLET_TYPES)}`);
    } else {
      walletType = type as WalletType;
    }
    const scope: Partial<PolicyScope> = {};
    if (value['walletIds'] !== undefined) {
      const ids = this.array(value['walletIds'], '/scope/walletIds', 'scope.walletIds', 1, L.walletIds);
      if (ids) scope.walletIds = this.uniqueStrings(ids, '/scope/walletIds', 'a wallet id', 128, WALLET_ID);
    }
    if (value['networks'] !== undefined) {
      const networks = this.array(value['networks'], '/scope/networks', 'scope.networks', 1, L.networks);
      if (networks) scope.networks = this.networks(networks, walletType);
    }
    if (!walletType) return undefined;
    return { walletType, ...scope };
  }

  uniqueStrings(items: unknown[], path: string, what: string, max: number, pattern: RegExp): string[] | undefined {
    const seen = new Set<string>();
    let ok = true;
    items.forEach((item, i) => {
      if (this.full) return;
      const text = this.string(item, pointer(path, i), what, max, pattern);
      if (text === undefined) ok = false;
      else if (seen.has(text)) {
        ok = false;
        this.invalid(pointer(path, i), `${what} ${quote(text)} is listed twice`);
      } else seen.add(text);
    });
    return ok ? [...seen] : undefined;
  }

  networks(items: unknown[], walletType: WalletType | undefined): string[] | undefined {
    const selector = walletType ? NETWORK_SELECTORS[walletType] : undefined;
    const seen = new Set<string>();
    let ok = true;
    items.forEach((item, i) => {
      if (this.full) return;
      const path = pointer('/scope/networks', i);
      const network = this.string(item, path, 'a network', 64);
      if (network === undefined) {
        ok = false;
      } else if (selector && !selector.pattern.test(network)) {
        ok = false;
        this.invalid(
          path,
          `${quote(network)} is not a ${walletType} network selector (for example ${selector.example}; syntax ${selector.pattern.source})`,
        );
      } else if (seen.has(network)) {
        ok = false;
        this.invalid(path, `network ${quote(network)} is listed twice (the selector is a set)`);
      } else seen.add(network);
    });
    return ok ? [...seen] : undefined;
  }

  rules(value: unknown, walletType: WalletType | undefined): PolicyRule[] | undefined {
    if (value === undefined) return this.invalid('/rules', 'rules is required: an array of 1 to 50 rules');
    const items = this.array(value, '/rules', 'rules', 1, L.rules);
    if (!items) return undefined;
    const ids = new Set<string>();
    const rules: PolicyRule[] = [];
    let ok = true;
    items.forEach((item, i) => {
      if (this.full) return;
      const rule = this.rule(item, pointer('/rules', i), walletType);
      if (!rule) {
        ok = false;
        return;
      }
      if (ids.has(rule.id)) {
        ok = false;
        this.invalid(pointer(pointer('/rules', i), 'id'), `rule id ${quote(rule.id)} is used by an earlier rule`);
      }
      ids.add(rule.id);
      rules.push(rule);
    });
    return ok ? rules : undefined;
  }

  rule(value: unknown, path: string, walletType: WalletType | undefined): PolicyRule | undefined {
    if (!isPlainObject(value)) return this.invalid(path, `a rule must be an object, got ${describeType(value)}`);
    this.unknownFields(value, path, ['id', 'effect', 'actions', 'conditions', 'approval'], 'a rule');
    const errorsBefore = this.errors.length;
    const id = this.string(value['id'], pointer(path, 'id'), 'id', 64, IDENTIFIER);
    let effect: PolicyEffect | undefined;
    const rawEffect = value['effect'];
    if (typeof rawEffect !== 'string' || !(POLICY_EFFECTS as readonly string[]).includes(rawEffect)) {
      this.invalid(pointer(path, 'effect'), `effect must be one of ${oneOf(POLICY_EFFECTS)}`);
    } else {
      effect = rawEffect as PolicyEffect;
    }
    const actions = this.actions(value['actions'], pointer(path, 'actions'), effect, walletType);
    const context: RuleContext = {
      walletType,
      raw: actions !== undefined && (actions as string[]).includes('raw_signature'),
      nodes: 0,
    };
    let conditions: Condition[] | undefined;
    if (value['conditions'] !== undefined) {
      conditions = this.conditionList(value['conditions'], pointer(path, 'conditions'), 'conditions', 1, context);
    }
    let approval: ApprovalBlock | undefined;
    if (value['approval'] !== undefined) {
      if (effect !== undefined && effect !== 'require_approval') {
        this.invalid(
          pointer(path, 'approval'),
          `approval applies to require_approval rules only; this rule's effect is ${effect}`,
        );
      } else {
        approval = this.approval(value['approval'], pointer(path, 'approval'));
      }
    }
    if (this.errors.length > errorsBefore || !id || !effect || !actions) return undefined;
    return {
      id,
      effect,
      actions,
      ...(conditions !== undefined ? { conditions } : {}),
      ...(approval !== undefined ? { approval } : {}),
    };
  }

  actions(
    value: unknown,
    path: string,
    effect: PolicyEffect | undefined,
    walletType: WalletType | undefined,
  ): PolicyRule['actions'] | undefined {
    if (value === undefined) return this.invalid(path, `actions is required: ${oneOf(POLICY_ACTIONS)}, or all`);
    const items = this.array(value, path, 'actions', 1, L.actions);
    if (!items) return undefined;
    if (items.includes(ALL_ACTIONS)) {
      if (items.length > 1) return this.invalid(path, 'all names every action: it must be the only item of actions');
      if (effect === 'allow') {
        return this.invalid(
          pointer(path, 0),
          'all is allowed only on deny and require_approval rules: an allow rule names the actions it allows',
        );
      }
      return [ALL_ACTIONS];
    }
    const possible = walletType ? actionsOfWalletType(walletType) : undefined;
    const seen = new Set<PolicyAction>();
    let ok = true;
    items.forEach((item, i) => {
      if (this.full) return;
      const at = pointer(path, i);
      if (typeof item !== 'string' || !(POLICY_ACTIONS as readonly string[]).includes(item)) {
        ok = false;
        this.invalid(at, `an action must be one of ${oneOf(POLICY_ACTIONS)}, or all alone`);
      } else if (seen.has(item as PolicyAction)) {
        ok = false;
        this.invalid(at, `action ${item} is listed twice`);
      } else if (possible && !possible.has(item as PolicyAction)) {
        ok = false;
        this.invalid(
          at,
          `${walletType} wallets never do ${item}, so this rule could never apply (their actions: ${oneOf([...possible])})`,
        );
      } else seen.add(item as PolicyAction);
    });
    return ok ? [...seen] : undefined;
  }

  approval(value: unknown, path: string): ApprovalBlock | undefined {
    if (!isPlainObject(value)) {
      return this.invalid(path, `approval must be an object {stages: [{role, threshold}]}, got ${describeType(value)}`);
    }
    this.unknownFields(value, path, ['stages'], 'an approval block');
    if (value['stages'] === undefined) return this.invalid(pointer(path, 'stages'), 'approval.stages is required');
    const items = this.array(value['stages'], pointer(path, 'stages'), 'approval.stages', 1, L.approvalStages);
    if (!items) return undefined;
    const stages: ApprovalBlock['stages'] = [];
    let ok = true;
    items.forEach((item, i) => {
      if (this.full) return;
      const at = pointer(pointer(path, 'stages'), i);
      if (!isPlainObject(item)) {
        ok = false;
        this.invalid(at, `a stage must be an object {role, threshold}, got ${describeType(item)}`);
        return;
      }
      this.unknownFields(item, at, ['role', 'threshold'], 'an approval stage');
      const role = this.string(item['role'], pointer(at, 'role'), 'role', 64, IDENTIFIER);
      const threshold = item['threshold'];
      if (
        !Number.isSafeInteger(threshold) ||
        (threshold as number) < 1 ||
        (threshold as number) > L.approvalThreshold
      ) {
        ok = false;
        this.invalid(
          pointer(at, 'threshold'),
          `threshold must be an integer from 1 to ${L.approvalThreshold} (approvals that complete the stage)`,
        );
      }
      if (role === undefined) ok = false;
      if (ok) stages.push({ role: role!, threshold: threshold as number });
    });
    return ok ? { stages } : undefined;
  }

  conditionList(
    value: unknown,
    path: string,
    what: string,
    depth: number,
    context: RuleContext,
  ): Condition[] | undefined {
    // A rule's own conditions may be empty (the rule always holds); all/any must say something.
    const items = this.array(value, path, what, what === 'conditions' ? 0 : 1, L.conditionsPerRule);
    if (!items) return undefined;
    const out: Condition[] = [];
    let ok = true;
    for (let i = 0; i < items.length; i++) {
      if (this.full) return undefined;
      const condition = this.condition(items[i], pointer(path, i), depth, context);
      if (condition === undefined) ok = false;
      else out.push(condition);
    }
    return ok ? out : undefined;
  }

  condition(value: unknown, path: string, depth: number, context: RuleContext): Condition | undefined {
    if (++context.nodes > L.conditionsPerRule) {
      // Reported once, where the count is first passed.
      return context.nodes === L.conditionsPerRule + 1
        ? this.invalid(path, `a rule may hold at most ${L.conditionsPerRule} conditions (leaves and all/any/not)`)
        : undefined;
    }
    if (++this.policyNodes > L.conditionsPerPolicy) {
      return this.policyNodes === L.conditionsPerPolicy + 1
        ? this.invalid(path, `a policy may hold at most ${L.conditionsPerPolicy} conditions in all its rules`)
        : undefined;
    }
    if (depth > L.conditionDepth) {
      return this.invalid(path, `conditions may be nested at most ${L.conditionDepth} levels deep`);
    }
    if (!isPlainObject(value)) {
      return this.invalid(
        path,
        `a condition must be an object ({fact, op, value}, {spend, op, value}, {all}, {any} or {not}), got ${describeType(value)}`,
      );
    }
    const combinator = CONDITION_COMBINATORS.find((key) => Object.hasOwn(value, key));
    if (combinator !== undefined) {
      this.unknownFields(value, path, [combinator], `an ${combinator} condition`);
      const inner = value[combinator];
      if (combinator === 'not') {
        const condition = this.condition(inner, pointer(path, 'not'), depth + 1, context);
        return condition === undefined ? undefined : { not: condition };
      }
      const list = this.conditionList(inner, pointer(path, combinator), combinator, depth + 1, context);
      if (list === undefined) return undefined;
      return combinator === 'all' ? { all: list } : { any: list };
    }
    if (Object.hasOwn(value, 'spend')) return this.spendLeaf(value, path, context);
    if (Object.hasOwn(value, 'fact')) return this.factLeaf(value, path, context);
    const keys = Object.keys(value);
    if (keys.length === 0 || keys.every((k) => k === 'op' || k === 'value')) {
      return this.invalid(
        pointer(path, 'fact'),
        `a condition needs fact (a leaf {fact, op, value}), spend, all, any or not`,
      );
    }
    this.unknownFields(value, path, ['fact', 'op', 'value'], 'a condition');
    return undefined;
  }

  operator(value: unknown, path: string): ConditionOperator | undefined {
    if (typeof value !== 'string' || !(CONDITION_OPERATORS as readonly string[]).includes(value)) {
      return this.invalid(path, `op must be one of ${oneOf(CONDITION_OPERATORS)}`);
    }
    return value as ConditionOperator;
  }

  factLeaf(value: Record<string, unknown>, path: string, context: RuleContext): Condition | undefined {
    this.unknownFields(value, path, ['fact', 'op', 'value'], 'a condition leaf');
    const errorsBefore = this.errors.length;
    const rawFact = value['fact'];
    let fact: FactName | undefined;
    if (typeof rawFact !== 'string' || !(FACT_NAMES as readonly string[]).includes(rawFact)) {
      this.invalid(
        pointer(path, 'fact'),
        `fact must be one of ${oneOf(FACT_NAMES)}${typeof rawFact === 'string' ? `, got ${quote(rawFact)}` : ''}`,
      );
    } else {
      fact = rawFact as FactName;
      if (context.raw && !WALLET_FACT_SET.has(fact)) {
        this.error(
          'fact_not_available',
          pointer(path, 'fact'),
          `this rule applies to raw_signature, whose requests carry only ${oneOf(WALLET_FACTS)}: ${fact} is never available`,
        );
      } else if (context.walletType && !FACTS_BY_WALLET_TYPE[context.walletType].includes(fact)) {
        this.error(
          'fact_not_available',
          pointer(path, 'fact'),
          `${context.walletType} requests never carry ${fact} (they carry ${oneOf(FACTS_BY_WALLET_TYPE[context.walletType])})`,
        );
      }
    }
    const op = this.operator(value['op'], pointer(path, 'op'));
    const at = pointer(path, 'value');
    const integerFact = fact !== undefined && INTEGER_FACT_SET.has(fact);
    let operand: string | string[] | undefined;
    if (op !== undefined && INTEGER_OPS.has(op)) {
      if (fact !== undefined && !integerFact) {
        this.invalid(
          pointer(path, 'op'),
          `${op} compares unsigned integers and ${fact} is a string: use ${oneOf(['eq', 'ne', 'in', 'not_in'])}`,
        );
      }
      operand = this.integer(value['value'], at, 'value');
    } else if (op !== undefined && STRING_OPS.has(op)) {
      operand = integerFact
        ? this.integer(value['value'], at, 'value')
        : this.string(value['value'], at, 'value', L.valueLength);
    } else if (op !== undefined && LIST_OPS.has(op)) {
      operand = this.list(value['value'], at, integerFact);
    }
    if (this.errors.length > errorsBefore || !fact || !op || operand === undefined) return undefined;
    return { fact, op, value: operand } as Condition;
  }

  list(value: unknown, path: string, integers: boolean): string[] | undefined {
    const items = this.array(value, path, 'value (for in and not_in)', 1, L.listItems);
    if (!items) return undefined;
    this.listItems += items.length;
    if (this.listItems > L.listItemsPerPolicy) {
      return this.invalid(
        path,
        `a policy's in and not_in lists may hold at most ${L.listItemsPerPolicy} values in all`,
      );
    }
    const out: string[] = [];
    let ok = true;
    for (let i = 0; i < items.length; i++) {
      if (this.full) return undefined;
      const at = pointer(path, i);
      const item = integers
        ? this.integer(items[i], at, 'a value')
        : this.string(items[i], at, 'a value', L.valueLength);
      if (item === undefined) ok = false;
      else out.push(item);
    }
    return ok ? out : undefined;
  }

  spendLeaf(value: Record<string, unknown>, path: string, context: RuleContext): Condition | undefined {
    this.unknownFields(value, path, ['spend', 'op', 'value'], 'a spend condition');
    const errorsBefore = this.errors.length;
    const spendPath = pointer(path, 'spend');
    if (context.raw) {
      this.error(
        'fact_not_available',
        spendPath,
        `this rule applies to raw_signature, whose requests carry only ${oneOf(WALLET_FACTS)}: spend is never available`,
      );
    }
    const spend = value['spend'];
    let asset: string | undefined;
    let window: string | undefined;
    if (!isPlainObject(spend)) {
      this.invalid(spendPath, `spend must be an object {asset, window}, got ${describeType(spend)}`);
    } else {
      this.unknownFields(spend, spendPath, ['asset', 'window'], 'spend');
      asset = this.spendAsset(spend['asset'], pointer(spendPath, 'asset'), context.walletType);
      const rawWindow = spend['window'];
      if (typeof rawWindow !== 'string' || spendWindowMs(rawWindow) === null) {
        this.invalid(
          pointer(spendPath, 'window'),
          'window must match ^[1-9][0-9]*(ms|m|h|d)$ (for example 24h), at most 366 days; windows are aligned to the Unix epoch',
        );
      } else {
        window = rawWindow;
      }
    }
    const op = this.operator(value['op'], pointer(path, 'op'));
    if (op !== undefined && !INTEGER_OPS.has(op)) {
      this.invalid(
        pointer(path, 'op'),
        `a spend condition compares an amount: op must be one of ${oneOf(INTEGER_OPERATORS)}`,
      );
    }
    const limit = this.integer(value['value'], pointer(path, 'value'), 'value');
    if (this.errors.length > errorsBefore || !asset || !window || !op || limit === undefined) return undefined;
    return { spend: { asset, window }, op: op as IntegerOperator, value: limit };
  }

  spendAsset(value: unknown, path: string, walletType: WalletType | undefined): string | undefined {
    const asset = this.string(value, path, 'asset', L.valueLength);
    if (asset === undefined || asset === NATIVE_ASSET || !walletType) return asset;
    const { pattern, noun } = SPEND_ASSETS[walletType];
    if (pattern === null) {
      return this.invalid(path, `${walletType} spend counts the native coin only: asset must be native`);
    }
    if (!pattern.test(asset)) {
      return this.invalid(path, `asset must be native or ${noun} on ${walletType} (syntax ${pattern.source})`);
    }
    return asset;
  }
}

/**
 * Checks a policy document against every rule of POLICIES.md §1 and returns it as the engine reads it (a fresh copy
 * of only the schema's fields), or every error found (at most `POLICY_LIMITS.errors`), each with its code, JSON-pointer
 * path and message. Never throws.
 */
export function validatePolicy(doc: unknown): PolicyValidation {
  const validator = new Validator();
  const policy = validator.document(doc);
  if (policy && validator.errors.length === 0) return { valid: true, policy };
  return { valid: false, errors: validator.errors };
}
