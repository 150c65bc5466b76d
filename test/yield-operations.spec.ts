/**
 * Yield deposits and withdrawals end to end (spec: Yield operation, Yield operation `status`, Yield routes): the whole
 * service (real enclave process, real SQLite) against anvil started with Sepolia's chain id and mining a block a
 * second, on which the local lending protocol sits at the real Sepolia Pool and USDC addresses
 * (fixtures/lending-protocol.ts). Every outcome is checked on the chain: the USDC and aToken balances, the pool's
 * allowance, and the wallet's nonce (how many transactions it sent).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { encodeLendingCall } from '../chains/evm/encode-lending-call.ts';
import { parseUsdcAmount } from '../chains/evm/parse-usdc-amount.ts';
import { type Anvil, startAnvil } from '../fixtures/anvil.ts';
import { rpc, sendImpersonated, setBalance, transactionCount } from '../fixtures/evm-helpers.ts';
import { installLendingProtocol, type LocalLendingProtocol, SEPOLIA_CHAIN_ID } from '../fixtures/lending-protocol.ts';
import { type RpcFaultProxy, startRpcFaultProxy } from '../fixtures/rpc-fault-proxy.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../fixtures/webhook-receiver.ts';
import { nodeArgs } from './helpers/entry.ts';
import { type Partner, ROOT, startTestService, type TestService, tempDataDir } from './helpers/service.ts';
import { settleOperation } from './helpers/spec-steps.ts';

let anvil: Anvil;
let proxy: RpcFaultProxy;
let receiver: WebhookReceiver;
let protocol: LocalLendingProtocol;
let svc: TestService;
let partner: Partner;

const usdc = (amount: string) => parseUsdcAmount(amount, 'amount');
const run = promisify(execFile);

before(async () => {
  anvil = await startAnvil({ chainId: SEPOLIA_CHAIN_ID, blockTimeSeconds: 0.25 });
  protocol = await installLendingProtocol(anvil.rpcUrl);
  // The service reaches the node through a proxy that passes everything unless a test asks it to fail a call.
  proxy = await startRpcFaultProxy(anvil.rpcUrl);
  const dir = tempDataDir('wcs-yield-ops-chains-');
  const chainsFile = path.join(dir, 'chains.json');
  fs.writeFileSync(
    chainsFile,
    JSON.stringify({ evm: [{ chainId: SEPOLIA_CHAIN_ID, rpcUrl: proxy.url, environment: 'development' }] }),
  );
  receiver = await startWebhookReceiver();
  svc = await startTestService(
    { CHAINS_FILE: chainsFile, CHAIN_POLL_INTERVAL_MS: '100', WEBHOOK_ALLOW_PRIVATE_TARGETS: '1' },
    { api: { webhooks: { extraCa: receiver.caPem } } },
  );
  fs.rmSync(dir, { recursive: true, force: true });
  partner = await svc.newPartner({ environment: 'development' });
  const hook = await svc.admin('PUT', `/api-keys/${partner.keyId}/webhook`, {
    url: receiver.url,
    events: ['send.broadcasted', 'send.confirmed', 'rest.transaction.confirmed', 'rest.transaction.failed'],
  });
  assert.equal(hook.status, 200, JSON.stringify(hook.body));
});

after(async () => {
  await svc?.stop();
  await proxy?.close();
  await receiver?.close();
  await anvil?.stop();
});

let walletCount = 0;
/** A wallet with gas and `funds` USDC. */
async function fundedWallet(funds = '1000'): Promise<{ id: string; address: `0x${string}` }> {
  const r = await svc.v1(partner.secret, 'POST', '/wallets', {
    type: 'EVM',
    userIdentifier: `yield-op-${walletCount++}`,
    userIdentifierType: 'CUSTOM_ID',
  });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  await setBalance(anvil.rpcUrl, r.body.address, 10n ** 18n);
  if (funds !== '0') await protocol.fundUsdc(r.body.address, usdc(funds));
  return { id: r.body.id, address: r.body.address };
}

/** A deposit or withdrawal under `key` (a new one by default; null: none). */
function post(walletId: string, kind: 'deposits' | 'withdrawals', body: unknown, key: string | null = randomUUID()) {
  return svc.v1(
    partner.secret,
    'POST',
    `/wallets/${walletId}/yield/${kind}`,
    body,
    key === null ? {} : { 'idempotency-key': key },
  );
}

