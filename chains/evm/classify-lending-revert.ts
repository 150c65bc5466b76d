import { decodeAbiParameters, type Hex, toFunctionSelector } from 'viem';

/** What a revert of the lending protocol or of USDC says, by name. */
export type LendingRevertCode =
  | 'SUPPLY_CAP_EXCEEDED'
  | 'INVALID_AMOUNT'
  | 'RESERVE_INACTIVE'
  | 'RESERVE_FROZEN'
  | 'RESERVE_PAUSED'
  /** A withdrawal of more than the supplied balance. */
  | 'NOT_ENOUGH_AVAILABLE_USER_BALANCE'
  /** A withdrawal that would leave the account's debt under-collateralised. */
  | 'HEALTH_FACTOR_LOWER_THAN_LIQUIDATION_THRESHOLD'
  | 'LTV_VALIDATION_FAILED'
  | 'SUPPLY_TO_ATOKEN'
  | 'WITHDRAW_TO_ATOKEN'
  /** USDC: the sender holds too little (for a withdrawal: the aToken does, so the pool lacks liquidity). */
  | 'TOKEN_BALANCE_EXCEEDED'
  /** USDC: the Pool's allowance is short of the amount. */
  | 'ALLOWANCE_EXCEEDED'
  /** USDC: an address involved is blacklisted by the issuer. */
  | 'ACCOUNT_BLACKLISTED'
  /** USDC: transfers are paused by the issuer. */
  | 'TOKEN_PAUSED';

export interface LendingRevert {
  code: LendingRevertCode;
  /**
   * How it was said: `aave-code` (a string code, Aave v3.0 to v3.3, such as '51'), `aave-error` (a custom error,
   * v3.4 on, such as SupplyCapExceeded()), or `erc20` (the token's revert string or OpenZeppelin 5 custom error).
   */
  style: 'aave-code' | 'aave-error' | 'erc20';
  /** The code, the error's signature or the token's message, as the contract gave it. */
  reason: string;
}

/** Aave's string codes (Errors.sol, v3.0 to v3.3) and the custom errors v3.4 replaced them with. */
const AAVE: readonly [string, string, LendingRevertCode][] = [
  ['26', 'InvalidAmount()', 'INVALID_AMOUNT'],
  ['27', 'ReserveInactive()', 'RESERVE_INACTIVE'],
  ['28', 'ReserveFrozen()', 'RESERVE_FROZEN'],
  ['29', 'ReservePaused()', 'RESERVE_PAUSED'],
  ['32', 'NotEnoughAvailableUserBalance()', 'NOT_ENOUGH_AVAILABLE_USER_BALANCE'],
  ['35', 'HealthFactorLowerThanLiquidationThreshold()', 'HEALTH_FACTOR_LOWER_THAN_LIQUIDATION_THRESHOLD'],
  ['51', 'SupplyCapExceeded()', 'SUPPLY_CAP_EXCEEDED'],
  ['57', 'LtvValidationFailed()', 'LTV_VALIDATION_FAILED'],
  ['93', 'WithdrawToAToken()', 'WITHDRAW_TO_ATOKEN'],
  ['94', 'SupplyToAToken()', 'SUPPLY_TO_ATOKEN'],
];
/** Revert strings of Circle's USDC (FiatToken v2) and of OpenZeppelin 4 ERC-20s (the Sepolia test USDC). */
const ERC20_STRINGS: Readonly<Record<string, LendingRevertCode>> = {
  'ERC20: transfer amount exceeds balance': 'TOKEN_BALANCE_EXCEEDED',
  'ERC20: transfer amount exceeds allowance': 'ALLOWANCE_EXCEEDED',
  'ERC20: insufficient allowance': 'ALLOWANCE_EXCEEDED',
  'Blacklistable: account is blacklisted': 'ACCOUNT_BLACKLISTED',
  'Pausable: paused': 'TOKEN_PAUSED',
};
/** OpenZeppelin 5's ERC-20 custom errors. */
const ERC20_ERRORS: readonly [string, LendingRevertCode][] = [
  ['ERC20InsufficientBalance(address,uint256,uint256)', 'TOKEN_BALANCE_EXCEEDED'],
  ['ERC20InsufficientAllowance(address,uint256,uint256)', 'ALLOWANCE_EXCEEDED'],
];

