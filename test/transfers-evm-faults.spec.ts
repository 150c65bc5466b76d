/**
 * EVM payments against a node that lies the way real ones do, through a fault-injecting JSON-RPC proxy between the
 * appliance and anvil (fixtures/rpc-fault-proxy.ts): errors for sends it took, a receipt index lagging the state,
 * transactions hidden from lookups. What must hold: a payment that may have executed is never recorded `failed` nor
 * releases its wallet; a rejection counts only when it proves the bytes cannot be in; a replacement is declared
 * only once the winning transaction is found, and named. Every outcome is checked against the chain itself.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, beforeEach, test } from 'node:test';
import { promisify } from 'node:util';
import { type Anvil, startAnvil } from '../fixtures/anvil.ts';
import { dropTransaction, mine, rpc, sendRawTransaction, setAutomine, setBalance } from '../fixtures/evm-helpers.ts';
import { type RpcFaultProxy, startRpcFaultProxy } from '../fixtures/rpc-fault-proxy.ts';
import { nodeArgs } from './helpers/entry.ts';
import { chainsWithDelays } from './helpers/patient-chains.ts';
import { type Partner, ROOT, startTestService, type TestService, tempDataDir } from './helpers/service.ts';

let anvil: Anvil;
let proxy: RpcFaultProxy;
let svc: TestService;
let partner: Partner;

before(async () => {
  anvil = await startAnvil({ slotsInAnEpoch: 1 });
  proxy = await startRpcFaultProxy(anvil.rpcUrl);
  const dir = tempDataDir('wcs-chains-');
  const file = path.join(dir, 'chains.json');
  fs.writeFileSync(file, JSON.stringify({ evm: [{ chainId: 31337, rpcUrl: proxy.url, environment: 'any' }] }));
  svc = await startTestService(
    { CHAINS_FILE: file, CHAIN_POLL_INTERVAL_MS: '100' },
    {
      // Proofs are sought from the first round (the service waits 10 s before reading a finalized nonce).
      api: { createChain: chainsWithDelays({ evmNonceCheckAfterMs: 0 }) },
    },
  );
  fs.rmSync(dir, { recursive: true, force: true });
  partner = await svc.newPartner();
});

beforeEach(() => proxy.clear());

after(async () => {
  await svc?.stop();
  await proxy?.close();
  await anvil?.stop();
});

const hex = (n: bigint | number) => `0x${n.toString(16)}`;
let walletCount = 0;
async function newWallet(fundWei = 10n ** 18n): Promise<{ id: string; address: `0x${string}` }> {
  const r = await svc.v1(partner.secret, 'POST', '/wallets', {
    type: 'EVM',
    userIdentifier: `faults-${walletCount++}`,
    userIdentifierType: 'CUSTOM_ID',
  });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  if (fundWei > 0n) await setBalance(anvil.rpcUrl, r.body.address, fundWei);
  return { id: r.body.id, address: r.body.address };
}

const balance = async (address: string) =>
  BigInt(await rpc<string>(anvil.rpcUrl, 'eth_getBalance', [address, 'latest']));
const record = async (walletId: string, id: string) =>
  (await svc.v1(partner.secret, 'GET', `/wallets/${walletId}/transactions/${id}`)).body;

/**
 * Mines and waits until the record is terminal and `done` says so; every status seen on the way is returned, so a
 * test can assert the record never said `failed` meanwhile.
 */
async function follow(walletId: string, id: string, done: (r: any) => boolean, timeoutMs = 20_000) {
  const seen: string[] = [];
  const until = Date.now() + timeoutMs;
  for (;;) {
    const r = await record(walletId, id);
    if (seen.at(-1) !== r.status) seen.push(r.status);
    if (done(r)) return { record: r, seen };
    if (Date.now() > until) throw new Error(`record ${JSON.stringify(r)} after ${seen.join(' → ')}`);
    await mine(anvil.rpcUrl, 1);
    await new Promise((res) => setTimeout(res, 50));
  }
}

