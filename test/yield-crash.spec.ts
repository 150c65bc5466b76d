/**
 * SIGKILL of the API (the supervisor restarts it) with yield deposits at the worst moments (issue 24): a step's
 * transaction taken by the node while the service never heard the answer. The appliance runs under its supervisor on
 * anvil with Sepolia's chain id and a block a second, the local lending protocol at the real Sepolia addresses, the
 * service talking to the node through the fault proxy (fixtures/rpc-fault-proxy.ts), which forwards the send and holds
 * its answer. One kill serves three deposits caught at once: one with its approval's send answer lost, one with its
 * supply's, each of which must end `confirmed` with exactly one approval and one supply on the chain; and one whose
 * approval is being signed (the enclave stopped with SIGSTOP), which must end `failed` with SIGNING_INTERRUPTED and
 * nothing on the chain (the payment rule: an interrupted signature is never signed again), its wallet free for the
 * next deposit.
 *
 * Runs alone (it kills a process): not in a spec group.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, test } from 'node:test';
import { encodeFunctionData, erc20Abi, parseTransaction } from 'viem';
import { parseUsdcAmount } from '../chains/evm/parse-usdc-amount.ts';
import { type Anvil, startAnvil } from '../fixtures/anvil.ts';
import { rpc, setBalance } from '../fixtures/evm-helpers.ts';
import { installLendingProtocol, type LocalLendingProtocol, SEPOLIA_CHAIN_ID } from '../fixtures/lending-protocol.ts';
import { type RpcCall, type RpcFaultProxy, startRpcFaultProxy } from '../fixtures/rpc-fault-proxy.ts';
import { createPartnerKey } from './helpers/http.ts';
import { tempDataDir } from './helpers/service.ts';
import { queryServiceDb } from './helpers/spec-steps.ts';
import { alive, childPid, createPauser, type RunningSupervisor, startSupervisor } from './helpers/supervisor.ts';

const ADMIN = 'yield-crash-admin-token-0123456789abcdef';
let anvil: Anvil | undefined;
let proxy: RpcFaultProxy | undefined;
let sup: RunningSupervisor | undefined;
let dataDir = '';
/** The enclave this file stops (SIGSTOP): continued at the end whatever happened, so that it can be stopped. */
const enclaves = createPauser();

after(async () => {
  enclaves.resumeAll();
  await sup?.stop();
  await proxy?.close();
  await anvil?.stop();
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
});

const usdc = (amount: string) => parseUsdcAmount(amount, 'amount');

const query = <T>(sql: string, ...params: unknown[]): T[] => queryServiceDb<T>(dataDir, sql, ...params);

/** The recipient of a sent transaction, lower-case; undefined if it does not parse. */
function recipientOf(call: RpcCall): string | undefined {
  try {
    return parseTransaction(call.params?.[0] as `0x${string}`).to?.toLowerCase();
  } catch {
    return undefined;
  }
}