async function operation(walletId: string, id: string) {
  const r = await svc.v1(partner.secret, 'GET', `/wallets/${walletId}/yield/operations/${id}`);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  // Submitted means signed bytes are stored (spec): never before a transaction of it has a hash.
  if (r.body.status === 'submitted')
    assert.ok(
      r.body.transactions.some((t: any) => t.hash),
      JSON.stringify(r.body),
    );
  return r.body;
}

/** Polls the operation until `until` holds (default: a status other than pending and submitted). */
const settle = (walletId: string, id: string, until?: (op: any) => boolean, timeoutMs?: number) =>
  settleOperation(() => operation(walletId, id), until, timeoutMs);

describe('deposits', () => {
  test('a short allowance: an approval of exactly the amount, confirmed, then the supply; confirmed at two confirmations', async () => {
    const wallet = await fundedWallet('1000');
    const positionPath = `/wallets/${wallet.id}/yield/position?chainId=${SEPOLIA_CHAIN_ID}`;
    const before = await svc.v1(partner.secret, 'GET', positionPath);
    assert.equal(before.status, 200, JSON.stringify(before.body));
    assert.equal(before.body.suppliedBalance, '0');
    const r = await post(wallet.id, 'deposits', { chainId: SEPOLIA_CHAIN_ID, amount: '250.5' });
    assert.equal(r.status, 202, JSON.stringify(r.body));
    assert.equal(r.body.status, 'pending');
    assert.equal(r.body.amount, '250.5');
    const op = await settle(wallet.id, r.body.id);
    assert.equal(op.status, 'confirmed', JSON.stringify(op));
    assert.deepEqual(
      op.transactions.map((t: any) => t.type),
      ['approve', 'supply'],
    );
    assert.equal(await protocol.suppliedBalance(wallet.address), usdc('250.5'));
    assert.equal(await protocol.usdcBalance(wallet.address), usdc('749.5'));
    const afterwards = await svc.v1(partner.secret, 'GET', positionPath);
    assert.equal(afterwards.body.suppliedBalance, '250.5');
    assert.equal(afterwards.body.withdrawal.availableAmount, '250.5');
    // Exactly the amount was approved, and the supply used it all: nothing is left allowed.
    assert.equal(await protocol.allowance(wallet.address), 0n);
    assert.equal(await transactionCount(anvil.rpcUrl, wallet.address), 2, 'two transactions: one approval, one supply');
    // Each step is a transaction record of kind yield.
    for (const step of op.transactions) {
      const rec = await svc.v1(partner.secret, 'GET', `/wallets/${wallet.id}/transactions/${step.transactionId}`);
      assert.equal(rec.status, 200);
      assert.equal(rec.body.intentKind, 'yield');
    }
    // Each transaction is heard of on its own, as a yield transaction (and never as a send.*), once final.
    const ids = op.transactions.map((t: any) => t.transactionId as string);
    const ofOp = () =>
      receiver.received
        .map((d) => JSON.parse(d.rawBody) as { type: string; data: Record<string, any> })
        .filter(
          (e) => ids.includes(e.data.transactionId) || op.transactions.some((t: any) => t.hash === e.data.txHash),
        );
    await receiver.waitFor(() => ofOp().length >= 2, 'the two rest.transaction.confirmed events', 30_000);
    assert.deepEqual(
      ofOp()
        .map((e) => `${e.type} ${e.data.intentKind} ${e.data.transactionId}`)
        .sort(),
      ids.map((id: string) => `rest.transaction.confirmed yield ${id}`).sort(),
    );
  });

  test('an allowance already enough: the supply alone; the same key and body answer the same operation', async () => {
    const wallet = await fundedWallet('100');
    await sendImpersonated(
      anvil.rpcUrl,
      wallet.address,
      protocol.market.usdc,
      encodeLendingCall(protocol.market, { kind: 'approve', amount: usdc('100') }).data,
    );
    const key = randomUUID();
    const r = await post(wallet.id, 'deposits', { chainId: SEPOLIA_CHAIN_ID, amount: '40.000000' }, key);
    assert.equal(r.status, 202, JSON.stringify(r.body));
    assert.equal(r.body.amount, '40', 'the amount is answered normalized');
    const op = await settle(wallet.id, r.body.id);
    assert.equal(op.status, 'confirmed', JSON.stringify(op));
    assert.deepEqual(
      op.transactions.map((t: any) => t.type),
      ['supply'],
    );
    const again = await post(wallet.id, 'deposits', { chainId: SEPOLIA_CHAIN_ID, amount: '40' }, key);
    assert.equal(again.status, 202);
    assert.equal(again.body.id, r.body.id);
    assert.equal(again.body.status, 'confirmed');
    assert.equal(await protocol.suppliedBalance(wallet.address), usdc('40'));
    assert.equal(
      await transactionCount(anvil.rpcUrl, wallet.address),
      2,
      "the partner's approval and the service's one supply",
    );
    const other = await post(wallet.id, 'deposits', { chainId: SEPOLIA_CHAIN_ID, amount: '41' }, key);
    assert.equal(other.status, 409);
    assert.equal(other.body.code, 'IDEMPOTENCY_CONFLICT');
  });

  test('the supply cap: requires_action before the supply is signed, the approval kept; the same POST resumes', async () => {
    const wallet = await fundedWallet('500');
    await protocol.setSupplyCap(1n);
    try {
      const key = randomUUID();
      const r = await post(wallet.id, 'deposits', { chainId: SEPOLIA_CHAIN_ID, amount: '300' }, key);
      assert.equal(r.status, 202, JSON.stringify(r.body));
      const held = await settle(wallet.id, r.body.id);
      assert.equal(held.status, 'requires_action', JSON.stringify(held));
      assert.equal(held.error!.code, 'LENDING_SUPPLY_CAP_EXCEEDED');
      assert.deepEqual(
        held.transactions.map((t: any) => t.type),
        ['approve'],
      );
      // Its approval had two confirmations; its record becomes confirmed once final.
      await settle(wallet.id, r.body.id, (op) => op.transactions[0].status === 'confirmed');
      assert.equal(await protocol.allowance(wallet.address), usdc('300'), 'the confirmed approval stays');
      assert.equal(await protocol.suppliedBalance(wallet.address), 0n);
      await protocol.setSupplyCap(0n);
      const resent = await post(wallet.id, 'deposits', { chainId: SEPOLIA_CHAIN_ID, amount: '300' }, key);
      assert.equal(resent.status, 202, JSON.stringify(resent.body));
      assert.equal(resent.body.id, r.body.id);
      const op = await settle(wallet.id, r.body.id);
      assert.equal(op.status, 'confirmed', JSON.stringify(op));
      assert.deepEqual(
        op.transactions.map((t: any) => t.type),
        ['approve', 'supply'],
      );
      assert.equal(await transactionCount(anvil.rpcUrl, wallet.address), 2, 'no second approval');
      assert.equal(await protocol.suppliedBalance(wallet.address), usdc('300'));
    } finally {
      await protocol.setSupplyCap(0n);
    }
  });

  test('a node that does not answer before signing: pending, nothing signed, retried until it answers', async () => {
    const wallet = await fundedWallet('20');
    // The preparation's read of the market (one eth_call) fails as a node's internal error, twice.
    const failed = () => proxy.calls.filter((c) => c.fault === 'error' && c.call.method === 'eth_call').length;
    const before = failed();
    proxy.add({ method: 'eth_call', fault: { kind: 'error', code: -32603, message: 'internal error' }, times: 2 });
    const r = await post(wallet.id, 'deposits', { chainId: SEPOLIA_CHAIN_ID, amount: '20' });
    assert.equal(r.status, 202, JSON.stringify(r.body));
    const waiting = await settle(wallet.id, r.body.id, () => failed() - before >= 1, 10_000);
    assert.equal(waiting.status, 'pending');
    assert.deepEqual(waiting.transactions, []);
    const op = await settle(wallet.id, r.body.id);
    assert.equal(op.status, 'confirmed', JSON.stringify(op));
    assert.equal(failed() - before, 2, 'both failures were met and retried');
    assert.equal(await protocol.suppliedBalance(wallet.address), usdc('20'));
  });

  test('twenty concurrent identical POSTs under one key: one operation, every answer names it; one approval, one supply', async () => {
    const wallet = await fundedWallet('30');
    const key = randomUUID();
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => post(wallet.id, 'deposits', { chainId: SEPOLIA_CHAIN_ID, amount: '30' }, key)),
    );
    for (const a of answers) assert.equal(a.status, 202, JSON.stringify(a.body));
    assert.equal(new Set(answers.map((a) => a.body.id)).size, 1, 'one operation');
    const op = await settle(wallet.id, answers[0]!.body.id);
    assert.equal(op.status, 'confirmed', JSON.stringify(op));
    assert.equal(await protocol.suppliedBalance(wallet.address), usdc('30'));
    assert.equal(await transactionCount(anvil.rpcUrl, wallet.address), 2, 'one approval, one supply');
  });

  test('twenty concurrent deposits under twenty keys on one wallet and chain: one admitted, nineteen 409', async () => {
    const wallet = await fundedWallet('40');
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => post(wallet.id, 'deposits', { chainId: SEPOLIA_CHAIN_ID, amount: '2' })),
    );
    const admitted = answers.filter((a) => a.status === 202);
    assert.equal(admitted.length, 1, JSON.stringify(answers.map((a) => a.status)));
    for (const a of answers.filter((x) => x.status !== 202)) {
      assert.equal(a.status, 409, JSON.stringify(a.body));
      assert.equal(a.body.code, 'YIELD_OPERATION_IN_PROGRESS');
      assert.equal(a.body.operationId, admitted[0]!.body.id);
    }
    assert.equal((await settle(wallet.id, admitted[0]!.body.id)).status, 'confirmed');
    assert.equal(await protocol.suppliedBalance(wallet.address), usdc('2'));
  });

  test('another active operation on the wallet and chain: 409 YIELD_OPERATION_IN_PROGRESS', async () => {
    const wallet = await fundedWallet('100');
    const first = await post(wallet.id, 'deposits', { chainId: SEPOLIA_CHAIN_ID, amount: '10' });
    assert.equal(first.status, 202);
    const second = await post(wallet.id, 'deposits', { chainId: SEPOLIA_CHAIN_ID, amount: '20' });
    assert.equal(second.status, 409, JSON.stringify(second.body));
    assert.equal(second.body.code, 'YIELD_OPERATION_IN_PROGRESS');
    assert.equal(second.body.operationId, first.body.id);
    assert.equal((await settle(wallet.id, first.body.id)).status, 'confirmed');
  });
});

