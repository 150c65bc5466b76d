/**
 * Yield operations against restarts and the chain (issue 24's tests; spec: Yield operation `status`): the whole service
 * (real enclave process, real SQLite) on anvil started with Sepolia's chain id and a block a second, the local lending
 * protocol at the real Sepolia addresses (fixtures/lending-protocol.ts), the service talking to the node through the
 * fault proxy (fixtures/rpc-fault-proxy.ts) so that a test can hold the preparation's chain read at the moment it
 * chooses.
 *
 * - A graceful restart (`stop({keepData: true})`, then a start on the same data directory) at each step of a deposit
 *   that needs an approval: while the first preparation reads the chain (pending), with the approval signed and not
 *   mined, with the approval mined and the supply's preparation reading the chain, with the supply signed and not
 *   mined, and with the supply mined while the service is down. Each ends `confirmed` with exactly one approval and
 *   one supply on the chain: the wallet's nonce is 2, its supplied balance the amount, the pool's allowance 0, and the
 *   wallet has two transaction records.
 * - A step whose saved nonce is consumed on the chain by another transaction: `failed`, NONCE_CONSUMED on the
 *   operation and on the step's record.
 * - A final transaction that reverts on the chain: `failed`.
 * - An operation of the same wallet on another chain (a second anvil with chain id 1, the protocol placed at the
 *   mainnet addresses of the production table) stays `pending` with no transaction while the first is active, then
 *   completes.
 *
 * SIGKILL of the API at the worst moment is in test/yield-crash.spec.ts (it runs alone).
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { encodeFunctionData, erc20Abi, getAddress } from 'viem';
import { encodeLendingCall } from '../chains/evm/encode-lending-call.ts';
import { parseUsdcAmount } from '../chains/evm/parse-usdc-amount.ts';
import { DEFAULT_LENDING_MARKETS } from '../chains/evm/resolve-lending-market.ts';
import { type Anvil, startAnvil } from '../fixtures/anvil.ts';
import { dropTransaction, mine, rpc, setBalance } from '../fixtures/evm-helpers.ts';
import { installLendingProtocol, type LocalLendingProtocol, SEPOLIA_CHAIN_ID } from '../fixtures/lending-protocol.ts';
import { type RpcFaultProxy, startRpcFaultProxy } from '../fixtures/rpc-fault-proxy.ts';
import { type Partner, startTestService, type TestService, tempDataDir } from './helpers/service.ts';
import { queryServiceDb, settleOperation } from './helpers/spec-steps.ts';

const MAINNET = 1;
let anvil: Anvil;
let anvilB: Anvil;
let proxy: RpcFaultProxy;
let protocol: LocalLendingProtocol;
let protocolB: LocalLendingProtocol;
let svc: TestService | undefined;
let partner: Partner;
let chainsDir = '';
let env: Record<string, string> = {};

const usdc = (amount: string) => parseUsdcAmount(amount, 'amount');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

before(async () => {
  [anvil, anvilB] = await Promise.all([
    startAnvil({ chainId: SEPOLIA_CHAIN_ID, blockTimeSeconds: 0.25 }),
    startAnvil({ chainId: MAINNET, blockTimeSeconds: 0.25 }),
  ]);
  protocol = await installLendingProtocol(anvil.rpcUrl);
  protocolB = await installLendingProtocol(anvilB.rpcUrl, {
    addresses: {
      pool: DEFAULT_LENDING_MARKETS[MAINNET].pool,
      usdc: DEFAULT_LENDING_MARKETS[MAINNET].usdc,
      aToken: getAddress('0xa7e0000000000000000000000000000000000002'),
    },
  });
  proxy = await startRpcFaultProxy(anvil.rpcUrl);
  chainsDir = tempDataDir('wcs-yield-restart-chains-');
  const chainsFile = path.join(chainsDir, 'chains.json');
  fs.writeFileSync(
    chainsFile,
    JSON.stringify({
      evm: [
        { chainId: SEPOLIA_CHAIN_ID, rpcUrl: proxy.url, environment: 'development' },
        { chainId: MAINNET, rpcUrl: anvilB.rpcUrl, environment: 'development' },
      ],
    }),
  );
  env = { CHAINS_FILE: chainsFile, CHAIN_POLL_INTERVAL_MS: '100' };
  svc = await startTestService(env);
  partner = await svc.newPartner({ environment: 'development' });
});

after(async () => {
  await rpc(anvil.rpcUrl, 'evm_setIntervalMining', [1]).catch(() => undefined);
  await svc?.stop();
  await proxy?.close();
  await Promise.all([anvil?.stop(), anvilB?.stop()]);
  if (chainsDir) fs.rmSync(chainsDir, { recursive: true, force: true });
});

// --- the service -----------------------------------------------------------------------------------------------

const service = (): TestService => {
  assert.ok(svc, 'the service is running');
  return svc;
};

/** A graceful stop of the whole service (API and enclave) and a start on the same data directory. */
async function restart(whileDown: () => Promise<void> = async () => undefined): Promise<void> {
  const dataDir = service().dataDir;
  await service().stop({ keepData: true });
  svc = undefined;
  await whileDown();
  svc = await startTestService(env, { dataDir });
}

