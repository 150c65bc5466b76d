/**
 * readYieldPosition's reading of answers and failures, with a poster that answers what each test says. Against the
 * local protocol on anvil: chains/evm/lending-protocol.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { encodeAbiParameters, encodeErrorResult, type Hex } from 'viem';
import { InternalError } from '../domain/errors.ts';
import { ChainRpcError } from '../payment-chain.ts';
import YieldSnapshotReader from './contracts/YieldSnapshotReader.json' with { type: 'json' };
import type { RpcAnswer, RpcBatchPoster, RpcCall } from './create-rpc-batch-poster.ts';
import { type LendingMarket, RESERVE_DATA_COMPONENTS } from './lending-protocol.ts';
import { readYieldPosition } from './read-yield-position.ts';

const market: LendingMarket = {
  chainId: 1,
  pool: '0x87870Bca3F3fD6335C3F4ce8392D69350B4fA4E2',
  usdc: '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48',
};
const account = '0x1111111111111111111111111111111111111111';
const A_TOKEN = '0x98C23E9d8f34FEFb1B7BD6a91B7FF122F4e16F5c';

function reserveData(aToken: `0x${string}` = A_TOKEN): Hex {
  return encodeAbiParameters(
    [{ type: 'tuple', components: RESERVE_DATA_COMPONENTS }],
    [
      {
        configuration: { data: (1n << 56n) | (6n << 48n) },
        liquidityIndex: 10n ** 27n,
        currentLiquidityRate: 0n,
        variableBorrowIndex: 10n ** 27n,
        currentVariableBorrowRate: 0n,
        currentStableBorrowRate: 0n,
        lastUpdateTimestamp: 1,
        id: 0,
        aTokenAddress: aToken,
        stableDebtTokenAddress: '0x0000000000000000000000000000000000000000',
        variableDebtTokenAddress: '0x0000000000000000000000000000000000000000',
        interestRateStrategyAddress: '0x0000000000000000000000000000000000000000',
        accruedToTreasury: 0n,
        unbacked: 0n,
        isolationModeTotalDebt: 0n,
      },
    ],
  );
}

/** What the reader's constructor returns, for the given figures. */
function snapshot(o: { aToken?: `0x${string}`; underlying?: bigint; virtual?: bigint } = {}): Hex {
  const accountData = encodeAbiParameters(
    Array.from({ length: 6 }, () => ({ type: 'uint256' })),
    [100n, 0n, 0n, 7800n, 7500n, 2n ** 256n - 1n],
  );
  return encodeAbiParameters(
    [
      {
        type: 'tuple',
        components: [
          { type: 'uint256' },
          { type: 'uint256' },
          { type: 'bytes' },
          { type: 'bytes' },
          { type: 'uint256' },
          { type: 'uint256' },
          { type: 'uint256' },
          { type: 'uint256' },
          { type: 'uint256' },
          { type: 'uint256' },
          { type: 'bool' },
          { type: 'uint256' },
        ],
      },
    ],
    [
      [
        21_000_000n,
        1_750_000_000n,
        reserveData(o.aToken),
        accountData,
        5_000_000n,
        9_000_000_000n,
        1_000_000n,
        0n,
        10n ** 18n,
        o.underlying ?? 8_000_000n,
        o.virtual !== undefined,
        o.virtual ?? 0n,
      ],
    ],
  );
}

/** A poster answering every batch with `answer`, keeping the calls it was sent. */
function posterAnswering(answer: RpcAnswer) {
  const sent: RpcCall[][] = [];
  const poster = {
    async post(calls: readonly RpcCall[]) {
      sent.push([...calls]);
      return { answers: calls.map(() => answer), requests: 1 };
    },
  } satisfies Pick<RpcBatchPoster, 'post'>;
  return { poster, sent };
}