const ERROR_STRING_SELECTOR = '0x08c379a0';
const BY_CODE = new Map(AAVE.map(([code, , name]) => [code, name]));
const BY_SELECTOR = new Map<string, LendingRevert>([
  ...AAVE.map(([, signature, code]): [string, LendingRevert] => [
    toFunctionSelector(signature),
    { code, style: 'aave-error', reason: signature },
  ]),
  ...ERC20_ERRORS.map(([signature, code]): [string, LendingRevert] => [
    toFunctionSelector(signature),
    { code, style: 'erc20', reason: signature },
  ]),
]);

const HEX = /^0x(?:[0-9a-fA-F]{2})*$/;
const REVERTED_WITH_REASON = /execution reverted: (.+)$/;

/**
 * The revert data inside what a node or viem said of a failed call: the hex itself, a JSON-RPC error (or the
 * project's RpcFailure) with `data` (or `data.data`, as some nodes nest it), or a viem error whose `cause` chain
 * holds one. Else the reason of a message `execution reverted: <reason>`, from a node that sends no data.
 */
function revertOf(value: unknown): { data: Hex } | { reason: string } | undefined {
  let reason: string | undefined;
  let current = value;
  for (let depth = 0; depth < 12 && current !== undefined && current !== null; depth++) {
    if (typeof current === 'string') {
      if (HEX.test(current)) return { data: current as Hex };
      const match = REVERTED_WITH_REASON.exec(current.split('\n')[0]!);
      return match ? { reason: match[1]!.trim() } : undefined;
    }
    if (typeof current !== 'object') return undefined;
    const { data, raw, message, details, cause } = current as Record<string, unknown>;
    for (const candidate of [data, (data as { data?: unknown } | undefined)?.data, raw]) {
      if (typeof candidate === 'string' && HEX.test(candidate) && candidate.length >= 10) {
        return { data: candidate as Hex };
      }
    }
    for (const text of [details, message]) {
      const match = typeof text === 'string' ? REVERTED_WITH_REASON.exec(text.split('\n')[0]!) : null;
      if (match) reason ??= match[1]!.trim();
    }
    current = cause;
  }
  return reason === undefined ? undefined : { reason };
}

function fromString(reason: string): LendingRevert | null {
  const aave = BY_CODE.get(reason);
  if (aave) return { code: aave, style: 'aave-code', reason };
  const erc20 = ERC20_STRINGS[reason];
  return erc20 ? { code: erc20, style: 'erc20', reason } : null;
}

/**
 * Recognises why a call to the lending pool or to USDC reverted, whether the pool speaks in string codes (Aave
 * v3.0 to v3.3: `Error("51")`) or in custom errors (v3.4 on: `SupplyCapExceeded()`), and the token's failures.
 * `failure` is the revert data, a JSON-RPC error or RpcFailure carrying it, a viem error, or a node's message
 * `execution reverted: <reason>`. Null when it says
 * nothing this knows (another revert, or no revert at all).
 */
export function classifyLendingRevert(failure: unknown): LendingRevert | null {
  const revert = revertOf(failure);
  if (revert === undefined) return null;
  if ('reason' in revert) return fromString(revert.reason);
  const selector = revert.data.slice(0, 10).toLowerCase();
  if (selector === ERROR_STRING_SELECTOR) {
    try {
      const [reason] = decodeAbiParameters([{ type: 'string' }], `0x${revert.data.slice(10)}`);
      return fromString(reason);
    } catch {
      return null;
    }
  }
  return BY_SELECTOR.get(selector) ?? null;
}