const query = <T>(sql: string, ...params: unknown[]): T[] => queryServiceDb<T>(service().dataDir, sql, ...params);

/** The wallet's transaction records, as stored. */
const recordsOf = (walletId: string) =>
  query<{ id: string; status: string; hash: string | null; nonce: number | null }>(
    'select id, status, hash, nonce from transactions where wallet_id = ? order by seq',
    walletId,
  );

/** The operation's row and its actor's committed state, as stored. */
function storedOperation(id: string): { status: string; steps: unknown[]; state: string } {
  const [row] = query<{ status: string; steps: string }>('select status, steps from yield_operations where id = ?', id);
  const [actor] = query<{ state: string }>('select state from actor_snapshots where actor_id = ?', id);
  assert.ok(row && actor, `operation ${id} is stored`);
  return { status: row.status, steps: JSON.parse(row.steps) as unknown[], state: actor.state };
}

// --- the chain -------------------------------------------------------------------------------------------------

/** Interval mining of the Sepolia node off (transactions wait in its pool) or back to a block a second. */
const intervalMining = (on: boolean) => rpc(anvil.rpcUrl, 'evm_setIntervalMining', [on ? 1 : 0]);

async function nonceOf(address: string, rpcUrl = anvil.rpcUrl): Promise<number> {
  return Number(BigInt(await rpc<string>(rpcUrl, 'eth_getTransactionCount', [address, 'latest'])));
}

async function allowanceOf(address: `0x${string}`, p = protocol): Promise<bigint> {
  const data = encodeFunctionData({ abi: erc20Abi, functionName: 'allowance', args: [address, p.market.pool] });
  return BigInt(await rpc<string>(p.rpcUrl, 'eth_call', [{ to: p.market.usdc, data }, 'latest']));
}

/**
 * With interval mining off: mines the operation's approval, and one block more (its two confirmations, at which the
 * supply is prepared: actors/yield), and nothing after, so the supply stays in the pool.
 */
async function mineApprovalTwoConfirmations(walletId: string, id: string): Promise<void> {
  const signed = await settle(walletId, id, (op) => op.transactions[0]?.hash != null);
  await mine(anvil.rpcUrl, 1);
  assert.equal((await mined(signed.transactions[0].hash)).status, '0x1');
  await mine(anvil.rpcUrl, 1);
}

const inPool = async (hash: string) =>
  (await rpc<{ blockNumber: string | null } | null>(anvil.rpcUrl, 'eth_getTransactionByHash', [hash]))?.blockNumber ===
  null;

/** Sends a transaction from the wallet's address, impersonated on the node (the partner acting outside the service). */
async function sendAs(from: `0x${string}`, tx: Record<string, string>, rpcUrl = anvil.rpcUrl): Promise<string> {
  await rpc(rpcUrl, 'anvil_impersonateAccount', [from]);
  try {
    return await rpc<string>(rpcUrl, 'eth_sendTransaction', [{ from, ...tx }]);
  } finally {
    await rpc(rpcUrl, 'anvil_stopImpersonatingAccount', [from]);
  }
}

async function mined(hash: string, rpcUrl = anvil.rpcUrl): Promise<{ status: string }> {
  for (let i = 0; i < 100; i++) {
    const receipt = await rpc<{ status: string } | null>(rpcUrl, 'eth_getTransactionReceipt', [hash]);
    if (receipt) return receipt;
    await sleep(100);
  }
  assert.fail(`transaction ${hash} was not mined`);
}

