import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { after, before, describe, it } from 'node:test';
import {
  decodeFunctionData,
  encodeFunctionData,
  erc20Abi,
  getAddress,
  keccak256,
  type TransactionSerializable,
} from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { type Anvil, startAnvil } from '../../fixtures/anvil.ts';
import Reverter from '../../fixtures/contracts/Reverter.json' with { type: 'json' };
import TestToken from '../../fixtures/contracts/TestToken.json' with { type: 'json' };
import { blockNumber, deployContract, dropTransaction, mine, rpc, setAutomine } from '../../fixtures/evm-helpers.ts';
import { ChainInputError } from '../chain-input-error.ts';
import { ChainRpcError, type EvmUnsignedPayment, type ObserveItem, type PaymentChain } from '../payment-chain.ts';
import { createEvmChain } from './evm-chain.ts';
import { prepareEvmTransaction } from './prepare-evm-transaction.ts';

let anvil: Anvil;
let chain: PaymentChain;
let httpRequests = 0;
let token: `0x${string}`;
let reverter: `0x${string}`;
/** Hashes of transactions mined by earlier tests, for the observe-at-scale tests. */
const mined: ObserveItem[] = [];

const countingFetch: typeof fetch = (input, init) => {
  httpRequests++;
  return fetch(input, init);
};

function key(index: number): `0x${string}` {
  return anvil.fundedKeys[index]!;
}

function addressOf(privateKey: `0x${string}`): `0x${string}` {
  return privateKeyToAccount(privateKey).address;
}

function randomAddress(): `0x${string}` {
  return addressOf(generatePrivateKey());
}

/** A native transfer of `value` wei from `from` to a fresh address, built by the chain under test. */
async function buildNative(from: string, value: string): Promise<EvmUnsignedPayment> {
  return (await chain.buildTransfer(from, { kind: 'NATIVE', to: randomAddress(), value })) as EvmUnsignedPayment;
}

/** Signs a built payment the way the service will: through prepareEvmTransaction, with the allocated nonce. */
async function sign(
  privateKey: `0x${string}`,
  payment: EvmUnsignedPayment,
  nonce: number,
  override: Partial<TransactionSerializable> = {},
): Promise<`0x${string}`> {
  const { family: _family, ...fields } = payment;
  const { transaction } = prepareEvmTransaction({ ...fields, nonce });
  return privateKeyToAccount(privateKey).signTransaction({ ...transaction, ...override } as TransactionSerializable);
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  assert.fail('expected a rejection');
}

async function assertChainRpcError(promise: Promise<unknown>, kind: 'transient' | 'final', code: string) {
  const error = await rejection(promise);
  assert.ok(error instanceof ChainRpcError, `expected a ChainRpcError, got ${String(error)}`);
  assert.equal(error.code, code, error.message);
  assert.equal(error.transient ? 'transient' : 'final', kind, error.message);
  assert.ok(!error.message.includes('127.0.0.1'), `the message names the RPC URL: ${error.message}`);
  return error;
}

/**
 * Waits until anvil (automining) has mined `hash`: under load it answers eth_sendRawTransaction before the block that
 * includes the transaction exists.
 */
async function untilMined(hash: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (await rpc(anvil.rpcUrl, 'eth_getTransactionReceipt', [hash])) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`anvil did not mine ${hash}`);
}

async function balanceOf(tokenAddress: string, owner: string): Promise<bigint> {
  const data = encodeFunctionData({ abi: erc20Abi, functionName: 'balanceOf', args: [owner as `0x${string}`] });
  return BigInt(await rpc<string>(anvil.rpcUrl, 'eth_call', [{ to: tokenAddress, data }, 'latest']));
}

before(async () => {
  anvil = await startAnvil();
  chain = createEvmChain({
    chainId: anvil.chainId,
    rpcUrl: anvil.rpcUrl,
    environment: 'development',
    fetchFn: countingFetch,
    feeDataMaxAgeMs: 0,
    // Every round reads the finalized nonces of items without a receipt: what these tests count.
    nonceCheckAfterMs: 0,
  });
  token = await deployContract(anvil.rpcUrl, key(0), TestToken);
  reverter = await deployContract(anvil.rpcUrl, key(0), Reverter);
});

after(async () => {
  await anvil?.stop();
});

