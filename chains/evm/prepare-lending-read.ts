import { decodeFunctionResult, encodeFunctionData, erc20Abi, type Hex, numberToHex } from 'viem';
import { InternalError } from '../domain/errors.ts';
import { ChainRpcError } from '../payment-chain.ts';
import type { RpcCall } from './create-rpc-batch-poster.ts';
import { decodeReserveData } from './decode-reserve-data.ts';
import { AAVE_V3_POOL_ABI, type LendingMarket, type ReserveData, type UserAccountData } from './lending-protocol.ts';

/** A read of the lending market: one `eth_call`. */
export type LendingRead =
  /** USDC `allowance(owner, pool)`. */
  | { kind: 'allowance'; owner: `0x${string}` }
  /** `token.balanceOf(owner)`: USDC, or the aToken for the supplied balance. */
  | { kind: 'balanceOf'; token: `0x${string}`; owner: `0x${string}` }
  /** Pool `getReserveData(usdc)`. */
  | { kind: 'reserveData' }
  /** Pool `getUserAccountData(user)`: the debt is `totalDebtBase`. */
  | { kind: 'userAccountData'; user: `0x${string}` };

export interface LendingReadAnswers {
  allowance: bigint;
  balanceOf: bigint;
  reserveData: ReserveData;
  userAccountData: UserAccountData;
}

/** Which block a read is made at: a tag, or a block number. */
export type LendingBlockTag = 'latest' | 'safe' | 'finalized' | bigint;

export interface PreparedLendingRead<T> {
  /** The `eth_call`, for an RpcBatchPoster (alone or batched with others). */
  call: RpcCall;
  /**
   * Reads the call's `result`. Throws `InternalError` LENDING_MARKET_INVALID when the answer is not what the
   * protocol's contract answers (no contract at the address: an empty answer), and a transient `ChainRpcError`
   * RPC_UNAVAILABLE when the result is not hex at all.
   */
  decode(result: unknown): T;
}

/**
 * Prepares one read of `market`: the JSON-RPC call to send and the decoder of its answer, so that reads can share a
 * batch (chains/evm/create-rpc-batch-poster.ts). Reads that must agree with each other belong in readYieldPosition,
 * which makes them at one block.
 */
export function prepareLendingRead<R extends LendingRead>(
  market: LendingMarket,
  read: R,
  blockTag: LendingBlockTag = 'latest',
): PreparedLendingRead<LendingReadAnswers[R['kind']]> {
  const tag = typeof blockTag === 'bigint' ? numberToHex(blockTag) : blockTag;
  let to: `0x${string}`;
  let data: Hex;
  let decode: (hex: Hex) => LendingReadAnswers[LendingRead['kind']];
  switch (read.kind) {
    case 'allowance':
      to = market.usdc;
      data = encodeFunctionData({ abi: erc20Abi, functionName: 'allowance', args: [read.owner, market.pool] });
      decode = (hex) => decodeFunctionResult({ abi: erc20Abi, functionName: 'allowance', data: hex });
      break;
    case 'balanceOf':
      to = read.token;
      data = encodeFunctionData({ abi: erc20Abi, functionName: 'balanceOf', args: [read.owner] });
      decode = (hex) => decodeFunctionResult({ abi: erc20Abi, functionName: 'balanceOf', data: hex });
      break;
    case 'reserveData':
      to = market.pool;
      data = encodeFunctionData({ abi: AAVE_V3_POOL_ABI, functionName: 'getReserveData', args: [market.usdc] });
      decode = decodeReserveData;
      break;
    case 'userAccountData':
      to = market.pool;
      data = encodeFunctionData({ abi: AAVE_V3_POOL_ABI, functionName: 'getUserAccountData', args: [read.user] });
      decode = (hex) => {
        const [
          totalCollateralBase,
          totalDebtBase,
          availableBorrowsBase,
          currentLiquidationThreshold,
          ltv,
          healthFactor,
        ] = decodeFunctionResult({ abi: AAVE_V3_POOL_ABI, functionName: 'getUserAccountData', data: hex });
        return {
          totalCollateralBase,
          totalDebtBase,
          availableBorrowsBase,
          currentLiquidationThreshold,
          ltv,
          healthFactor,
        };
      };
      break;
  }
  return {
    call: { method: 'eth_call', params: [{ to, data }, tag] },
    decode(result) {
      if (typeof result !== 'string' || !/^0x(?:[0-9a-fA-F]{2})*$/.test(result)) {
        throw new ChainRpcError(
          'transient',
          'RPC_UNAVAILABLE',
          "the chain's RPC node answered an eth_call with no hex",
        );
      }
      try {
        return decode(result as Hex) as LendingReadAnswers[R['kind']];
      } catch (error) {
        throw new InternalError(
          'LENDING_MARKET_INVALID',
          `${read.kind} at ${to} on chain ${market.chainId} answered ${(result.length - 2) / 2} bytes, not what ` +
            "the lending protocol's contract answers: check the chains file's yield entry",
          { cause: error },
        );
      }
    },
  };
}