describe('withdrawals', () => {
  test('`all` takes the whole supplied balance with its interest back to the wallet', async () => {
    const wallet = await fundedWallet('200');
    const dep = await post(wallet.id, 'deposits', { chainId: SEPOLIA_CHAIN_ID, amount: '200' });
    assert.equal((await settle(wallet.id, dep.body.id)).status, 'confirmed');
    await protocol.accrueInterest(100n);
    const supplied = await protocol.suppliedBalance(wallet.address);
    assert.ok(supplied > usdc('200'), 'interest accrued');
    const r = await post(wallet.id, 'withdrawals', { chainId: SEPOLIA_CHAIN_ID, amount: 'all' });
    assert.equal(r.status, 202, JSON.stringify(r.body));
    assert.equal(r.body.amount, 'all');
    const op = await settle(wallet.id, r.body.id);
    assert.equal(op.status, 'confirmed', JSON.stringify(op));
    assert.deepEqual(
      op.transactions.map((t: any) => t.type),
      ['withdraw'],
    );
    assert.equal(await protocol.suppliedBalance(wallet.address), 0n);
    assert.equal(await protocol.usdcBalance(wallet.address), supplied);
  });

  test("more than supplied: failed before anything is signed, the pool's reason named", async () => {
    const wallet = await fundedWallet('50');
    const dep = await post(wallet.id, 'deposits', { chainId: SEPOLIA_CHAIN_ID, amount: '50' });
    assert.equal((await settle(wallet.id, dep.body.id)).status, 'confirmed');
    const nonce = await transactionCount(anvil.rpcUrl, wallet.address);
    const r = await post(wallet.id, 'withdrawals', { chainId: SEPOLIA_CHAIN_ID, amount: '51' });
    const op = await settle(wallet.id, r.body.id);
    assert.equal(op.status, 'failed', JSON.stringify(op));
    assert.equal(op.error!.code, 'EXECUTION_FAILED');
    assert.match(op.error!.message, /NOT_ENOUGH_AVAILABLE_USER_BALANCE/);
    assert.deepEqual(op.transactions, []);
    assert.equal(await transactionCount(anvil.rpcUrl, wallet.address), nonce, 'nothing was sent');
  });
});

