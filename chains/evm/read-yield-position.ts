import { decodeAbiParameters, decodeErrorResult, encodeAbiParameters, type Hex, numberToHex } from 'viem';
import { InternalError } from '../domain/errors.ts';
import { ChainRpcError } from '../payment-chain.ts';
import YieldSnapshotReader from './contracts/YieldSnapshotReader.json' with { type: 'json' };
import type { RpcBatchPoster } from './create-rpc-batch-poster.ts';
import { decodeReserveData } from './decode-reserve-data.ts';
import {
  type LendingMarket,
  type ReserveData,
  USER_ACCOUNT_DATA_COMPONENTS,
  type UserAccountData,
} from './lending-protocol.ts';
import type { LendingBlockTag } from './prepare-lending-read.ts';

/** Everything of one account's position in a market, read in one state: the block's. */
export interface YieldSnapshot {
  /** The block the state is that of, and its timestamp (seconds). */
  blockNumber: bigint;
  blockTimestamp: bigint;
  reserve: ReserveData;
  /** The account's figures in the market's base currency; `totalDebtBase` > 0 means it has debt. */
  accountData: UserAccountData;
  /** The aToken balance: what is supplied, with its interest (USDC base units). */
  suppliedBalance: bigint;
  /** The aToken's total supply: everything supplied to the reserve, with interest. */
  totalSupplied: bigint;
  /** The account's USDC, the Pool's USDC allowance from it, and its native balance (wei). */
  walletBalance: bigint;
  allowance: bigint;
  nativeBalance: bigint;
  /**
   * What the reserve can pay out now: the USDC its aToken holds, or Aave's virtual balance where the pool keeps one
   * (v3.1 on) and it is lower, since withdrawals are checked against it.
   */
  availableLiquidity: bigint;
}

const SNAPSHOT = [
  {
    type: 'tuple',
    components: [
      { name: 'blockNumber', type: 'uint256' },
      { name: 'blockTimestamp', type: 'uint256' },
      { name: 'reserveData', type: 'bytes' },
      { name: 'accountData', type: 'bytes' },
      { name: 'suppliedBalance', type: 'uint256' },
      { name: 'totalSupplied', type: 'uint256' },
      { name: 'walletBalance', type: 'uint256' },
      { name: 'allowance', type: 'uint256' },
      { name: 'nativeBalance', type: 'uint256' },
      { name: 'aTokenUnderlying', type: 'uint256' },
      { name: 'hasVirtualBalance', type: 'bool' },
      { name: 'virtualBalance', type: 'uint256' },
    ],
  },
] as const;
const ACCOUNT_DATA = USER_ACCOUNT_DATA_COMPONENTS;
const READER_ERRORS = [
  {
    type: 'error',
    name: 'ReadFailed',
    inputs: [
      { name: 'target', type: 'address' },
      { name: 'selector', type: 'bytes4' },
    ],
  },
] as const;
/** The reader's reads, by selector, for an operator's message. */
const READS: Readonly<Record<string, string>> = {
  '0x35ea6a75': 'getReserveData',
  '0xbf92857c': 'getUserAccountData',
  '0x70a08231': 'balanceOf',
  '0xdd62ed3e': 'allowance',
  '0x18160ddd': 'totalSupply',
};
const ZERO_ADDRESS = '0x0000000000000000000000000000000000000000';

function malformed(cause?: unknown): ChainRpcError {
  return new ChainRpcError(
    'transient',
    'RPC_UNAVAILABLE',
    "the chain's RPC node answered the position read with something that is not its answer",
    { cause },
  );
}

