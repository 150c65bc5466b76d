/**
 * The signing-policy vocabulary (`/v1/permissions-v2`, POLICIES.md): layers, statuses, effects, actions, operators,
 * facts, the network selector syntax of each wallet type, spend windows and assets, the validation error codes and
 * the denial reasons, and `ChainFacts`, what the chain folders read from a signing request for the policy engine
 * (actors/signing/policy/). Part of the domain module (chains/domain/), which imports nothing but itself: the engine,
 * the chains' fact extractors, the TypeBox schemas and the drizzle columns take these lists from here.
 */
import type { WalletType } from './wallets.ts';

/**
 * A policy's layer: `guardrail` applies to app-owned (unclaimed) wallets; `delegation` (user-owned wallets) is named
 * by the spec but refused here (`permissions_v2_extension_unavailable`): this service has no end-user sessions.
 */
export const POLICY_LAYERS = ['guardrail', 'delegation'] as const;
export type PolicyLayer = (typeof POLICY_LAYERS)[number];

/** A stored policy's status; only `active` policies are evaluated. */
export const POLICY_STATUSES = ['draft', 'active', 'inactive'] as const;
export type PolicyStatus = (typeof POLICY_STATUSES)[number];

/** What a rule does when its conditions hold. */
export const POLICY_EFFECTS = ['allow', 'deny', 'require_approval'] as const;
export type PolicyEffect = (typeof POLICY_EFFECTS)[number];

/**
 * What a rule applies to. A request's actions are its route's (`sign_message`, `sign_raw`, `sign_transaction`,
 * `sign_typed_data`, `sign_authorization`, `transfer`, `yield_deposit`, `yield_withdraw`) plus `raw_signature` when the
 * spec counts it as one (`sign-raw` on every type, `sign-message` on COSMOS, SOLANA, STELLAR and SUI).
 */
export const POLICY_ACTIONS = [
  'sign_message',
  'raw_signature',
  'sign_raw',
  'sign_transaction',
  'sign_typed_data',
  'sign_authorization',
  'transfer',
  'yield_deposit',
  'yield_withdraw',
] as const;
export type PolicyAction = (typeof POLICY_ACTIONS)[number];

/** The action a request is made of (its route's), without `raw_signature`, which is added beside it. */
export type RequestAction = Exclude<PolicyAction, 'raw_signature'>;

/** In a rule's `actions`, every action; allowed only on `deny` and `require_approval` rules. */
export const ALL_ACTIONS = 'all';

/** Operators on strings and addresses (`value` a string for eq/ne, an array of strings for in/not_in). */
export const STRING_OPERATORS = ['eq', 'ne', 'in', 'not_in'] as const;
export type StringOperator = (typeof STRING_OPERATORS)[number];

/** Operators on unsigned integers given as decimal strings in base units. */
export const INTEGER_OPERATORS = ['lt', 'lte', 'gt', 'gte'] as const;
export type IntegerOperator = (typeof INTEGER_OPERATORS)[number];

export const CONDITION_OPERATORS = [...STRING_OPERATORS, ...INTEGER_OPERATORS] as const;
export type ConditionOperator = StringOperator | IntegerOperator;

/** Condition combinators: `{all: [...]}`, `{any: [...]}`, `{not: ...}` (a rule's `conditions` array is an `all`). */
export const CONDITION_COMBINATORS = ['all', 'any', 'not'] as const;
export type ConditionCombinator = (typeof CONDITION_COMBINATORS)[number];

/**
 * The facts a condition can read. `wallet.*` always exist; `network` when the request names one; `to`, `value`,
 * `asset` for a payment (a transfer, or a request with exactly one decodable payment); `tx.*` for EVM transactions;
 * `typedData.*` for EIP-712; `authorization.*` for EIP-7702; `chainId` (with `asset` and `value`) for yield. A fact
 * the request does not carry makes its condition indeterminate.
 */
