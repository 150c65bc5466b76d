/**
 * A signing policy as a partner writes it (POLICIES.md §1), in the shape `validatePolicy` returns once every rule of
 * the schema holds. The service's own fields (`id`, `status`, `version`, `revision`, `apiKeyId`) are not part of the
 * document: the store keeps them beside it.
 */
import type { FactName, IntegerOperator, PolicyAction, PolicyEffect } from '../../../chains/domain/policies.ts';
import type { WalletType } from '../../../chains/domain/wallets.ts';

export interface PolicyDocument {
  name: string;
  /** Only `guardrail` validates (`delegation` is refused as unavailable). */
  layer: 'guardrail';
  scope: PolicyScope;
  rules: PolicyRule[];
}

export interface PolicyScope {
  walletType: WalletType;
  /** Absent: every wallet of the type. */
  walletIds?: string[];
  /** The selector, a set of networks; absent: every network, and requests that name none. */
  networks?: string[];
}

export interface PolicyRule {
  /** Unique within its policy; named by denials and holds. */
  id: string;
  effect: PolicyEffect;
  /** `['all']` only on `deny` and `require_approval`. */
  actions: PolicyAction[] | ['all'];
  /** AND of the conditions; absent or empty: the rule holds for every request it applies to. */
  conditions?: Condition[];
  /** Only on `require_approval`: who must approve; without it the hold is a review. */
  approval?: ApprovalBlock;
}

export interface ApprovalBlock {
  stages: Array<{ role: string; threshold: number }>;
}

export type Condition = FactLeaf | SpendLeaf | { all: Condition[] } | { any: Condition[] } | { not: Condition };

export type FactLeaf =
  | { fact: FactName; op: 'eq' | 'ne'; value: string }
  | { fact: FactName; op: 'in' | 'not_in'; value: string[] }
  | { fact: FactName; op: IntegerOperator; value: string };

/**
 * The window's total for (key, wallet, network, asset) plus this request's amount of `asset`, compared with `value`
 * (base units). Exported operator lists: chains/domain/policies.ts.
 */
export interface SpendLeaf {
  spend: { asset: string; window: string };
  op: IntegerOperator;
  value: string;
}
