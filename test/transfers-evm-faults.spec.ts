/**
 * EVM payments against a node that lies the way real ones do, through a fault-injecting JSON-RPC proxy between the
 * appliance and anvil (fixtures/rpc-fault-proxy.ts): errors for sends it took, a receipt index lagging the state,
 * transactions hidden from lookups. What must hold: a payment that may have executed is never recorded `failed` nor
 * releases its wallet; a rejection counts only when it proves the bytes cannot be in; a replacement is declared
 * only once the winning transaction is found, and named. Every outcome is checked against the chain itself.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, beforeEach, test } from 'node:test';
import { createEvmChain } from '../chains/evm/evm-chain.ts';
import { paymentFamilies } from '../chains/payment-families.ts';
import { type Anvil, startAnvil } from '../fixtures/anvil.ts';
import { dropTransaction, mine, rpc, sendRawTransaction, setAutomine, setBalance } from '../fixtures/evm-helpers.ts';
import { type RpcFaultProxy, startRpcFaultProxy } from '../fixtures/rpc-fault-proxy.ts';
import { type Partner, startTestService, type TestService, tempDataDir } from './helpers/service.ts';

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
      api: {
        // Proofs are sought from the first round (the service waits 10 s before reading a finalized nonce).
        createChain: (family, config) =>
          family === 'EVM'
            ? createEvmChain({
                chainId: Number(config.chainRef),
                rpcUrl: config.rpcUrl,
                environment: config.environment,
                nonceCheckAfterMs: 0,
              })
            : paymentFamilies[family].createChain(config),
      },
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
  const r = await transfer(w.id, to);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const hiddenUntil = Date.now() + 4_000;
  proxy.add({ method: 'eth_getTransactionReceipt', until: hiddenUntil, fault: { kind: 'result', result: null } });
  proxy.add({ method: 'eth_getTransactionByHash', until: hiddenUntil, fault: { kind: 'result', result: null } });
  // Past finality while hidden: the finalized nonce passes the payment's, and the poller seeks a proof.
  const { seen } = await follow(w.id, r.body.transactionId, () => Date.now() > hiddenUntil - 1_000, 10_000);
  assert.ok(!seen.includes('failed'), `while receipts were hidden: ${seen.join(' → ')}`);
  const held = await transfer(w.id, to);
  assert.equal(held.body.code, 'WALLET_TRANSACTION_UNRESOLVED', 'the wallet is still held');
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