export const FACT_NAMES = [
  'wallet.id',
  'wallet.type',
  'network',
  'to',
  'value',
  'asset',
  'tx.chainId',
  'tx.to',
  'tx.value',
  'tx.selector',
  'typedData.domain.name',
  'typedData.domain.version',
  'typedData.domain.chainId',
  'typedData.domain.verifyingContract',
  'typedData.primaryType',
  'authorization.address',
  'authorization.chainId',
  'chainId',
] as const;
export type FactName = (typeof FACT_NAMES)[number];

/** The facts of the wallet itself: the only ones a rule on `raw_signature` may read. */
export const WALLET_FACTS = ['wallet.id', 'wallet.type'] as const satisfies readonly FactName[];

/** The facts a chain folder extracts from a request (the engine adds the wallet's and `network`). */
export type ChainFactName = Exclude<FactName, 'wallet.id' | 'wallet.type' | 'network'>;

/** Facts holding unsigned integers (decimal strings): the integer operators apply to these only. */
export const INTEGER_FACTS = [
  'value',
  'tx.chainId',
  'tx.value',
  'typedData.domain.chainId',
  'authorization.chainId',
  'chainId',
] as const satisfies readonly FactName[];

/** On EVM wallets these facts (addresses and hex) compare case-insensitively. */
export const EVM_CASE_INSENSITIVE_FACTS = [
  'to',
  'asset',
  'tx.to',
  'tx.selector',
  'typedData.domain.verifyingContract',
  'authorization.address',
] as const satisfies readonly FactName[];

const COMMON_FACTS = ['wallet.id', 'wallet.type', 'network', 'to', 'value', 'asset'] as const;

/** The facts a request of each wallet type can carry; a policy reading another fails with `fact_not_available`. */
export const FACTS_BY_WALLET_TYPE: Readonly<Record<WalletType, readonly FactName[]>> = {
  EVM: FACT_NAMES,
  SOLANA: COMMON_FACTS,
  STELLAR: COMMON_FACTS,
  COSMOS: COMMON_FACTS,
  SUI: COMMON_FACTS,
};

/**
 * The network selector syntax of each wallet type (`scope.networks`, and the `network` fact): `eip155:<chainId>`,
 * `solana:mainnet` | `solana:devnet`, `stellar:pubnet` | `stellar:testnet`, `cosmos:<chain-id>`, `sui`.
 */
export const NETWORK_SELECTORS: Readonly<Record<WalletType, { pattern: RegExp; example: string }>> = {
  EVM: { pattern: /^eip155:[1-9][0-9]{0,31}$/, example: 'eip155:8453' },
  SOLANA: { pattern: /^solana:(?:mainnet|devnet)$/, example: 'solana:mainnet' },
  STELLAR: { pattern: /^stellar:(?:pubnet|testnet)$/, example: 'stellar:pubnet' },
  COSMOS: { pattern: /^cosmos:[a-zA-Z0-9][a-zA-Z0-9._-]{0,49}$/, example: 'cosmos:cosmoshub-4' },
  SUI: { pattern: /^sui$/, example: 'sui' },
};

/**
 * A request whose network cannot be known but could be any (a Solana transaction signed without `network`, an
 * EIP-7702 authorization with chain id 0): it matches every selector (fail-secure) and has no `network` fact.
 */
export const ANY_NETWORK = '*';

/** The asset name of a chain's native coin in facts, spend leaves and spend keys. */
export const NATIVE_ASSET = 'native';

/**
 * What a spend leaf's `asset` may name on each wallet type, besides `native`: an ERC-20 contract, an SPL mint,
 * `CODE:ISSUER` on Stellar, a Cosmos denom; Sui spend counts its native coin only.
 */
export const SPEND_ASSETS: Readonly<Record<WalletType, { pattern: RegExp | null; noun: string }>> = {
  EVM: { pattern: /^0x[0-9a-fA-F]{40}$/, noun: 'an ERC-20 contract address' },
  SOLANA: { pattern: /^[1-9A-HJ-NP-Za-km-z]{32,44}$/, noun: 'an SPL mint address' },
  STELLAR: { pattern: /^[A-Za-z0-9]{1,12}:G[A-Z2-7]{55}$/, noun: 'CODE:ISSUER' },
  COSMOS: { pattern: /^[a-zA-Z][a-zA-Z0-9/:._-]{2,127}$/, noun: 'a denom' },
  SUI: { pattern: null, noun: '' },
};