describe('readYieldPosition', () => {
  it('sends one eth_call without recipient: the reader with the pool, USDC and account appended', async () => {
    const { poster, sent } = posterAnswering({ ok: true, result: snapshot() });
    await readYieldPosition(poster, market, account, 21_000_000n);
    assert.equal(sent.length, 1);
    assert.equal(sent[0]!.length, 1);
    const { method, params } = sent[0]![0]!;
    assert.equal(method, 'eth_call');
    const [tx, tag] = params as [{ to?: string; data: string }, string];
    assert.equal(tx.to, undefined);
    assert.equal(tag, '0x1406f40');
    const args = encodeAbiParameters(
      [{ type: 'address' }, { type: 'address' }, { type: 'address' }],
      [market.pool, market.usdc, account],
    );
    assert.equal(tx.data, YieldSnapshotReader.bytecode + args.slice(2));
  });

  it('reads every figure of the answer', async () => {
    const { poster } = posterAnswering({ ok: true, result: snapshot() });
    const position = await readYieldPosition(poster, market, account);
    assert.equal(position.blockNumber, 21_000_000n);
    assert.equal(position.blockTimestamp, 1_750_000_000n);
    assert.equal(position.reserve.aToken, A_TOKEN);
    assert.equal(position.accountData.totalCollateralBase, 100n);
    assert.equal(position.accountData.totalDebtBase, 0n);
    assert.equal(position.suppliedBalance, 5_000_000n);
    assert.equal(position.totalSupplied, 9_000_000_000n);
    assert.equal(position.walletBalance, 1_000_000n);
    assert.equal(position.allowance, 0n);
    assert.equal(position.nativeBalance, 10n ** 18n);
    assert.equal(position.availableLiquidity, 8_000_000n, "the aToken's USDC, without a virtual balance");
  });

  it('available liquidity is the lower of the virtual balance and the USDC held', async () => {
    const lower = posterAnswering({ ok: true, result: snapshot({ underlying: 8_000_000n, virtual: 3_000_000n }) });
    assert.equal((await readYieldPosition(lower.poster, market, account)).availableLiquidity, 3_000_000n);
    const higher = posterAnswering({ ok: true, result: snapshot({ underlying: 8_000_000n, virtual: 9_000_000n }) });
    assert.equal((await readYieldPosition(higher.poster, market, account)).availableLiquidity, 8_000_000n);
  });

  it('USDC not listed on the pool: LENDING_MARKET_INVALID', async () => {
    const { poster } = posterAnswering({
      ok: true,
      result: snapshot({ aToken: '0x0000000000000000000000000000000000000000' }),
    });
    await assert.rejects(readYieldPosition(poster, market, account), (error: unknown) => {
      return error instanceof InternalError && error.code === 'LENDING_MARKET_INVALID' && !error.transient;
    });
  });

  it('a contract that did not answer a read: LENDING_MARKET_INVALID naming the contract and the read', async () => {
    const data = encodeErrorResult({
      abi: [
        {
          type: 'error',
          name: 'ReadFailed',
          inputs: [
            { name: 'target', type: 'address' },
            { name: 'selector', type: 'bytes4' },
          ],
        },
      ],
      errorName: 'ReadFailed',
      args: [market.pool, '0x35ea6a75'],
    });
    assert.ok(
      YieldSnapshotReader.abi.some((item) => item.type === 'error' && item.name === 'ReadFailed'),
      "the reader's own error",
    );
    const { poster } = posterAnswering({
      ok: false,
      failure: { kind: 'node', code: 3, message: 'execution reverted', data },
    });
    await assert.rejects(readYieldPosition(poster, market, account), (error: unknown) => {
      assert.ok(error instanceof InternalError);
      assert.equal(error.code, 'LENDING_MARKET_INVALID');
      assert.match(error.message, new RegExp(`${market.pool} on chain 1 did not answer getReserveData`));
      return true;
    });
  });

  it('a node that gives no usable answer is transient RPC_UNAVAILABLE; another refusal LENDING_READ_FAILED', async () => {
    const down = posterAnswering({ ok: false, failure: { kind: 'unavailable', message: 'the node timed out' } });
    await assert.rejects(readYieldPosition(down.poster, market, account), (error: unknown) => {
      return error instanceof ChainRpcError && error.code === 'RPC_UNAVAILABLE' && error.transient;
    });
    const refused = posterAnswering({
      ok: false,
      failure: { kind: 'node', code: -32000, message: 'header not found' },
    });
    await assert.rejects(readYieldPosition(refused.poster, market, account), (error: unknown) => {
      return error instanceof InternalError && error.code === 'LENDING_READ_FAILED' && error.transient;
    });
    for (const result of [null, '0x', '0x1234', snapshot().slice(0, 200)]) {
      const malformed = posterAnswering({ ok: true, result });
      await assert.rejects(readYieldPosition(malformed.poster, market, account), (error: unknown) => {
        return error instanceof ChainRpcError && error.code === 'RPC_UNAVAILABLE';
      });
    }
  });
});