// --- the partner -----------------------------------------------------------------------------------------------

let walletCount = 0;
/** A wallet with gas and `funds` USDC on the Sepolia node (and on chain 1's with `onB`). */
async function fundedWallet(funds: string, onB = false): Promise<{ id: string; address: `0x${string}` }> {
  const r = await service().v1(partner.secret, 'POST', '/wallets', {
    type: 'EVM',
    userIdentifier: `yield-restart-${walletCount++}`,
    userIdentifierType: 'CUSTOM_ID',
  });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  await setBalance(anvil.rpcUrl, r.body.address, 10n ** 18n);
  await protocol.fundUsdc(r.body.address, usdc(funds));
  if (onB) {
    await setBalance(anvilB.rpcUrl, r.body.address, 10n ** 18n);
    await protocolB.fundUsdc(r.body.address, usdc(funds));
  }
  return { id: r.body.id, address: r.body.address };
}

async function deposit(walletId: string, amount: string, chainId = SEPOLIA_CHAIN_ID): Promise<string> {
  const r = await service().v1(
    partner.secret,
    'POST',
    `/wallets/${walletId}/yield/deposits`,
    { chainId, amount },
    { 'idempotency-key': randomUUID() },
  );
  assert.equal(r.status, 202, JSON.stringify(r.body));
  assert.equal(r.body.status, 'pending');
  return r.body.id;
}

async function operation(walletId: string, id: string) {
  const r = await service().v1(partner.secret, 'GET', `/wallets/${walletId}/yield/operations/${id}`);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body;
}

/** Polls the operation every 100 ms until `until` holds (default: a status other than pending and submitted). */
const settle = (walletId: string, id: string, until?: (op: any) => boolean, timeoutMs?: number) =>
  settleOperation(() => operation(walletId, id), until, timeoutMs, 100);

/** Waits until the proxy has caught a call with `fault` (from call index `from` on). */
async function caught(fault: string, from: number): Promise<void> {
  const deadline = Date.now() + 15_000;
  while (!proxy.calls.slice(from).some((c) => c.fault === fault)) {
    assert.ok(Date.now() < deadline, `the proxy caught no ${fault} call`);
    await sleep(20);
  }
}

/** What a deposit that needed an approval must end as, whatever happened on the way: one approval, one supply. */
async function assertOneApprovalOneSupply(
  wallet: { id: string; address: `0x${string}` },
  id: string,
  amount: string,
): Promise<void> {
  const op = await settle(wallet.id, id);
  assert.equal(op.status, 'confirmed', JSON.stringify(op));
  assert.deepEqual(
    op.transactions.map((t: any) => t.type),
    ['approve', 'supply'],
  );
  // The operation is confirmed at two confirmations; its records settle at finality.
  await settle(wallet.id, id, (o) => o.transactions.every((t: any) => t.status === 'confirmed'));
  assert.equal(await nonceOf(wallet.address), 2, 'two transactions from the wallet: one approval, one supply');
  assert.equal(await protocol.suppliedBalance(wallet.address), usdc(amount), 'supplied once');
  assert.equal(await allowanceOf(wallet.address), 0n, 'the approval was exactly the amount, spent by the supply');
  const records = recordsOf(wallet.id);
  assert.equal(records.length, 2, `two records: ${JSON.stringify(records)}`);
  assert.deepEqual(
    records.map((r) => r.nonce),
    [0, 1],
  );
}

// --- restarts --------------------------------------------------------------------------------------------------

