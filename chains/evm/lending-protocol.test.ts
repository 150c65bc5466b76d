/**
 * The lending adapter against the local protocol (fixtures/lending-protocol.ts) on anvil with Sepolia's chain id, at
 * the production table's Sepolia addresses: transactions built from encodeLendingCall's calldata, signed and sent
 * raw; positions read with readYieldPosition; reverts of both of Aave's styles recognised by classifyLendingRevert.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createPublicClient, type Hex, http } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { type Anvil, startAnvil } from '../../fixtures/anvil.ts';
import LocalUsdc from '../../fixtures/contracts/LocalUsdc.json' with { type: 'json' };
import { rpc, sendRawTransaction } from '../../fixtures/evm-helpers.ts';
import {
  installLendingProtocol,
  type LocalLendingProtocol,
  SEPOLIA_CHAIN_ID,
} from '../../fixtures/lending-protocol.ts';
import { InternalError } from '../domain/errors.ts';
import { classifyLendingRevert } from './classify-lending-revert.ts';
import { createRpcBatchPoster, type RpcBatchPoster } from './create-rpc-batch-poster.ts';
import { encodeLendingCall, type LendingCall } from './encode-lending-call.ts';
import { estimateWithdrawable } from './estimate-withdrawable.ts';
import { formatUsdcAmount } from './format-usdc-amount.ts';
import { type LendingMarket, WITHDRAW_ALL } from './lending-protocol.ts';
import { parseUsdcAmount } from './parse-usdc-amount.ts';
import { prepareLendingRead } from './prepare-lending-read.ts';
import { readYieldPosition } from './read-yield-position.ts';
import { resolveLendingMarket } from './resolve-lending-market.ts';

const RAY = 10n ** 27n;
const usdc = (amount: string) => parseUsdcAmount(amount, 'amount');

let anvil: Anvil;
let protocol: LocalLendingProtocol;
let market: LendingMarket;
let poster: RpcBatchPoster;
let httpRequests = 0;

interface Receipt {
  status: string;
  blockNumber: string;
}

/** Signs `call`'s transaction with `key` (nonce and fees from the node) and sends it raw; returns its receipt. */
async function send(key: Hex, call: LendingCall, gas?: bigint): Promise<Receipt> {
  const account = privateKeyToAccount(key);
  const { to, data } = encodeLendingCall(market, call);
  const nonce = Number(await rpc<string>(anvil.rpcUrl, 'eth_getTransactionCount', [account.address, 'pending']));
  const base = BigInt(
    (await rpc<{ baseFeePerGas: string }>(anvil.rpcUrl, 'eth_getBlockByNumber', ['latest', false])).baseFeePerGas,
  );
  const estimated =
    gas ?? BigInt(await rpc<string>(anvil.rpcUrl, 'eth_estimateGas', [{ from: account.address, to, data }]));
  const raw = await account.signTransaction({
    chainId: SEPOLIA_CHAIN_ID,
    type: 'eip1559',
    to,
    data,
    nonce,
    gas: estimated,
    maxFeePerGas: base * 2n + 1_000_000_000n,
    maxPriorityFeePerGas: 1_000_000_000n,
  });
  const hash = await sendRawTransaction(anvil.rpcUrl, raw);
  for (let attempt = 0; attempt < 500; attempt++) {
    const receipt = await rpc<Receipt | null>(anvil.rpcUrl, 'eth_getTransactionReceipt', [hash]);
    if (receipt) return receipt;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  assert.fail(`${hash} was not mined`);
}

/** Simulates `call` from `from` at the latest block, as the service does before signing: the node's answer. */
async function simulate(from: Hex, call: LendingCall) {
  const { to, data } = encodeLendingCall(market, call);
  const { answers } = await poster.post([{ method: 'eth_call', params: [{ from, to, data }, 'latest'] }]);
  return answers[0]!;
}

function addressOf(index: number): Hex {
  return privateKeyToAccount(anvil.fundedKeys[index]!).address;
}

before(async () => {
  anvil = await startAnvil({ chainId: SEPOLIA_CHAIN_ID });
  protocol = await installLendingProtocol(anvil.rpcUrl);
  market = resolveLendingMarket(SEPOLIA_CHAIN_ID)!;
  poster = createRpcBatchPoster({
    rpcUrl: anvil.rpcUrl,
    timeoutMs: 5_000,
    fetchFn: (input, init) => {
      httpRequests++;
      return fetch(input, init);
    },
  });
});

after(async () => {
  await anvil?.stop();
});

describe('the local protocol at the production Sepolia addresses', () => {
  it('is the market the production table resolves for chain 11155111', () => {
    assert.deepEqual(protocol.market, market);
  });

  it('supplies from raw calldata, and one request reads the position at the block of the supply', async () => {
    const key = anvil.fundedKeys[0]!;
    const account = addressOf(0);
    await protocol.fundUsdc(account, usdc('1000'));
    const amount = usdc('250.5');

    const approval = await send(key, { kind: 'approve', amount });
    assert.equal(approval.status, '0x1');
    const reads = [
      prepareLendingRead(market, { kind: 'allowance', owner: account }),
      prepareLendingRead(market, { kind: 'balanceOf', token: market.usdc, owner: account }),
    ] as const;
    const { answers } = await poster.post(reads.map((r) => r.call));
    assert.equal(reads[0].decode((answers[0] as { result: unknown }).result), amount, 'exactly the amount approved');
    assert.equal(reads[1].decode((answers[1] as { result: unknown }).result), usdc('1000'));

    const supply = await send(key, { kind: 'supply', amount, onBehalfOf: account });
    assert.equal(supply.status, '0x1');

    const requestsBefore = httpRequests;
    const position = await readYieldPosition(poster, market, account);
    assert.equal(httpRequests - requestsBefore, 1, 'one HTTP request');
    const block = await rpc<{ number: string; timestamp: string }>(anvil.rpcUrl, 'eth_getBlockByNumber', [
      supply.blockNumber,
      false,
    ]);
    assert.equal(position.blockNumber, BigInt(supply.blockNumber));
    assert.equal(position.blockTimestamp, BigInt(block.timestamp));
    assert.equal(position.suppliedBalance, amount);
    assert.equal(formatUsdcAmount(position.suppliedBalance), '250.5');
    assert.equal(position.walletBalance, usdc('749.5'));
    assert.equal(position.allowance, 0n, 'the supply used the whole approval');
    assert.ok(position.nativeBalance > 0n);
    assert.equal(position.reserve.aToken, protocol.aToken);
    assert.equal(position.reserve.liquidityIndex, RAY);
    assert.equal(position.reserve.configuration.supplyCap, 0n);
    assert.equal(position.reserve.configuration.decimals, 6);
    assert.equal(position.accountData.totalDebtBase, 0n);
    assert.equal(position.totalSupplied, amount);
    assert.equal(position.availableLiquidity, amount);
    assert.equal(estimateWithdrawable(position), amount);

    const userData = prepareLendingRead(market, { kind: 'userAccountData', user: account });
    const reserveData = prepareLendingRead(market, { kind: 'reserveData' });
    const aToken = prepareLendingRead(market, { kind: 'balanceOf', token: protocol.aToken, owner: account });
    const batch = await poster.post([userData.call, reserveData.call, aToken.call]);
    const results = batch.answers.map((a) => (a as { result: unknown }).result);
    assert.equal(userData.decode(results[0]).totalCollateralBase, amount * 100n, 'USDC at one dollar, 8 decimals');
    assert.deepEqual(reserveData.decode(results[1]), position.reserve);
    assert.equal(aToken.decode(results[2]), amount);
  });

  it('interest raises the supplied balance, and withdrawing all takes it with the interest', async () => {
    const key = anvil.fundedKeys[0]!;
    const account = addressOf(0);
    const before = await readYieldPosition(poster, market, account);
    await protocol.accrueInterest(100n);
    const grown = await readYieldPosition(poster, market, account);
    assert.equal(grown.reserve.liquidityIndex, (RAY * 10_100n) / 10_000n);
    assert.equal(grown.suppliedBalance, usdc('253.005'), '250.5 USDC and 1%');
    assert.equal(grown.suppliedBalance, await protocol.suppliedBalance(account));
    assert.ok(grown.availableLiquidity >= grown.suppliedBalance, 'the interest is backed');

    const withdrawal = await send(key, { kind: 'withdraw', amount: WITHDRAW_ALL, to: account });
    assert.equal(withdrawal.status, '0x1');
    const after = await readYieldPosition(poster, market, account);
    assert.equal(after.suppliedBalance, 0n);
    assert.equal(after.walletBalance, before.walletBalance + usdc('253.005'));
    assert.equal(after.blockNumber, BigInt(withdrawal.blockNumber));
  });

  for (const [style, expected] of [
    ['string-codes', { code: 'SUPPLY_CAP_EXCEEDED', style: 'aave-code', reason: '51' }],
    ['custom-errors', { code: 'SUPPLY_CAP_EXCEEDED', style: 'aave-error', reason: 'SupplyCapExceeded()' }],
  ] as const) {
    it(`a supply over the cap is recognised before signing, with ${style}`, async () => {
      const key = anvil.fundedKeys[1]!;
      const account = addressOf(1);
      await protocol.setRevertStyle(style);
      await protocol.fundUsdc(account, usdc('100'));
      assert.equal((await send(key, { kind: 'approve', amount: usdc('100') })).status, '0x1');
      const supplied = (await readYieldPosition(poster, market, account)).totalSupplied;
      // Room for exactly 10 USDC more.
      const cap = (supplied + usdc('10')) / 1_000_000n;
      assert.equal((supplied + usdc('10')) % 1_000_000n, 0n, 'the test needs a whole number of USDC supplied');
      await protocol.setSupplyCap(cap);
      assert.equal((await readYieldPosition(poster, market, account)).reserve.configuration.supplyCap, cap);

      const over = await simulate(account, { kind: 'supply', amount: usdc('10.000001'), onBehalfOf: account });
      assert.equal(over.ok, false);
      assert.deepEqual(classifyLendingRevert(over.ok ? undefined : over.failure), expected);
      const client = createPublicClient({ transport: http(anvil.rpcUrl) });
      const { to, data } = encodeLendingCall(market, { kind: 'supply', amount: usdc('11'), onBehalfOf: account });
      const viemError = await client.call({ account, to, data }).then(
        () => assert.fail('the call should revert'),
        (error: unknown) => error,
      );
      assert.deepEqual(classifyLendingRevert(viemError), expected, 'also from a viem error');

      // Sent anyway (a fixed gas limit skips estimation), it reverts on-chain and supplies nothing.
      const reverted = await send(key, { kind: 'supply', amount: usdc('11'), onBehalfOf: account }, 300_000n);
      assert.equal(reverted.status, '0x0');
      assert.equal(await protocol.suppliedBalance(account), 0n);

      // Up to the cap exactly fits.
      assert.equal((await simulate(account, { kind: 'supply', amount: usdc('10'), onBehalfOf: account })).ok, true);
      await protocol.setSupplyCap(0n);
      await protocol.setRevertStyle('string-codes');
    });
  }

  for (const [style, expected] of [
    ['string-codes', { code: 'HEALTH_FACTOR_LOWER_THAN_LIQUIDATION_THRESHOLD', style: 'aave-code', reason: '35' }],
    [
      'custom-errors',
      {
        code: 'HEALTH_FACTOR_LOWER_THAN_LIQUIDATION_THRESHOLD',
        style: 'aave-error',
        reason: 'HealthFactorLowerThanLiquidationThreshold()',
      },
    ],
  ] as const) {
    it(`debt leaves no withdrawal estimate, and withdrawing the collateral is refused, with ${style}`, async () => {
      const key = anvil.fundedKeys[2]!;
      const account = addressOf(2);
      await protocol.setRevertStyle(style);
      await protocol.fundUsdc(account, usdc('50'));
      await send(key, { kind: 'approve', amount: usdc('50') });
      assert.equal((await send(key, { kind: 'supply', amount: usdc('50'), onBehalfOf: account })).status, '0x1');
      // 30 dollars of debt against 50 USDC at a 78% liquidation threshold.
      await protocol.setDebt(account, 30n * 10n ** 8n);
      const position = await readYieldPosition(poster, market, account);
      assert.equal(position.accountData.totalDebtBase, 30n * 10n ** 8n);
      assert.equal(estimateWithdrawable(position), null);
      const all = await simulate(account, { kind: 'withdraw', amount: WITHDRAW_ALL, to: account });
      assert.deepEqual(classifyLendingRevert(all.ok ? undefined : all.failure), expected);
      const some = await simulate(account, { kind: 'withdraw', amount: usdc('1'), to: account });
      assert.equal(some.ok, true, 'a withdrawal that keeps the health factor above one is allowed');
      await protocol.setDebt(account, 0n);
      await protocol.setRevertStyle('string-codes');
    });
  }

  it('little liquidity caps the estimate; more than the balance and a paused reserve are recognised', async () => {
    const account = addressOf(2);
    const { suppliedBalance } = await readYieldPosition(poster, market, account);
    const liquidity = (await readYieldPosition(poster, market, account)).availableLiquidity;
    await protocol.setAvailableLiquidity(usdc('20'));
    assert.equal(estimateWithdrawable(await readYieldPosition(poster, market, account)), usdc('20'));
    await protocol.setAvailableLiquidity(liquidity);
    assert.equal(estimateWithdrawable(await readYieldPosition(poster, market, account)), suppliedBalance);

    const more = await simulate(account, { kind: 'withdraw', amount: suppliedBalance + 1n, to: account });
    assert.equal(classifyLendingRevert(more.ok ? undefined : more.failure)?.code, 'NOT_ENOUGH_AVAILABLE_USER_BALANCE');
    await protocol.setReserve({ paused: true });
    assert.equal(estimateWithdrawable(await readYieldPosition(poster, market, account)), 0n);
    const paused = await simulate(account, { kind: 'supply', amount: usdc('1'), onBehalfOf: account });
    assert.equal(classifyLendingRevert(paused.ok ? undefined : paused.failure)?.code, 'RESERVE_PAUSED');
    await protocol.setReserve({ paused: false });

    const broke = addressOf(3);
    const poor = await simulate(broke, { kind: 'supply', amount: usdc('1'), onBehalfOf: broke });
    assert.equal(classifyLendingRevert(poor.ok ? undefined : poor.failure)?.code, 'ALLOWANCE_EXCEEDED');
  });

  it('a market whose addresses are not the protocol’s is named as such', async () => {
    const account = addressOf(0);
    const notAPool = { ...market, pool: addressOf(5) };
    await assert.rejects(readYieldPosition(poster, notAPool, account), (error: unknown) => {
      assert.ok(error instanceof InternalError);
      assert.equal(error.code, 'LENDING_MARKET_INVALID');
      assert.match(error.message, /did not answer getReserveData/);
      return true;
    });
    // An ERC-20 the pool does not list.
    const other = '0x00000000000000000000000000000000000a11ce';
    await rpc(anvil.rpcUrl, 'anvil_setCode', [other, LocalUsdc.deployedBytecode]);
    const unlisted = { ...market, usdc: other } as const;
    await assert.rejects(readYieldPosition(poster, unlisted, account), (error: unknown) => {
      assert.ok(error instanceof InternalError);
      assert.equal(error.code, 'LENDING_MARKET_INVALID');
      assert.match(error.message, /is not listed on the lending pool/);
      return true;
    });
  });
});