describe('cancellation and incident control', () => {
  test('cancel: unsigned work ends cancelled; a confirmed operation is not cancellable', async () => {
    const wallet = await fundedWallet('100');
    await protocol.setSupplyCap(1n);
    try {
      const r = await post(wallet.id, 'deposits', { chainId: SEPOLIA_CHAIN_ID, amount: '80' });
      assert.equal((await settle(wallet.id, r.body.id)).status, 'requires_action');
      const cancelled = await svc.v1(
        partner.secret,
        'POST',
        `/wallets/${wallet.id}/yield/operations/${r.body.id}/cancel`,
      );
      assert.equal(cancelled.status, 200, JSON.stringify(cancelled.body));
      assert.equal(cancelled.body.status, 'cancelled');
      assert.equal(await protocol.allowance(wallet.address), usdc('80'), "a confirmed approval's allowance remains");
    } finally {
      await protocol.setSupplyCap(0n);
    }
    const dep = await post(wallet.id, 'deposits', { chainId: SEPOLIA_CHAIN_ID, amount: '10' });
    assert.equal((await settle(wallet.id, dep.body.id)).status, 'confirmed');
    const late = await svc.v1(partner.secret, 'POST', `/wallets/${wallet.id}/yield/operations/${dep.body.id}/cancel`);
    assert.equal(late.status, 409);
    assert.equal(late.body.code, 'YIELD_OPERATION_NOT_CANCELLABLE');
  });

  test("the operator's switch (the CLI's set-yield): new operations 409 YIELD_DISABLED; positions and operations still answer", async () => {
    const wallet = await fundedWallet('10');
    const cli = async (...args: string[]) =>
      (
        await run(process.execPath, nodeArgs('bin/admin', ...args, '--url', svc.adminUrl), {
          cwd: ROOT,
          env: { ...process.env, ADMIN_TOKEN: svc.adminToken },
        })
      ).stdout;
    assert.match(
      await cli('set-yield', String(SEPOLIA_CHAIN_ID), '--enabled', 'off', '--reason', 'incident 42'),
      /disabled/,
    );
    assert.match(await cli('yield-chains'), new RegExp(`${SEPOLIA_CHAIN_ID}\tDISABLED\tincident 42`));
    try {
      const r = await post(wallet.id, 'deposits', { chainId: SEPOLIA_CHAIN_ID, amount: '1' });
      assert.equal(r.status, 409);
      assert.equal(r.body.code, 'YIELD_DISABLED');
      assert.match(r.body.message, /incident 42/);
      const pos = await svc.v1(
        partner.secret,
        'GET',
        `/wallets/${wallet.id}/yield/position?chainId=${SEPOLIA_CHAIN_ID}`,
      );
      assert.equal(pos.status, 200);
    } finally {
      const on = await svc.admin('PUT', `/yield/chains/${SEPOLIA_CHAIN_ID}`, { enabled: true });
      assert.equal(on.status, 200);
    }
    const r = await post(wallet.id, 'deposits', { chainId: SEPOLIA_CHAIN_ID, amount: '1' });
    assert.equal(r.status, 202);
    assert.equal((await settle(wallet.id, r.body.id)).status, 'confirmed');
  });
});