describe('a graceful restart at each step of a deposit resumes without a second approval or a second supply', () => {
  test('pending: restarted while the first preparation reads the chain', async () => {
    const wallet = await fundedWallet('100');
    const from = proxy.calls.length;
    // The preparation's one read of the market and the wallet (read-yield-position.ts: one eth_call) never answers.
    const release = proxy.add({ method: 'eth_call', fault: { kind: 'hang' }, times: 1 });
    try {
      const id = await deposit(wallet.id, '10');
      await caught('hang', from);
      const stored = storedOperation(id);
      assert.deepEqual([stored.status, stored.steps, stored.state], ['pending', [], 'preparing']);
      await restart();
      await assertOneApprovalOneSupply(wallet, id, '10');
    } finally {
      release();
    }
  });

  test('submitted: restarted with the approval signed and in the pool, not mined', async () => {
    const wallet = await fundedWallet('100');
    await intervalMining(false);
    try {
      const id = await deposit(wallet.id, '20');
      const signed = await settle(wallet.id, id, (op) => op.transactions[0]?.hash != null);
      assert.equal(signed.status, 'submitted');
      const approval = signed.transactions[0].hash as string;
      assert.ok(await inPool(approval), 'the approval waits in the pool');
      await restart();
      const after = await operation(wallet.id, id);
      assert.equal(after.status, 'submitted');
      assert.equal(after.transactions[0].hash, approval, 'the same approval after the restart');
      await intervalMining(true);
      await assertOneApprovalOneSupply(wallet, id, '20');
    } finally {
      await intervalMining(true);
    }
  });

  test("the approval mined: restarted while the supply's preparation reads the chain", async () => {
    const wallet = await fundedWallet('100');
    const id = await deposit(wallet.id, '30');
    // No eth_call is made while an approval is followed: the next one is the supply's preparation.
    await settle(wallet.id, id, (op) => op.transactions[0]?.hash != null);
    const from = proxy.calls.length;
    const release = proxy.add({ method: 'eth_call', fault: { kind: 'hang' }, times: 1 });
    try {
      await caught('hang', from);
      const stored = storedOperation(id);
      assert.equal(stored.state, 'preparing');
      assert.equal(stored.steps.length, 1, 'the approval only');
      const [approval] = recordsOf(wallet.id);
      assert.equal((await mined(approval!.hash!)).status, '0x1', 'the approval is mined');
      await restart();
      await assertOneApprovalOneSupply(wallet, id, '30');
    } finally {
      release();
    }
  });

  test('submitted: restarted with the supply signed and in the pool, not mined', async () => {
    const wallet = await fundedWallet('100');
    await intervalMining(false);
    try {
      const id = await deposit(wallet.id, '40');
      await mineApprovalTwoConfirmations(wallet.id, id);
      const signed = await settle(wallet.id, id, (op) => op.transactions[1]?.hash != null);
      const supply = signed.transactions[1].hash as string;
      assert.ok(await inPool(supply), 'the supply waits in the pool');
      await restart();
      assert.equal((await operation(wallet.id, id)).transactions[1].hash, supply, 'the same supply');
      await intervalMining(true);
      await assertOneApprovalOneSupply(wallet, id, '40');
    } finally {
      await intervalMining(true);
    }
  });

  test('the supply mined and final while the service is down', async () => {
    const wallet = await fundedWallet('100');
    await intervalMining(false);
    try {
      const id = await deposit(wallet.id, '50');
      await mineApprovalTwoConfirmations(wallet.id, id);
      const signed = await settle(wallet.id, id, (op) => op.transactions[1]?.hash != null);
      await restart(async () => {
        await mine(anvil.rpcUrl, 5);
        assert.equal((await mined(signed.transactions[1].hash)).status, '0x1');
      });
      await intervalMining(true);
      await assertOneApprovalOneSupply(wallet, id, '50');
    } finally {
      await intervalMining(true);
    }
  });
});

// --- the chain decides -----------------------------------------------------------------------------------------

/** A wallet whose allowance already covers `amount` (its own approval, nonce 0): a deposit is the supply alone. */
async function approvedWallet(amount: string) {
  const wallet = await fundedWallet(amount);
  const data = encodeLendingCall(protocol.market, { kind: 'approve', amount: usdc(amount) }).data;
  assert.equal((await mined(await sendAs(wallet.address, { to: protocol.market.usdc, data }))).status, '0x1');
  return wallet;
}

