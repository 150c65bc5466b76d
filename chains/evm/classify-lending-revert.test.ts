import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BaseError, encodeAbiParameters, encodeErrorResult, type Hex, RpcRequestError, toFunctionSelector } from 'viem';
import { classifyLendingRevert } from './classify-lending-revert.ts';
import { readRpcFailure } from './read-rpc-failure.ts';

/** ABI-encoded `Error(string)`, as `require(cond, reason)` reverts. */
function errorString(reason: string): Hex {
  return `0x08c379a0${encodeAbiParameters([{ type: 'string' }], [reason]).slice(2)}`;
}

describe('classifyLendingRevert', () => {
  it("recognises the supply cap in Aave's string code ('51', v3.0 to v3.3) and custom error (v3.4 on)", () => {
    assert.deepEqual(classifyLendingRevert(errorString('51')), {
      code: 'SUPPLY_CAP_EXCEEDED',
      style: 'aave-code',
      reason: '51',
    });
    assert.equal(toFunctionSelector('SupplyCapExceeded()'), '0xf58f733a');
    assert.deepEqual(classifyLendingRevert('0xf58f733a'), {
      code: 'SUPPLY_CAP_EXCEEDED',
      style: 'aave-error',
      reason: 'SupplyCapExceeded()',
    });
  });

  it("maps the other codes a deposit or a withdrawal meets, in both of Aave's styles", () => {
    const pairs = [
      ['26', 'InvalidAmount()', 'INVALID_AMOUNT'],
      ['27', 'ReserveInactive()', 'RESERVE_INACTIVE'],
      ['28', 'ReserveFrozen()', 'RESERVE_FROZEN'],
      ['29', 'ReservePaused()', 'RESERVE_PAUSED'],
      ['32', 'NotEnoughAvailableUserBalance()', 'NOT_ENOUGH_AVAILABLE_USER_BALANCE'],
      ['35', 'HealthFactorLowerThanLiquidationThreshold()', 'HEALTH_FACTOR_LOWER_THAN_LIQUIDATION_THRESHOLD'],
      ['57', 'LtvValidationFailed()', 'LTV_VALIDATION_FAILED'],
      ['93', 'WithdrawToAToken()', 'WITHDRAW_TO_ATOKEN'],
      ['94', 'SupplyToAToken()', 'SUPPLY_TO_ATOKEN'],
    ] as const;
    for (const [code, signature, name] of pairs) {
      assert.equal(classifyLendingRevert(errorString(code))?.code, name, code);
      assert.equal(classifyLendingRevert(toFunctionSelector(signature))?.code, name, signature);
    }
  });

  it("recognises USDC's failures: revert strings and OpenZeppelin 5 errors", () => {
    assert.deepEqual(classifyLendingRevert(errorString('ERC20: transfer amount exceeds balance')), {
      code: 'TOKEN_BALANCE_EXCEEDED',
      style: 'erc20',
      reason: 'ERC20: transfer amount exceeds balance',
    });
    assert.equal(
      classifyLendingRevert(errorString('ERC20: transfer amount exceeds allowance'))?.code,
      'ALLOWANCE_EXCEEDED',
    );
    assert.equal(classifyLendingRevert(errorString('ERC20: insufficient allowance'))?.code, 'ALLOWANCE_EXCEEDED');
    assert.equal(
      classifyLendingRevert(errorString('Blacklistable: account is blacklisted'))?.code,
      'ACCOUNT_BLACKLISTED',
    );
    assert.equal(classifyLendingRevert(errorString('Pausable: paused'))?.code, 'TOKEN_PAUSED');
    const insufficient = encodeErrorResult({
      abi: [
        {
          type: 'error',
          name: 'ERC20InsufficientBalance',
          inputs: [
            { name: 'sender', type: 'address' },
            { name: 'balance', type: 'uint256' },
            { name: 'needed', type: 'uint256' },
          ],
        },
      ],
      errorName: 'ERC20InsufficientBalance',
      args: ['0x1111111111111111111111111111111111111111', 1n, 2n],
    });
    assert.equal(classifyLendingRevert(insufficient)?.code, 'TOKEN_BALANCE_EXCEEDED');
  });

  it('finds the revert data where nodes and viem put it', () => {
    const data = errorString('51');
    // A JSON-RPC error, and the project's RpcFailure read from it.
    const rpcError = { code: 3, message: 'execution reverted: 51', data };
    assert.equal(classifyLendingRevert(rpcError)?.code, 'SUPPLY_CAP_EXCEEDED');
    assert.equal(classifyLendingRevert(readRpcFailure(rpcError))?.code, 'SUPPLY_CAP_EXCEEDED');
    // Nested one level deeper, as some nodes answer.
    assert.equal(
      classifyLendingRevert({ code: -32000, message: 'reverted', data: { data: '0xf58f733a' } })?.code,
      'SUPPLY_CAP_EXCEEDED',
    );
    // A viem error whose cause chain holds the node's answer.
    const viemError = new BaseError('call failed', {
      cause: new RpcRequestError({ body: {}, url: 'http://127.0.0.1', error: { code: 3, message: 'reverted', data } }),
    });
    assert.equal(classifyLendingRevert(viemError)?.code, 'SUPPLY_CAP_EXCEEDED');
    // A node that sends the reason only in its message.
    assert.equal(
      classifyLendingRevert({ code: -32000, message: 'execution reverted: 51' })?.code,
      'SUPPLY_CAP_EXCEEDED',
    );
    assert.equal(classifyLendingRevert('execution reverted: 29')?.code, 'RESERVE_PAUSED');
  });

  it('says nothing of what it does not know', () => {
    assert.equal(classifyLendingRevert(undefined), null);
    assert.equal(classifyLendingRevert(null), null);
    assert.equal(classifyLendingRevert('0x'), null, 'a revert without data');
    assert.equal(classifyLendingRevert(errorString('52')), null, 'another code');
    assert.equal(classifyLendingRevert(errorString('')), null);
    assert.equal(classifyLendingRevert(toFunctionSelector('BorrowCapExceeded()')), null);
    assert.equal(
      classifyLendingRevert('0x4e487b710000000000000000000000000000000000000000000000000000000000000011'),
      null,
    );
    assert.equal(classifyLendingRevert('0x08c379a0deadbeef'), null, 'a malformed Error(string)');
    assert.equal(classifyLendingRevert({ kind: 'unavailable', message: 'timeout' }), null);
    assert.equal(classifyLendingRevert('execution reverted'), null);
    assert.equal(classifyLendingRevert(new Error('execution reverted: something else')), null);
  });
});