const transfer = (walletId: string, to: string, value = '1000') =>
  svc.v1(partner.secret, 'POST', `/wallets/${walletId}/transfer`, { to, value, chainId: '31337' });

test('a send the node took but answered "-32000 request timed out": the partner hears pending, the wallet stays held, the payment confirms once', async () => {
  const w = await newWallet();
  const to = '0x00000000000000000000000000000000000A0001';
  proxy.add({
    method: 'eth_sendRawTransaction',
    times: 1,
    fault: { kind: 'error-after-forward', code: -32000, message: 'request timed out' },
  });
  const r = await transfer(w.id, to);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.equal(r.body.status, 'pending');
  const second = await transfer(w.id, to);
  assert.equal(second.status, 409, JSON.stringify(second.body));
  assert.equal(second.body.code, 'WALLET_TRANSACTION_UNRESOLVED');
  const { record: final, seen } = await follow(w.id, r.body.transactionId, (x) => x.status === 'confirmed');
  assert.ok(!seen.includes('failed'), seen.join(' → '));
  assert.equal(final.hash, r.body.txHash);
  assert.equal(await balance(to), 1000n, 'paid exactly once');
});

test('receipts hidden for a while (a receipt index behind the state): the payment is never failed and confirms when they return', async () => {
  const w = await newWallet();
  const to = '0x00000000000000000000000000000000000A0002';
  // Hidden from before the send until removed after the hold is checked: on a loaded machine the poller could
  // otherwise see the receipt (and settle the payment) between the answer and the hiding.
  const unhide = [
    proxy.add({ method: 'eth_getTransactionReceipt', fault: { kind: 'result', result: null } }),
    proxy.add({ method: 'eth_getTransactionByHash', fault: { kind: 'result', result: null } }),
  ];
  const r = await transfer(w.id, to);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const hiddenFor = Date.now() + 3_000;
  // Past finality while hidden: the finalized nonce passes the payment's, and the poller seeks a proof.
  const { seen } = await follow(w.id, r.body.transactionId, () => Date.now() > hiddenFor, 10_000);
  assert.ok(!seen.includes('failed'), `while receipts were hidden: ${seen.join(' → ')}`);
  const held = await transfer(w.id, to);
  for (const remove of unhide) remove();
  const during = await svc.v1(partner.secret, 'GET', `/wallets/${w.id}/transactions/${r.body.transactionId}`);
  assert.equal(
    held.body.code,
    'WALLET_TRANSACTION_UNRESOLVED',
    `the wallet is still held: ${held.status} ${JSON.stringify(held.body)}; the payment: ${JSON.stringify(during.body)}`,
  );
  const { record: final, seen: after } = await follow(w.id, r.body.transactionId, (x) => x.status === 'confirmed');
  assert.ok(!after.includes('failed'), after.join(' → '));
  assert.equal(final.monitoring?.reason, undefined);
  assert.ok((await balance(to)) >= 1000n);
});

test('"nonce too low" for a send the node took, the transaction hidden from lookups: pending, held, then confirmed; nothing paid twice', async () => {
  const w = await newWallet();
  const to = '0x00000000000000000000000000000000000A0003';
  const hiddenUntil = Date.now() + 3_000;
  proxy.add({
    method: 'eth_sendRawTransaction',
    times: 1,
    fault: { kind: 'error-after-forward', code: -32000, message: 'nonce too low' },
  });
  proxy.add({ method: 'eth_getTransactionByHash', until: hiddenUntil, fault: { kind: 'result', result: null } });
  proxy.add({ method: 'eth_getTransactionReceipt', until: hiddenUntil, fault: { kind: 'result', result: null } });
  const r = await transfer(w.id, to);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.equal(r.body.status, 'pending');
  const second = await transfer(w.id, to);
  assert.equal(second.body.code, 'WALLET_TRANSACTION_UNRESOLVED', JSON.stringify(second.body));
  const { seen } = await follow(w.id, r.body.transactionId, (x) => x.status === 'confirmed');
  assert.ok(!seen.includes('failed'), seen.join(' → '));
  assert.equal(await balance(to), 1000n);
});