describe('the chain decides', () => {
  test("a step's saved nonce consumed by another transaction: failed, NONCE_CONSUMED on the operation and the step", async () => {
    const wallet = await approvedWallet('60');
    await intervalMining(false);
    try {
      const id = await deposit(wallet.id, '60');
      const signed = await settle(wallet.id, id, (op) => op.transactions[0]?.hash != null);
      assert.deepEqual(
        signed.transactions.map((t: any) => t.type),
        ['supply'],
      );
      const supply = signed.transactions[0];
      const [record] = recordsOf(wallet.id);
      assert.equal(record!.nonce, 1);
      // The node forgets the supply, and the wallet's key (outside the service) spends nonce 1 on something else, at a
      // fee no resend of the supply can replace.
      await dropTransaction(anvil.rpcUrl, supply.hash);
      const other = await sendAs(wallet.address, {
        to: '0x000000000000000000000000000000000000bEEF',
        value: '0x1',
        nonce: '0x1',
        maxFeePerGas: '0xe8d4a51000',
        maxPriorityFeePerGas: '0x174876e800',
      });
      await mine(anvil.rpcUrl, 1);
      assert.equal((await mined(other)).status, '0x1');
      await intervalMining(true);
      const op = await settle(wallet.id, id);
      assert.equal(op.status, 'failed', JSON.stringify(op));
      assert.equal(op.error.code, 'NONCE_CONSUMED');
      assert.equal(op.transactions[0].error?.code, 'NONCE_CONSUMED');
      const step = await service().v1(
        partner.secret,
        'GET',
        `/wallets/${wallet.id}/transactions/${supply.transactionId}`,
      );
      assert.equal(step.status, 200);
      assert.equal(step.body.status, 'failed');
      assert.equal(step.body.failureCode, 'NONCE_CONSUMED');
      assert.equal(await rpc(anvil.rpcUrl, 'eth_getTransactionReceipt', [supply.hash]), null, 'the supply never ran');
      assert.equal(await protocol.suppliedBalance(wallet.address), 0n);
      assert.equal(await nonceOf(wallet.address), 2);
    } finally {
      await intervalMining(true);
    }
  });

  test('the supply reverts on the chain (the reserve paused after it was signed): failed', async () => {
    const wallet = await approvedWallet('70');
    await intervalMining(false);
    try {
      const id = await deposit(wallet.id, '70');
      const signed = await settle(wallet.id, id, (op) => op.transactions[0]?.hash != null);
      await protocol.setReserve({ paused: true });
      await mine(anvil.rpcUrl, 1);
      assert.equal((await mined(signed.transactions[0].hash)).status, '0x0', 'the supply reverted');
      await intervalMining(true);
      const op = await settle(wallet.id, id);
      assert.equal(op.status, 'failed', JSON.stringify(op));
      assert.equal(op.error.code, 'EXECUTION_FAILED');
      assert.equal(op.transactions[0].transactionId, signed.transactions[0].transactionId);
      assert.equal(await protocol.suppliedBalance(wallet.address), 0n);
      assert.equal(await protocol.usdcBalance(wallet.address), usdc('70'));
      assert.equal(await nonceOf(wallet.address), 2, 'the approval and the reverted supply; nothing else');
    } finally {
      await protocol.setReserve({ paused: false });
      await intervalMining(true);
    }
  });
});

describe('another chain', () => {
  test('an operation on chain 1 admitted while one on Sepolia is active stays pending with no transaction, then completes', async () => {
    const wallet = await fundedWallet('100', true);
    await intervalMining(false);
    let a: string;
    let b: string;
    try {
      a = await deposit(wallet.id, '10');
      await settle(wallet.id, a, (op) => op.transactions[0]?.hash != null);
      b = await deposit(wallet.id, '15', MAINNET);
      // Long enough for several preparations of b (its first wait is 1 s, then 2 s).
      const until = Date.now() + 3_500;
      while (Date.now() < until) {
        const op = await operation(wallet.id, b);
        assert.equal(op.status, 'pending', JSON.stringify(op));
        assert.deepEqual(op.transactions, []);
        await sleep(200);
      }
      assert.equal(await nonceOf(wallet.address, anvilB.rpcUrl), 0, 'nothing sent on chain 1');
      assert.equal((await operation(wallet.id, a)).status, 'submitted');
    } finally {
      await intervalMining(true);
    }
    assert.equal((await settle(wallet.id, a)).status, 'confirmed');
    const opB = await settle(wallet.id, b);
    assert.equal(opB.status, 'confirmed', JSON.stringify(opB));
    assert.deepEqual(
      opB.transactions.map((t: any) => t.type),
      ['approve', 'supply'],
    );
    assert.equal(await nonceOf(wallet.address, anvilB.rpcUrl), 2);
    assert.equal(await protocolB.suppliedBalance(wallet.address), usdc('15'));
    assert.equal(await allowanceOf(wallet.address, protocolB), 0n);
    assert.equal(await protocol.suppliedBalance(wallet.address), usdc('10'));
  });
});
