/**
 * The bounds of a policy document. They keep a hostile document cheap: validation visits each value at most once and
 * stops descending at these bounds (and after `errors` errors), and evaluation, which only ever sees valid documents,
 * is linear in rules × condition nodes with every `in` list a Set. The figures are generous for what a partner writes
 * (POLICIES.md's worked policies use a handful of rules and conditions).
 */
export const POLICY_LIMITS = {
  /** Rules in one policy. */
  rules: 50,
  /** Nesting of conditions: a rule's `conditions` array is level 1, each `all`/`any`/`not` adds one. */
  conditionDepth: 8,
  /** Condition nodes (leaves and combinators) in one rule. */
  conditionsPerRule: 64,
  /** Condition nodes in one policy. */
  conditionsPerPolicy: 512,
  /** Strings in one `in` / `not_in` list. */
  listItems: 1000,
  /** Strings in all the `in` / `not_in` lists of one policy together. */
  listItemsPerPolicy: 4096,
  /** `scope.walletIds` entries. */
  walletIds: 1000,
  /** `scope.networks` entries. */
  networks: 64,
  /** Actions named by one rule (there are nine). */
  actions: 9,
  /** Stages of one approval block. */
  approvalStages: 5,
  /** An approval stage's threshold: at most this many approvers. */
  approvalThreshold: 50,
  /** Characters of `name`. */
  nameLength: 100,
  /** Characters of a string compared by a condition (an address, a name, a denom...). */
  valueLength: 256,
  /** Digits of an unsigned integer value: 2^256 - 1 has 78. */
  integerDigits: 78,
  /** Errors reported for one document; validation stops there. */
  errors: 50,
} as const;

/** A rule id, a stage role: a letter or digit, then letters, digits and `_ . - :`, at most 64 characters. */
export const IDENTIFIER = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$/;

/** A wallet id as `scope.walletIds` names it (any id this service issues fits). */
export const WALLET_ID = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;

/** The largest unsigned integer a condition compares: 2^256 - 1 (EVM's uint256; yield's `all`). */
export const MAX_UINT256 = 2n ** 256n - 1n;