test('a payment whose nonce another transaction took fails REPLACED, naming the winner found on the chain', async () => {
  const w = await newWallet();
  const to = '0x00000000000000000000000000000000000A0004';
  await setAutomine(anvil.rpcUrl, false);
  try {
    const r = await transfer(w.id, to);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.status, 'submitted');
    const nonce = Number(await rpc<string>(anvil.rpcUrl, 'eth_getTransactionCount', [w.address, 'latest']));
    // The network loses ours; another transaction of the same account takes its nonce.
    await dropTransaction(anvil.rpcUrl, r.body.txHash);
    await rpc(anvil.rpcUrl, 'anvil_impersonateAccount', [w.address]);
    const winner = await rpc<string>(anvil.rpcUrl, 'eth_sendTransaction', [
      {
        from: w.address,
        to: '0x00000000000000000000000000000000000A0005',
        value: hex(7),
        nonce: hex(nonce),
        gas: hex(21_000),
      },
    ]);
    await rpc(anvil.rpcUrl, 'anvil_stopImpersonatingAccount', [w.address]);
    // While hidden, the receipt of ours would be as absent as it really is: only the winner found proves it.
    proxy.add({
      method: 'eth_getTransactionReceipt',
      fault: { kind: 'result', result: null },
      when: (c) => c.params?.[0] === r.body.txHash,
    });
    const { record: final } = await follow(w.id, r.body.transactionId, (x) => x.status === 'failed');
    assert.equal(final.failureCode, 'REPLACED');
    assert.equal(final.monitoring?.reason, 'nonce_consumed');
    assert.equal(final.monitoring?.winningHash, winner);
    assert.equal(await balance(to), 0n, 'ours never executed');
  } finally {
    await setAutomine(anvil.rpcUrl, true);
  }
});

test('a broadcast refused for insufficient funds releases the wallet, but its bytes stay watched: sent later, the record confirms', async () => {
  const w = await newWallet(0n);
  const to = '0x00000000000000000000000000000000000A0006';
  const r = await transfer(w.id, to);
  assert.equal(r.status, 400, JSON.stringify(r.body));
  assert.equal(r.body.code, 'INSUFFICIENT_NATIVE_BALANCE');
  assert.equal((await record(w.id, r.body.transactionId)).status, 'failed');
  // The partner holds the signed bytes; the wallet is funded, and the bytes are sent by someone else.
  await setBalance(anvil.rpcUrl, w.address, 10n ** 18n);
  await sendRawTransaction(anvil.rpcUrl, r.body.signedTransaction);
  const { record: final } = await follow(w.id, r.body.transactionId, (x) => x.status === 'confirmed');
  assert.ok(final.blockNumber);
  assert.equal(await balance(to), 1000n);
});

