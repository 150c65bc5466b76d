/**
 * The lending protocol yield runs on (Aave v3): the shape of a market, the ABI fragments the service calls, and the
 * constants of its amounts. Types and constants only; the functions using them sit one per file beside this one.
 */

/** One chain's market: the Aave v3 Pool and the USDC it lends. Addresses in EIP-55 form. */
export interface LendingMarket {
  chainId: number;
  pool: `0x${string}`;
  usdc: `0x${string}`;
}

/** USDC's decimals on every yield chain: amounts are integers of 10^-6 USDC. */
export const USDC_DECIMALS = 6;

/** 2^256 − 1: the Pool's "everything" for `withdraw` (the spec's `all`), and what an approval never is. */
export const WITHDRAW_ALL = 2n ** 256n - 1n;

/**
 * Aave v3's reserve configuration, decoded from its bitmap (Aave's ReserveConfiguration library). Percentages are
 * basis points; `supplyCap` is in whole tokens, 0 meaning none.
 */
export interface ReserveConfiguration {
  ltv: number;
  liquidationThreshold: number;
  decimals: number;
  active: boolean;
  frozen: boolean;
  paused: boolean;
  supplyCap: bigint;
}

/** What `Pool.getReserveData(asset)` says of a reserve (the 15-field tuple of v3.0 to v3.6), the parts read. */
export interface ReserveData {
  /** The raw configuration bitmap, and its decoding. */
  configurationBitmap: bigint;
  configuration: ReserveConfiguration;
  /** The supply index as last stored, a ray (10^27 = 1.0): balances are scaled by it. */
  liquidityIndex: bigint;
  /** The current supply rate, a ray per year. */
  currentLiquidityRate: bigint;
  lastUpdateTimestamp: number;
  /** The aToken; the zero address when the asset is not listed on the pool. */
  aToken: `0x${string}`;
  variableDebtToken: `0x${string}`;
  accruedToTreasury: bigint;
}

/** `Pool.getUserAccountData(user)`: amounts in the market's base currency (USD, 8 decimals). */
export interface UserAccountData {
  totalCollateralBase: bigint;
  totalDebtBase: bigint;
  availableBorrowsBase: bigint;
  currentLiquidationThreshold: bigint;
  ltv: bigint;
  /** 10^18 = 1.0; 2^256 − 1 without debt. */
  healthFactor: bigint;
}

/** Aave v3 `ReserveDataLegacy`, the answer of `getReserveData` from v3.0 to v3.6 (15 static words). */
export const RESERVE_DATA_COMPONENTS = [
  { name: 'configuration', type: 'tuple', components: [{ name: 'data', type: 'uint256' }] },
  { name: 'liquidityIndex', type: 'uint128' },
  { name: 'currentLiquidityRate', type: 'uint128' },
  { name: 'variableBorrowIndex', type: 'uint128' },
  { name: 'currentVariableBorrowRate', type: 'uint128' },
  { name: 'currentStableBorrowRate', type: 'uint128' },
  { name: 'lastUpdateTimestamp', type: 'uint40' },
  { name: 'id', type: 'uint16' },
  { name: 'aTokenAddress', type: 'address' },
  { name: 'stableDebtTokenAddress', type: 'address' },
  { name: 'variableDebtTokenAddress', type: 'address' },
  { name: 'interestRateStrategyAddress', type: 'address' },
  { name: 'accruedToTreasury', type: 'uint128' },
  { name: 'unbacked', type: 'uint128' },
  { name: 'isolationModeTotalDebt', type: 'uint128' },
] as const;

/** The Aave v3 Pool functions the service calls. */
/** `getUserAccountData(user)`'s outputs, in order (the debt is the second). */
export const USER_ACCOUNT_DATA_COMPONENTS = [
  { name: 'totalCollateralBase', type: 'uint256' },
  { name: 'totalDebtBase', type: 'uint256' },
  { name: 'availableBorrowsBase', type: 'uint256' },
  { name: 'currentLiquidationThreshold', type: 'uint256' },
  { name: 'ltv', type: 'uint256' },
  { name: 'healthFactor', type: 'uint256' },
] as const;

export const AAVE_V3_POOL_ABI = [
  {
    type: 'function',
    name: 'supply',
    stateMutability: 'nonpayable',
    inputs: [
      { name: 'asset', type: 'address' },
      { name: 'amount', type: 'uint256' },
      { name: 'onBehalfOf', type: 'address' },
      { name: 'referralCode', type: 'uint16' },
    ],
    outputs: [],
  },
  {
    type: 'function',
    name: 'withdraw',
    stateMutability: 'nonpayable',
    inputs: [
      { name: 'asset', type: 'address' },
      { name: 'amount', type: 'uint256' },
      { name: 'to', type: 'address' },
    ],
    outputs: [{ name: '', type: 'uint256' }],
  },
  {
    type: 'function',
    name: 'getReserveData',
    stateMutability: 'view',
    inputs: [{ name: 'asset', type: 'address' }],
    outputs: [{ name: '', type: 'tuple', components: RESERVE_DATA_COMPONENTS }],
  },
  {
    type: 'function',
    name: 'getUserAccountData',
    stateMutability: 'view',
    inputs: [{ name: 'user', type: 'address' }],
    outputs: USER_ACCOUNT_DATA_COMPONENTS,
  },
] as const;
