import { encodeFunctionData, erc20Abi, type Hex } from 'viem';
import { AAVE_V3_POOL_ABI, type LendingMarket, WITHDRAW_ALL } from './lending-protocol.ts';

/**
 * A transaction of a yield operation:
 * - `approve`: USDC `approve(pool, amount)`, an exact amount: never the unlimited 2^256 − 1;
 * - `supply`: Pool `supply(usdc, amount, onBehalfOf, 0)`;
 * - `withdraw`: Pool `withdraw(usdc, amount, to)`, `amount` = `WITHDRAW_ALL` (2^256 − 1) for everything.
 */
export type LendingCall =
  | { kind: 'approve'; amount: bigint }
  | { kind: 'supply'; amount: bigint; onBehalfOf: `0x${string}` }
  | { kind: 'withdraw'; amount: bigint; to: `0x${string}` };

/**
 * The recipient and calldata of a yield transaction on `market` (no value is sent). Amounts are base units; a zero
 * or negative amount, an approval of 2^256 − 1 and a supply of 2^256 − 1 throw a RangeError: the caller's amounts
 * come from parseUsdcAmount (or are `WITHDRAW_ALL` for a withdrawal) and can be none of these.
 */
export function encodeLendingCall(market: LendingMarket, call: LendingCall): { to: `0x${string}`; data: Hex } {
  if (call.amount <= 0n || call.amount > WITHDRAW_ALL) {
    throw new RangeError(`a ${call.kind} amount is a positive uint256`);
  }
  switch (call.kind) {
    case 'approve':
      if (call.amount === WITHDRAW_ALL) throw new RangeError('an approval is of the exact amount, never unlimited');
      return {
        to: market.usdc,
        data: encodeFunctionData({ abi: erc20Abi, functionName: 'approve', args: [market.pool, call.amount] }),
      };
    case 'supply':
      if (call.amount === WITHDRAW_ALL) throw new RangeError('a supply is of an exact amount');
      return {
        to: market.pool,
        data: encodeFunctionData({
          abi: AAVE_V3_POOL_ABI,
          functionName: 'supply',
          args: [market.usdc, call.amount, call.onBehalfOf, 0],
        }),
      };
    case 'withdraw':
      return {
        to: market.pool,
        data: encodeFunctionData({
          abi: AAVE_V3_POOL_ABI,
          functionName: 'withdraw',
          args: [market.usdc, call.amount, call.to],
        }),
      };
  }
}