describe('createEvmChain against anvil', () => {
  it('builds, broadcasts and observes a native transfer, included and then final', async () => {
    const from = addressOf(key(1));
    const to = randomAddress();
    const payment = (await chain.buildTransfer(from, {
      kind: 'NATIVE',
      to: to.toLowerCase(),
      value: '1000000000000000',
    })) as EvmUnsignedPayment;
    const latest = await rpc<{ baseFeePerGas: string }>(anvil.rpcUrl, 'eth_getBlockByNumber', ['latest', false]);
    const baseFee = BigInt(latest.baseFeePerGas);
    assert.equal(payment.family, 'EVM');
    assert.equal(payment.chainId, anvil.chainId);
    assert.equal(payment.type, 2);
    assert.equal(payment.to, to);
    assert.equal(payment.value, '1000000000000000');
    assert.equal(payment.data, '0x');
    assert.equal(payment.gasLimit, '25200', '21,000 plus the 20% buffer');
    // anvil suggests a 1 gwei tip; the cap is twice the base fee plus the tip.
    assert.equal(payment.maxPriorityFeePerGas, '1000000000');
    assert.equal(payment.maxFeePerGas, (2n * baseFee + 1_000_000_000n).toString());
    assert.equal(payment.gasPrice, undefined);

    const nonce = await chain.pendingNonce!(from);
    assert.equal(nonce, Number(await rpc<string>(anvil.rpcUrl, 'eth_getTransactionCount', [from, 'pending'])));
    const raw = await sign(key(1), payment, nonce);
    await chain.broadcast(raw);
    const hash = keccak256(raw);
    await untilMined(hash);
    assert.equal(BigInt(await rpc<string>(anvil.rpcUrl, 'eth_getBalance', [to, 'latest'])), 1_000_000_000_000_000n);

    const item = { hash, from, nonce };
    const first = await chain.observe([item]);
    const receipt = await rpc<{ blockNumber: string; blockHash: string }>(anvil.rpcUrl, 'eth_getTransactionReceipt', [
      hash,
    ]);
    assert.deepEqual(first.observations.get(hash), {
      status: 'included',
      final: false,
      success: true,
      blockNumber: BigInt(receipt.blockNumber).toString(),
      blockHash: receipt.blockHash,
    });
    assert.equal(first.roundTrips, 1);

    await mine(anvil.rpcUrl, 2);
    assert.ok((await blockNumber(anvil.rpcUrl, 'finalized')) >= BigInt(receipt.blockNumber));
    const second = await chain.observe([item]);
    assert.equal((second.observations.get(hash) as { final: boolean }).final, true);
    mined.push(item);
  });

  it('previews the fee of the same transfer', async () => {
    const estimate = await chain.estimateFee(addressOf(key(1)), { kind: 'NATIVE', to: randomAddress(), value: '1' });
    assert.equal(estimate.family, 'EVM');
    if (estimate.family !== 'EVM') return;
    assert.equal(estimate.chainId, String(anvil.chainId));
    assert.equal(estimate.type, 2);
    assert.equal(estimate.gasLimit, '25200');
    const baseFee = BigInt(estimate.baseFeePerGas!);
    const tip = BigInt(estimate.maxPriorityFeePerGas!);
    assert.equal(estimate.maxFeePerGas, (2n * baseFee + tip).toString());
    assert.equal(estimate.maxFee, (25_200n * (2n * baseFee + tip)).toString());
    assert.equal(estimate.expectedFee, (25_200n * (baseFee + tip)).toString());
  });

  it('builds and delivers an ERC-20 transfer', async () => {
    const sender = key(2);
    const from = addressOf(sender);
    const to = randomAddress();
    const mintData = encodeFunctionData({
      abi: TestToken.abi,
      functionName: 'mint',
      args: [from, 1_000_000n],
    });
    const minter = privateKeyToAccount(key(0));
    await rpc(anvil.rpcUrl, 'eth_sendTransaction', [{ from: minter.address, to: token, data: mintData }]);

    const payment = (await chain.buildTransfer(from, {
      kind: 'ERC20',
      to,
      value: '250000',
      tokenAddress: token.toLowerCase(),
    })) as EvmUnsignedPayment;
    assert.equal(payment.to, getAddress(token));
    assert.equal(payment.value, '0');
    const call = decodeFunctionData({ abi: erc20Abi, data: payment.data as `0x${string}` });
    assert.equal(call.functionName, 'transfer');
    assert.deepEqual(call.args, [to, 250_000n]);
    const estimate = BigInt(
      await rpc<string>(anvil.rpcUrl, 'eth_estimateGas', [{ from, to: token, data: payment.data }]),
    );
    assert.equal(BigInt(payment.gasLimit), (estimate * 12n + 9n) / 10n, 'estimate plus 20%, rounded up');

    const nonce = await chain.pendingNonce!(from);
    const raw = await sign(sender, payment, nonce);
    await chain.broadcast(raw);
    const hash = keccak256(raw);
    await untilMined(hash);
    const round = await chain.observe([{ hash, from, nonce }]);
    assert.equal(round.observations.get(hash)?.status, 'included');
    assert.equal((round.observations.get(hash) as { success: boolean }).success, true);
    assert.equal(await balanceOf(token, to), 250_000n);
    assert.equal(await balanceOf(token, from), 750_000n);
    mined.push({ hash, from, nonce });
  });

  it('refuses an ERC-20 transfer above the balance, and a token that is not one', async () => {
    const from = addressOf(key(2));
    await assertChainRpcError(
      chain.buildTransfer(from, { kind: 'ERC20', to: randomAddress(), value: '750001', tokenAddress: token }),
      'final',
      'INSUFFICIENT_TOKEN_BALANCE',
    );
    // Exactly the balance is fine.
    await chain.buildTransfer(from, { kind: 'ERC20', to: randomAddress(), value: '750000', tokenAddress: token });
    await assertChainRpcError(
      chain.buildTransfer(from, { kind: 'ERC20', to: randomAddress(), value: '1', tokenAddress: randomAddress() }),
      'final',
      'INVALID_TOKEN',
    );
    await assertChainRpcError(
      chain.buildTransfer(from, { kind: 'ERC20', to: randomAddress(), value: '1', tokenAddress: reverter }),
      'final',
      'INVALID_TOKEN',
    );
  });

  it("builds an unfunded wallet's native transfer, and the broadcast fails for insufficient funds", async () => {
    const poorKey = generatePrivateKey();
    const from = addressOf(poorKey);
    const payment = await buildNative(from, '1000000000000000000');
    assert.equal(payment.gasLimit, '25200');
    const nonce = await chain.pendingNonce!(from);
    assert.equal(nonce, 0);
    await assertChainRpcError(
      chain.broadcast(await sign(poorKey, payment, nonce)),
      'final',
      'INSUFFICIENT_NATIVE_BALANCE',
    );
  });

  it('refuses a used nonce with NONCE_TOO_LOW', async () => {
    const from = addressOf(key(3));
    const payment = await buildNative(from, '5');
    const nonce = await chain.pendingNonce!(from);
    await chain.broadcast(await sign(key(3), payment, nonce));
    const other = { ...payment, value: '6' };
    await assertChainRpcError(chain.broadcast(await sign(key(3), other, nonce)), 'final', 'NONCE_TOO_LOW');
  });

  it('accepts a rebroadcast of the same bytes, pending and mined', async () => {
    const from = addressOf(key(4));
    const payment = await buildNative(from, '7');
    await setAutomine(anvil.rpcUrl, false);
    try {
      const nonce = await chain.pendingNonce!(from);
      const raw = await sign(key(4), payment, nonce);
      const hash = keccak256(raw);
      await chain.broadcast(raw);
      await chain.broadcast(raw);
      const pending = await chain.observe([{ hash, from, nonce }]);
      assert.deepEqual(pending.observations.get(hash), { status: 'unknown' });
      assert.equal(pending.roundTrips, 2, 'no receipt and a nonce: the finalized nonce is read');
      await mine(anvil.rpcUrl, 1);
      // Mined: the node now answers "nonce too low", but it knows the hash.
      await chain.broadcast(raw);
      const minedRound = await chain.observe([{ hash, from, nonce }]);
      assert.equal(minedRound.observations.get(hash)?.status, 'included');
      mined.push({ hash, from, nonce });
    } finally {
      await setAutomine(anvil.rpcUrl, true);
    }
  });

  it('refuses to build a transfer that reverts, and observes a mined revert as included without success', async () => {
    const from = addressOf(key(5));
    await assertChainRpcError(
      chain.buildTransfer(from, { kind: 'NATIVE', to: reverter, value: '1' }),
      'final',
      'EXECUTION_FAILED',
    );
    const payment = await buildNative(from, '1');
    const nonce = await chain.pendingNonce!(from);
    // An explicit gas limit skips estimation: the node mines the call, which reverts.
    const raw = await sign(key(5), payment, nonce, { to: reverter, gas: 100_000n });
    await chain.broadcast(raw);
    const hash = keccak256(raw);
    await untilMined(hash);
    const round = await chain.observe([{ hash, from, nonce }]);
    const observation = round.observations.get(hash);
    assert.equal(observation?.status, 'included');
    assert.equal((observation as { success: boolean }).success, false);
    assert.equal(typeof (observation as { error?: string }).error, 'string');
    const receipt = await rpc<{ status: string }>(anvil.rpcUrl, 'eth_getTransactionReceipt', [hash]);
    assert.equal(receipt.status, '0x0');
    mined.push({ hash, from, nonce });
  });

  it('follows a reorganization under a remembered inclusion: final only in the block the finalized chain holds', async () => {
    // Two transfers are seen included (and remembered) in block n; block n is then rolled back. One comes back in the
    // new block n, the other is dropped. When the finalized block reaches n, its hash is not the remembered one: the
    // observer must read the receipts again rather than report either as final from memory.
    await setAutomine(anvil.rpcUrl, false);
    try {
      const [again, gone] = [key(8), key(9)];
      const raws: `0x${string}`[] = [];
      const items: ObserveItem[] = [];
      for (const sender of [again, gone]) {
        const from = addressOf(sender);
        const payment = await buildNative(from, '5');
        const nonce = await chain.pendingNonce!(from);
        const raw = await sign(sender, payment, nonce);
        await chain.broadcast(raw);
        raws.push(raw);
        items.push({ hash: keccak256(raw), from, nonce });
      }
      await mine(anvil.rpcUrl, 1);
      const seen = await chain.observe(items);
      const oldBlock = seen.observations.get(items[0]!.hash) as {
        status: string;
        final: boolean;
        blockHash: string;
        blockNumber: string;
      };
      assert.equal(oldBlock.status, 'included');
      assert.equal(oldBlock.final, false);

      await rpc(anvil.rpcUrl, 'anvil_rollback', [1]);
      await dropTransaction(anvil.rpcUrl, items[1]!.hash);
      // The rolled-back transactions return to the pool (or are sent again, as the poller would): the first is mined
      // again, in a block of the same number and another hash.
      await rpc(anvil.rpcUrl, 'eth_sendRawTransaction', [raws[0]]).catch(() => undefined);
      await mine(anvil.rpcUrl, 3);
      assert.ok((await blockNumber(anvil.rpcUrl, 'finalized')) >= BigInt(oldBlock.blockNumber));

      const after = await chain.observe(items);
      const receipt = await rpc<{ blockHash: string; blockNumber: string }>(anvil.rpcUrl, 'eth_getTransactionReceipt', [
        items[0]!.hash,
      ]);
      assert.notEqual(receipt.blockHash, oldBlock.blockHash, 'the reorganization moved it to another block');
      assert.deepEqual(after.observations.get(items[0]!.hash), {
        status: 'included',
        final: true,
        success: true,
        blockNumber: BigInt(receipt.blockNumber).toString(),
        blockHash: receipt.blockHash,
      });
      assert.deepEqual(after.observations.get(items[1]!.hash), { status: 'unknown' });
    } finally {
      await setAutomine(anvil.rpcUrl, true);
    }
  });

  it('proves a dropped transaction whose nonce another one took, once that one is final', async () => {
    const sender = key(6);
    const from = addressOf(sender);
    const payment = await buildNative(from, '11');
    await setAutomine(anvil.rpcUrl, false);
    try {
      const nonce = await chain.pendingNonce!(from);
      const dropped = await sign(sender, payment, nonce);
      await chain.broadcast(dropped);
      await dropTransaction(anvil.rpcUrl, keccak256(dropped));
      const winner = await sign(sender, { ...payment, value: '12' }, nonce);
      await chain.broadcast(winner);
      await mine(anvil.rpcUrl, 1);
      const items = [
        { hash: keccak256(dropped), from, nonce },
        { hash: keccak256(winner), from, nonce },
      ];

      // The winner is mined but not final: the dropped one is not proven dropped yet.
      const early = await chain.observe(items);
      assert.deepEqual(early.observations.get(items[0]!.hash), { status: 'unknown' });
      assert.equal(early.observations.get(items[1]!.hash)?.status, 'included');
      assert.equal((early.observations.get(items[1]!.hash) as { final: boolean }).final, false);
      assert.equal(early.roundTrips, 2);

      await mine(anvil.rpcUrl, 2);
      const late = await chain.observe(items);
      assert.deepEqual(late.observations.get(items[0]!.hash), {
        status: 'dropped',
        reason: 'nonce_consumed',
        winningHash: items[1]!.hash,
      });
      assert.equal((late.observations.get(items[1]!.hash) as { final: boolean }).final, true);
      assert.equal(
        late.roundTrips,
        5,
        'receipts, finalized nonces, the consumed items’ receipts again, the nonce search, the winner’s block',
      );
      mined.push(items[1]!);
    } finally {
      await setAutomine(anvil.rpcUrl, true);
    }
  });

  it('refuses bad input with a ChainInputError naming the field, without asking the node', async () => {
    const untouched = createEvmChain({
      chainId: anvil.chainId,
      rpcUrl: anvil.rpcUrl,
      environment: 'development',
      fetchFn: () => assert.fail('bad input reached the node'),
    });
    const from = addressOf(key(1));
    const to = randomAddress();
    const cases: [unknown, unknown, string][] = [
      [from, { kind: 'NATIVE', to: '0x1234', value: '1' }, 'to'],
      [from, { kind: 'NATIVE', to: to.toLowerCase().replace('0x', '0X'), value: '1' }, 'to'],
      [from, { kind: 'NATIVE', to: `0x${to.slice(2, 41)}${to[41] === 'a' ? 'A' : 'a'}`, value: '1' }, 'to'],
      [from, { kind: 'NATIVE', to, value: '0' }, 'value'],
      [from, { kind: 'NATIVE', to, value: '-1' }, 'value'],
      [from, { kind: 'NATIVE', to, value: '1.5' }, 'value'],
      [from, { kind: 'NATIVE', to, value: '1e18' }, 'value'],
      [from, { kind: 'NATIVE', to, value: '' }, 'value'],
      [from, { kind: 'NATIVE', to, value: 1 }, 'value'],
      [from, { kind: 'NATIVE', to, value: (2n ** 256n).toString() }, 'value'],
      [from, { kind: 'ERC20', to, value: '1' }, 'tokenAddress'],
      [from, { kind: 'ERC20', to, value: '1', tokenAddress: 'USDC' }, 'tokenAddress'],
      [from, { kind: 'NATIVE', to, value: '1', tokenAddress: token }, 'tokenAddress'],
      [from, { kind: 'SPL', to, value: '1', tokenAddress: token }, 'kind'],
      ['not an address', { kind: 'NATIVE', to, value: '1' }, 'from'],
    ];
    for (const [sender, intent, field] of cases) {
      for (const call of [untouched.buildTransfer, untouched.estimateFee]) {
        const error = await rejection(call(sender as string, intent as never));
        assert.ok(error instanceof ChainInputError, `${JSON.stringify(intent)}: ${String(error)}`);
        assert.equal(error.field, field, `${JSON.stringify(intent)}: ${error.message}`);
      }
    }
    const broadcastError = await rejection(untouched.broadcast('0xabc'));
    assert.ok(broadcastError instanceof ChainInputError);
    assert.equal(broadcastError.field, 'signedTransaction');
    const observeError = await rejection(untouched.observe([{ hash: '0x12', from }]));
    assert.ok(observeError instanceof ChainInputError);
    assert.equal(observeError.field, 'items[0].hash');
  });

  it('prices a legacy transfer at max(gas price, base fee + tip) on a base-fee chain', async () => {
    const legacy = createEvmChain({
      chainId: anvil.chainId,
      rpcUrl: anvil.rpcUrl,
      environment: 'development',
      feeModel: 'legacy',
    });
    const from = addressOf(key(7));
    const payment = (await legacy.buildTransfer(from, {
      kind: 'NATIVE',
      to: randomAddress(),
      value: '13',
    })) as EvmUnsignedPayment;
    const latest = await rpc<{ baseFeePerGas: string }>(anvil.rpcUrl, 'eth_getBlockByNumber', ['latest', false]);
    const gasPrice = BigInt(await rpc<string>(anvil.rpcUrl, 'eth_gasPrice'));
    const floor = BigInt(latest.baseFeePerGas) + 1_000_000_000n;
    assert.equal(payment.type, 0);
    assert.equal(payment.maxFeePerGas, undefined);
    assert.equal(payment.gasPrice, (gasPrice > floor ? gasPrice : floor).toString());
    const nonce = await legacy.pendingNonce!(from);
    const raw = await sign(key(7), payment, nonce);
    await legacy.broadcast(raw);
    await untilMined(keccak256(raw));
    const round = await legacy.observe([{ hash: keccak256(raw), from, nonce }]);
    assert.equal((round.observations.get(keccak256(raw)) as { success: boolean }).success, true);
  });

  it('observes 50, 500 and 5,000 items in the same number of HTTP requests, and counts them exactly', async () => {
    assert.ok(mined.length >= 5);
    const poor = randomAddress();
    const items = (count: number): ObserveItem[] => {
      const list: ObserveItem[] = [...mined];
      // Never-broadcast hashes: half without a nonce, half from an account whose finalized nonce is 0.
      for (let i = list.length; i < count; i++) {
        const hash = keccak256(`0x${i.toString(16).padStart(8, '0')}`);
        list.push(i % 2 === 0 ? { hash, from: poor } : { hash, from: poor, nonce: i });
      }
      return list;
    };
    for (const count of [50, 500, 5_000]) {
      const before = httpRequests;
      const round = await chain.observe(items(count));
      assert.equal(round.roundTrips, 2, `${count} items`);
      assert.equal(httpRequests - before, round.roundTrips, 'roundTrips is the number of HTTP requests made');
      assert.equal(round.observations.size, count);
      for (const item of mined) assert.equal(round.observations.get(item.hash)?.status, 'included');
    }
    const noNonces = items(500).map(({ hash, from }) => ({ hash, from }));
    assert.equal((await chain.observe(noNonces)).roundTrips, 1);

    // A node limiting batch sizes: each step takes ceil(calls / limit) requests, all counted.
    let limitedRequests = 0;
    const limited = createEvmChain({
      chainId: anvil.chainId,
      rpcUrl: anvil.rpcUrl,
      environment: 'development',
      maxBatchSize: 100,
      fetchFn: (input, init) => {
        limitedRequests++;
        return fetch(input, init);
      },
    });
    const round = await limited.observe(noNonces);
    assert.equal(round.roundTrips, 6, '501 calls in batches of 100');
    assert.equal(limitedRequests, 6);
  });

  it("prices a replacement from the next block's base fee, not the latest block's, and reads the balance", async () => {
    const from = addressOf(key(1));
    const history = await rpc<{ baseFeePerGas: string[] }>(anvil.rpcUrl, 'eth_feeHistory', ['0x1', 'latest', []]);
    const nextBefore = BigInt(history.baseFeePerGas.at(-1)!);
    const latest = await rpc<{ baseFeePerGas: string }>(anvil.rpcUrl, 'eth_getBlockByNumber', ['latest', false]);
    const next = 50_000_000_000n;
    assert.notEqual(BigInt(latest.baseFeePerGas), next);
    // Nothing is mined: only the next block's base fee changes.
    await rpc(anvil.rpcUrl, 'anvil_setNextBlockBaseFeePerGas', [`0x${next.toString(16)}`]);
    try {
      const market = await chain.replacementMarket!(from);
      assert.equal(market.baseFee, next);
      const balance = BigInt(await rpc<string>(anvil.rpcUrl, 'eth_getBalance', [from, 'latest']));
      assert.equal(market.balance, balance);
      assert.ok(market.tip > 0n);
    } finally {
      await rpc(anvil.rpcUrl, 'anvil_setNextBlockBaseFeePerGas', [`0x${nextBefore.toString(16)}`]);
    }
  });

  it('answers transient RPC_UNAVAILABLE when the node is down', async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    await new Promise<void>((resolve) => server.close(() => resolve()));
    const down = createEvmChain({ chainId: 1, rpcUrl: `http://127.0.0.1:${port}`, environment: 'production' });
    const from = addressOf(key(1));
    await assertChainRpcError(
      down.buildTransfer(from, { kind: 'NATIVE', to: randomAddress(), value: '1' }),
      'transient',
      'RPC_UNAVAILABLE',
    );
    await assertChainRpcError(down.pendingNonce!(from), 'transient', 'RPC_UNAVAILABLE');
    await assertChainRpcError(down.broadcast('0x02f0'), 'transient', 'RPC_UNAVAILABLE');
    await assertChainRpcError(down.observe([...mined]), 'transient', 'RPC_UNAVAILABLE');
  });
});