/** A spend window: a positive count of `ms`, `m` (minutes), `h` or `d`, aligned to the Unix epoch. */
export const SPEND_WINDOW = /^[1-9][0-9]*(ms|m|h|d)$/;

/** The longest spend window (366 days), so that a window's start and length stay exact integers of milliseconds. */
export const MAX_SPEND_WINDOW_MS = 366 * 24 * 60 * 60 * 1000;

const WINDOW_UNIT_MS: Readonly<Record<string, number>> = { ms: 1, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** The length of a spend window in milliseconds, or null when it is not one (syntax, or over 366 days). */
export function spendWindowMs(window: string): number | null {
  const match = SPEND_WINDOW.exec(window);
  if (!match || window.length > 16) return null;
  const ms = Number(window.slice(0, -match[1]!.length)) * WINDOW_UNIT_MS[match[1]!]!;
  return ms <= MAX_SPEND_WINDOW_MS ? ms : null;
}

/** The error codes of a policy document's validation (each error also carries a JSON-pointer `path` and `message`). */
export const POLICY_ERROR_CODES = [
  /** A field of the wrong type or value, or a required field missing. */
  'partner_policy_schema_invalid',
  /** A field the schema does not have. */
  'policy_schema_field_unknown',
  /** `layer` is neither `guardrail` nor `delegation`. */
  'layer_invalid',
  /** A feature of the spec's user-owned layer this service does not have (`delegation`). */
  'permissions_v2_extension_unavailable',
  /** A condition reads a fact its rule can never have (a rule on `raw_signature` reads only `wallet.*`). */
  'fact_not_available',
] as const;
export type PolicyErrorCode = (typeof POLICY_ERROR_CODES)[number];

/**
 * Why a signature was denied (`deniedBy[0].reason`): a deny rule that held, or that needed a fact the request does
 * not carry; a policy's allow rules for the action, none of which held; a raw signature no rule allows; an approval
 * or review that was rejected.
 */
export const DENIAL_REASONS = [
  'denied-by-rule',
  'fact-unavailable',
  'outside-boundary',
  'raw-signature-not-allowed',
  'review-rejected',
] as const;
export type DenialReason = (typeof DENIAL_REASONS)[number];

/** What a request moves out of the wallet, as far as its bytes tell (gas and fees are never counted). */
export interface SpendAmounts {
  /** Base units (decimal strings) moved per asset (`native`, or the asset's name on its chain). */
  moved: Array<{ asset: string; amount: string }>;
  /**
   * Whether the request moves nothing else: an asset not in `moved` then moves 0. Otherwise (bytes the service cannot
   * decode) an asset not in `moved` has an unknown amount, and a spend leaf on it is indeterminate.
   */
  complete: boolean;
}

/**
 * What a chain folder reads from a signing request for the policy engine. Every value is a string (addresses as the
 * chain writes them, amounts and chain ids as decimal strings), so that a decision can be logged with its facts.
 */
export interface ChainFacts {
  /** The network in selector syntax; null when the request names none; ANY_NETWORK when it could be any. */
  network: string | null;
  facts: Partial<Record<ChainFactName, string>>;
  spend: SpendAmounts;
}

/** A request that says nothing of a chain: messages, raw signatures, bytes that do not decode. */
export const NO_CHAIN_FACTS: ChainFacts = Object.freeze({
  network: null,
  facts: Object.freeze({}),
  spend: Object.freeze({ moved: Object.freeze([]) as unknown as SpendAmounts['moved'], complete: false }),
}) as ChainFacts;

/**
 * Where a production key's permissions stand (POLICIES.md §3): `awaiting_review` once the operator enables permissions
 * for it (the partner may then ask for a review), `requested` after `POST /v1/permissions-v2/production-review`, then
 * `published` (the operator copied the development keys' active policies to it) or `dismissed`. Development keys have
 * none: they write their own policies.
 */
export const PRODUCTION_REVIEW_STATUSES = ['awaiting_review', 'requested', 'published', 'dismissed'] as const;
export type ProductionReviewStatus = (typeof PRODUCTION_REVIEW_STATUSES)[number];