test('SIGKILL with an approval and a supply sent and their answers lost, and an approval being signed: one approval and one supply each, the interrupted one failed with nothing sent', async () => {
  anvil = await startAnvil({ chainId: SEPOLIA_CHAIN_ID, blockTimeSeconds: 1 });
  const protocol: LocalLendingProtocol = await installLendingProtocol(anvil.rpcUrl);
  proxy = await startRpcFaultProxy(anvil.rpcUrl);
  dataDir = tempDataDir('wcs-yield-crash-');
  const chains = path.join(dataDir, 'chains.json');
  fs.writeFileSync(
    chains,
    JSON.stringify({ evm: [{ chainId: SEPOLIA_CHAIN_ID, rpcUrl: proxy.url, environment: 'development' }] }),
  );
  sup = await startSupervisor({
    DATA_DIR: dataDir,
    ADMIN_TOKEN: ADMIN,
    CHAINS_FILE: chains,
    CHAIN_POLL_INTERVAL_MS: '100',
  });
  const key = await createPartnerKey(
    sup.adminUrl,
    ADMIN,
    { plan: 'enterprise', rateLimitPerMinute: 100_000 },
    'development',
  );
  const headers = { 'x-api-key': key.secretKey, 'content-type': 'application/json' };
  const v1 = async (method: string, route: string, body?: unknown, extra: Record<string, string> = {}) => {
    const r = await fetch(`${sup!.url}/v1${route}`, {
      method,
      headers: { ...headers, ...extra },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: r.status, body: (await r.json()) as any };
  };
  const newWallet = async (name: string) => {
    const r = await v1('POST', '/wallets', { type: 'EVM', userIdentifier: name, userIdentifierType: 'CUSTOM_ID' });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    await setBalance(anvil!.rpcUrl, r.body.address, 10n ** 18n);
    await protocol.fundUsdc(r.body.address, usdc('100'));
    return r.body as { id: string; address: `0x${string}` };
  };
  const deposit = async (walletId: string, amount: string) => {
    const r = await v1(
      'POST',
      `/wallets/${walletId}/yield/deposits`,
      { chainId: SEPOLIA_CHAIN_ID, amount },
      { 'idempotency-key': randomUUID() },
    );
    assert.equal(r.status, 202, JSON.stringify(r.body));
    return r.body.id as string;
  };
  const operation = async (walletId: string, id: string) => {
    const r = await v1('GET', `/wallets/${walletId}/yield/operations/${id}`);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return r.body;
  };
  const until = async (walletId: string, id: string, pred: (op: any) => boolean, what: string) => {
    let last: any;
    await sup!.waitFor(
      async () => {
        last = await operation(walletId, id).catch(() => undefined);
        return last !== undefined && pred(last);
      },
      `${what} (last seen ${JSON.stringify(last)})`,
      60_000,
    );
    return last;
  };
  const caught = (to: string) =>
    proxy!.calls.some(
      (c) =>
        c.fault === 'hang-after-forward' && c.call.method === 'eth_sendRawTransaction' && recipientOf(c.call) === to,
    );
  const pool = protocol.market.pool.toLowerCase();
  const token = protocol.market.usdc.toLowerCase();

  // The supply's deposit first: its approval goes through, then its supply is sent and the answer never comes back.
  const supplying = await newWallet('crash-supply');
  proxy.add({
    method: 'eth_sendRawTransaction',
    when: (c) => recipientOf(c) === pool,
    fault: { kind: 'hang-after-forward' },
    times: 1,
  });
  const supplyOp = await deposit(supplying.id, '25');
  await sup.waitFor(() => caught(pool), "the supply's send");
  // The approval's deposit: its approval is sent and the answer never comes back.
  const approving = await newWallet('crash-approve');
  proxy.add({
    method: 'eth_sendRawTransaction',
    when: (c) => recipientOf(c) === token,
    fault: { kind: 'hang-after-forward' },
    times: 1,
  });
  const approveOp = await deposit(approving.id, '35');
  await sup.waitFor(() => caught(token), "the approval's send");

  const stored = (id: string) =>
    query<{ status: string; steps: string }>('select status, steps from yield_operations where id = ?', id)[0]!;
  assert.equal(JSON.parse(stored(supplyOp).steps).length, 2, 'the supply is the second step');
  assert.equal(JSON.parse(stored(approveOp).steps).length, 1, 'the approval is the first step');

  // The third: its approval's signature asked of an enclave that answers nothing.
  const signing = await newWallet('crash-signing');
  const enclave = childPid(sup, 'enclave');
  enclaves.pause(enclave);
  let signingOp: string;
  try {
    signingOp = await deposit(signing.id, '45');
    await sup.waitFor(() => {
      const steps = JSON.parse(stored(signingOp).steps) as { transactionId: string }[];
      if (steps.length !== 1) return false;
      const [actor] = query<{ state: string }>(
        'select state from actor_snapshots where actor_id = ?',
        steps[0]!.transactionId,
      );
      return actor?.state === 'signing';
    }, "the approval's signing");
    // Let the request reach the enclave's socket.
    await new Promise((r) => setTimeout(r, 200));
    const restarts = [...sup.log().matchAll(/\[supervisor\] api restarted/g)].length;
    const api = sup.apiPid();
    process.kill(api, 'SIGKILL');
    await sup.waitFor(() => !alive(api), 'the API to be gone');
    enclaves.resume(enclave);
    await sup.waitFor(
      () => [...sup!.log().matchAll(/\[supervisor\] api restarted/g)].length > restarts,
      'the API restart',
      30_000,
    );
  } finally {
    enclaves.resume(enclave);
  }
  await sup.waitFor(
    async () => (await fetch(`${sup!.url}/readyz`).catch(() => undefined))?.status === 200,
    'the restarted API to be ready',
  );

  const nonceOf = async (address: string) =>
    Number(BigInt(await rpc<string>(anvil!.rpcUrl, 'eth_getTransactionCount', [address, 'latest'])));
  const allowanceOf = async (address: `0x${string}`) =>
    BigInt(
      await rpc<string>(anvil!.rpcUrl, 'eth_call', [
        {
          to: protocol.market.usdc,
          data: encodeFunctionData({ abi: erc20Abi, functionName: 'allowance', args: [address, protocol.market.pool] }),
        },
        'latest',
      ]),
    );
  for (const [wallet, id, amount] of [
    [supplying, supplyOp, '25'],
    [approving, approveOp, '35'],
  ] as const) {
    const op = await until(
      wallet.id,
      id,
      (o) => o.status !== 'pending' && o.status !== 'submitted',
      `operation ${id} to end`,
    );
    assert.equal(op.status, 'confirmed', JSON.stringify(op));
    assert.deepEqual(
      op.transactions.map((t: any) => t.type),
      ['approve', 'supply'],
    );
    assert.equal(await nonceOf(wallet.address), 2, 'one approval and one supply from the wallet');
    assert.equal(await protocol.suppliedBalance(wallet.address), usdc(amount));
    assert.equal(await allowanceOf(wallet.address), 0n);
    const records = query<{ nonce: number; hash: string }>(
      'select nonce, hash from transactions where wallet_id = ? order by seq',
      wallet.id,
    );
    assert.deepEqual(
      records.map((r) => r.nonce),
      [0, 1],
      'two records',
    );
    for (const [i, r] of records.entries()) assert.equal(op.transactions[i].hash, r.hash);
  }

  // The interrupted signature: the operation fails, nothing was sent, and the wallet takes the next deposit.
  const interrupted = await until(
    signing.id,
    signingOp,
    (o) => o.status !== 'pending' && o.status !== 'submitted',
    `operation ${signingOp} to end`,
  );
  assert.equal(interrupted.status, 'failed', JSON.stringify(interrupted));
  assert.equal(interrupted.error.code, 'SIGNING_INTERRUPTED');
  assert.deepEqual(
    interrupted.transactions.map((t: any) => [t.type, t.status, t.hash]),
    [['approve', 'failed', null]],
  );
  assert.equal(await nonceOf(signing.address), 0, 'nothing sent');
  assert.equal(await allowanceOf(signing.address), 0n);
  const next = await deposit(signing.id, '45');
  const done = await until(
    signing.id,
    next,
    (o) => o.status !== 'pending' && o.status !== 'submitted',
    `operation ${next} to end`,
  );
  assert.equal(done.status, 'confirmed', JSON.stringify(done));
  assert.equal(await nonceOf(signing.address), 2);
  assert.equal(await protocol.suppliedBalance(signing.address), usdc('45'));
});