describe('bad input', () => {
  test('each answers a 4xx naming the problem, and admits nothing', async () => {
    const wallet = await fundedWallet('0');
    const cases: Array<[string, 'deposits' | 'withdrawals', unknown, string | null, number, string]> = [
      ['no key', 'deposits', { chainId: SEPOLIA_CHAIN_ID, amount: '1' }, null, 400, 'headers.idempotency-key'],
      ['all on a deposit', 'deposits', { chainId: SEPOLIA_CHAIN_ID, amount: 'all' }, 'k', 400, 'body.amount'],
      ['seven places', 'deposits', { chainId: SEPOLIA_CHAIN_ID, amount: '0.0000001' }, 'k', 400, 'body.amount'],
      ['not decimal', 'withdrawals', { chainId: SEPOLIA_CHAIN_ID, amount: '1e3' }, 'k', 400, 'body.amount'],
      ['zero', 'deposits', { chainId: SEPOLIA_CHAIN_ID, amount: '0' }, 'k', 400, 'body.amount'],
      ['a number', 'deposits', { chainId: SEPOLIA_CHAIN_ID, amount: 1 }, 'k', 400, 'body.amount'],
      ['another chain', 'deposits', { chainId: 5, amount: '1' }, 'k', 400, 'body.chainId'],
      ['a chain not configured', 'deposits', { chainId: 8453, amount: '1' }, 'k', 400, 'body.chainId'],
    ];
    for (const [name, kind, body, key, status, field] of cases) {
      const r = await post(wallet.id, kind, body, key === null ? null : `${key}-${randomUUID()}`);
      assert.equal(r.status, status, `${name}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.field ?? r.body.details?.field, field, `${name} names ${field}: ${JSON.stringify(r.body)}`);
    }
    const sol = await svc.v1(partner.secret, 'POST', '/wallets', {
      type: 'SOLANA',
      userIdentifier: 'yield-sol',
      userIdentifierType: 'CUSTOM_ID',
    });
    const r = await post(sol.body.id, 'deposits', { chainId: SEPOLIA_CHAIN_ID, amount: '1' });
    assert.equal(r.status, 400);
    assert.equal(r.body.code, 'UNSUPPORTED_OPERATION');
    const smallest = await post(wallet.id, 'deposits', { chainId: SEPOLIA_CHAIN_ID, amount: '0.000001' });
    assert.equal(smallest.status, 202, JSON.stringify(smallest.body));
    assert.equal(smallest.body.amount, '0.000001');
    const op = await settle(wallet.id, smallest.body.id);
    assert.equal(op.status, 'failed');
    assert.equal(op.error!.code, 'INSUFFICIENT_TOKEN_BALANCE');
  });
});

describe('depth on the canonical chain', () => {
  test('a supply reorganized out after one confirmation is not confirmed by the blocks that follow; it is once it lands again', async () => {
    const wallet = await fundedWallet('30');
    await sendImpersonated(
      anvil.rpcUrl,
      wallet.address,
      protocol.market.usdc,
      encodeLendingCall(protocol.market, { kind: 'approve', amount: usdc('30') }).data,
    );
    // Blocks only when this test mines them.
    await rpc(anvil.rpcUrl, 'evm_setIntervalMining', [0]);
    await rpc(anvil.rpcUrl, 'evm_setAutomine', [false]);
    let opId = '';
    try {
      const r = await post(wallet.id, 'deposits', { chainId: SEPOLIA_CHAIN_ID, amount: '30' });
      opId = r.body.id;
      assert.equal(r.status, 202, JSON.stringify(r.body));
      const signed = await settle(wallet.id, r.body.id, (op) => op.transactions[0]?.hash);
      const hash = signed.transactions[0].hash as string;
      await rpc(anvil.rpcUrl, 'evm_mine', []);
      const receipt = await rpc<{ blockNumber: string } | null>(anvil.rpcUrl, 'eth_getTransactionReceipt', [hash]);
      assert.ok(receipt, 'the supply is in a block: one confirmation');
      // The block is replaced by one without it (the transaction is dropped), and two more follow: two blocks after
      // the one it was first seen in, but not a confirmation of it.
      await rpc(anvil.rpcUrl, 'anvil_reorg', [1, []]);
      assert.equal(await rpc(anvil.rpcUrl, 'eth_getTransactionReceipt', [hash]), null);
      await rpc(anvil.rpcUrl, 'evm_mine', []);
      await rpc(anvil.rpcUrl, 'evm_mine', []);
      await new Promise((res) => setTimeout(res, 1_500));
      const meanwhile = await operation(wallet.id, r.body.id);
      assert.equal(meanwhile.status, 'submitted', JSON.stringify(meanwhile));
      assert.equal(await protocol.suppliedBalance(wallet.address), 0n);
    } finally {
      await rpc(anvil.rpcUrl, 'evm_setIntervalMining', [1]);
    }
    // The service sends the stored bytes again; they land, and two confirmations later the operation is confirmed.
    const op = await settle(wallet.id, opId, undefined, 90_000);
    assert.equal(op.status, 'confirmed', JSON.stringify(op));
    assert.equal(await protocol.suppliedBalance(wallet.address), usdc('30'));
    assert.equal(await transactionCount(anvil.rpcUrl, wallet.address), 2, "the partner's approval and one supply");
  });
});