function decodeSnapshot(result: unknown): YieldSnapshot {
  if (typeof result !== 'string' || !/^0x(?:[0-9a-fA-F]{2})*$/.test(result)) throw malformed();
  let s: ReturnType<typeof decodeAbiParameters<typeof SNAPSHOT>>[0];
  let reserve: ReserveData;
  let account: ReturnType<typeof decodeAbiParameters<typeof ACCOUNT_DATA>>;
  try {
    [s] = decodeAbiParameters(SNAPSHOT, result as Hex);
    reserve = decodeReserveData(s.reserveData);
    account = decodeAbiParameters(ACCOUNT_DATA, s.accountData);
  } catch (error) {
    throw malformed(error);
  }
  const [totalCollateralBase, totalDebtBase, availableBorrowsBase, currentLiquidationThreshold, ltv, healthFactor] =
    account;
  const availableLiquidity =
    s.hasVirtualBalance && s.virtualBalance < s.aTokenUnderlying ? s.virtualBalance : s.aTokenUnderlying;
  return {
    blockNumber: s.blockNumber,
    blockTimestamp: s.blockTimestamp,
    reserve,
    accountData: {
      totalCollateralBase,
      totalDebtBase,
      availableBorrowsBase,
      currentLiquidationThreshold,
      ltv,
      healthFactor,
    },
    suppliedBalance: s.suppliedBalance,
    totalSupplied: s.totalSupplied,
    walletBalance: s.walletBalance,
    allowance: s.allowance,
    nativeBalance: s.nativeBalance,
    availableLiquidity,
  };
}

/**
 * Reads `account`'s position in `market` (supplied balance with interest, debt, reserve data, wallet balance,
 * allowance, native balance, available liquidity) with the block number and timestamp of the one state it was read
 * in, in a single JSON-RPC call, so in one HTTP request of `poster`: an `eth_call` without recipient whose init code
 * (chains/evm/contracts/YieldSnapshotReader.sol) makes every read inside one execution at `blockTag`.
 *
 * Throws a transient `ChainRpcError` RPC_UNAVAILABLE when the node gives no usable answer; `InternalError`
 * LENDING_MARKET_INVALID when the market's addresses are not the protocol's (a contract missing or answering
 * otherwise, USDC not listed on the pool): the chains file's `yield` entry is wrong; and a transient
 * `InternalError` LENDING_READ_FAILED when the node refuses the call for another reason.
 */
export async function readYieldPosition(
  poster: Pick<RpcBatchPoster, 'post'>,
  market: LendingMarket,
  account: `0x${string}`,
  blockTag: LendingBlockTag = 'latest',
): Promise<YieldSnapshot> {
  const args = encodeAbiParameters(
    [{ type: 'address' }, { type: 'address' }, { type: 'address' }],
    [market.pool, market.usdc, account],
  );
  const data = `${YieldSnapshotReader.bytecode}${args.slice(2)}`;
  const tag = typeof blockTag === 'bigint' ? numberToHex(blockTag) : blockTag;
  const { answers } = await poster.post([{ method: 'eth_call', params: [{ data }, tag] }]);
  const answer = answers[0];
  if (answer === undefined) throw malformed();
  if (!answer.ok) {
    const { failure } = answer;
    if (failure.kind === 'unavailable') throw new ChainRpcError('transient', 'RPC_UNAVAILABLE', failure.message);
    if (typeof failure.data === 'string' && /^0x[0-9a-fA-F]*$/.test(failure.data)) {
      try {
        const { args: readFailed } = decodeErrorResult({ abi: READER_ERRORS, data: failure.data as Hex });
        const [target, selector] = readFailed;
        throw new InternalError(
          'LENDING_MARKET_INVALID',
          `${target} on chain ${market.chainId} did not answer ${READS[selector] ?? selector} as the lending ` +
            `protocol does (market: pool ${market.pool}, USDC ${market.usdc}): check the chains file's yield entry`,
        );
      } catch (error) {
        if (error instanceof InternalError) throw error;
      }
    }
    throw new InternalError(
      'LENDING_READ_FAILED',
      `the chain's RPC node refused the yield position read: ${failure.message}`,
      { transient: true },
    );
  }
  const snapshot = decodeSnapshot(answer.result);
  if (snapshot.reserve.aToken === ZERO_ADDRESS) {
    throw new InternalError(
      'LENDING_MARKET_INVALID',
      `USDC ${market.usdc} is not listed on the lending pool ${market.pool} of chain ${market.chainId}: check the ` +
        "chains file's yield entry",
    );
  }
  return snapshot;
}