test('a payment that can never resolve: sign-only cannot take its nonce; the operator releases the hold (CLI); the record keeps its status, stays watched, and is settled by the chain', async () => {
  const w = await newWallet();
  const to = '0x00000000000000000000000000000000000A0007';
  // A node that refuses every send with an answer that proves nothing: the payment retries, holding the wallet.
  const refuse = proxy.add({
    method: 'eth_sendRawTransaction',
    fault: { kind: 'error', code: -32603, message: 'internal error' },
  });
  const r = await transfer(w.id, to, '1000');
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.equal(r.body.status, 'pending');
  assert.equal((await transfer(w.id, to)).body.code, 'WALLET_TRANSACTION_UNRESOLVED');
  // Nor can the hold be bypassed by signing only: not a transfer (the node's pending nonce is the held one, as the
  // node never got it), nor a transaction with the held nonce; another nonce is the partner's business.
  const signOnly = await svc.v1(partner.secret, 'POST', `/wallets/${w.id}/transfer`, {
    to,
    value: '1000',
    chainId: '31337',
    broadcast: false,
  });
  assert.equal(signOnly.status, 409, JSON.stringify(signOnly.body));
  assert.equal(signOnly.body.code, 'WALLET_TRANSACTION_UNRESOLVED');
  assert.equal(signOnly.body.blockingTransactionId, r.body.transactionId);
  const held = Number(await rpc<string>(anvil.rpcUrl, 'eth_getTransactionCount', [w.address, 'pending']));
  const signTransaction = (nonce: number) =>
    svc.v1(partner.secret, 'POST', `/wallets/${w.id}/sign-transaction`, {
      transaction: {
        to,
        value: '1',
        chainId: 31337,
        type: 2,
        nonce,
        gasLimit: '21000',
        maxFeePerGas: '3000000000',
        maxPriorityFeePerGas: '1000000000',
      },
    });
  const sameNonce = await signTransaction(held);
  assert.equal(sameNonce.status, 409, JSON.stringify(sameNonce.body));
  assert.equal(sameNonce.body.code, 'WALLET_TRANSACTION_UNRESOLVED');
  assert.equal((await signTransaction(held + 1)).status, 200);

  const bad = await svc.admin('POST', `/wallets/${w.id}/release-hold`, { chainKey: 'evm:31337', reason: 'x' });
  assert.equal(bad.status, 400, 'releasedBy is required');
  const elsewhere = await svc.admin('POST', `/wallets/${w.id}/release-hold`, {
    chainKey: 'solana:devnet',
    reason: 'x',
    releasedBy: 'alice',
  });
  assert.equal(elsewhere.status, 404);
  assert.equal(elsewhere.body.code, 'HOLD_NOT_FOUND');

  const { stdout } = await promisify(execFile)(
    process.execPath,
    nodeArgs(
      'bin/admin',
      'release-hold',
      w.id,
      'evm:31337',
      '--reason',
      'the node refuses every send',
      '--by',
      'alice',
      '--url',
      svc.adminUrl,
      '--json',
    ),
    { cwd: ROOT, env: { ...process.env, ADMIN_TOKEN: svc.adminToken } },
  );
  const released = JSON.parse(stdout);
  assert.equal(released.transactionId, r.body.transactionId);
  assert.equal(released.status, 'pending', 'a release claims no outcome');
  assert.equal(released.releasedBy, 'alice');
  const kept = await record(w.id, r.body.transactionId);
  assert.equal(kept.status, 'pending');
  assert.equal(kept.monitoring?.operatorRelease?.reason, 'the node refuses every send');
  const again = await svc.admin('POST', `/wallets/${w.id}/release-hold`, {
    chainKey: 'evm:31337',
    reason: 'twice',
    releasedBy: 'alice',
  });
  assert.equal(again.body.code, 'HOLD_NOT_FOUND', 'released once');

  // The wallet pays again; the node now takes sends. The new payment uses the nonce the stuck one never got in
  // with, so the chain settles the stuck one: replaced, naming the winner. The service never resent it.
  refuse();
  const mark = proxy.calls.length;
  const next = await transfer(w.id, to, '2000');
  assert.equal(next.status, 200, JSON.stringify(next.body));
  await follow(w.id, next.body.transactionId, (x) => x.status === 'confirmed');
  const { record: settled } = await follow(w.id, r.body.transactionId, (x) => x.status === 'failed');
  assert.equal(settled.failureCode, 'REPLACED');
  assert.equal(settled.failureStage, 'broadcast', 'never accepted by a node');
  assert.equal(settled.monitoring?.winningHash, next.body.txHash);
  assert.equal(settled.monitoring?.operatorRelease?.reason, 'the node refuses every send');
  assert.equal(await balance(to), 2000n, 'only the new payment executed');
  const sends = proxy.calls.slice(mark).filter((c) => c.call.method === 'eth_sendRawTransaction');
  assert.equal(sends.length, 1, 'the released payment was not sent again once the node took sends');
});
