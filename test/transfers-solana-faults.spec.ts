/**
 * Solana payments against a node that lies the way real ones do, through the fault-injecting JSON-RPC proxy
 * (fixtures/rpc-fault-proxy.ts) between the appliance and the Solana façade: a send's answer lost, "Blockhash not
 * found" for a send the node took while its status lags, a node that refuses every send. What must hold: a payment
 * that may have executed is never recorded `failed` nor releases its wallet; only a blockhash proven expired at
 * finalized commitment, with the signature absent, ends one. Every outcome is checked against the node's state.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, beforeEach, test } from 'node:test';
import { Connection, Keypair, PublicKey } from '@solana/web3.js';
import bs58 from 'bs58';
import { type RpcFaultProxy, startRpcFaultProxy } from '../fixtures/rpc-fault-proxy.ts';
import { airdrop } from '../fixtures/solana-facade/facade-client.ts';
import { type SolanaFacade, startSolanaFacade } from '../fixtures/solana-facade.ts';
import { chainsWithDelays } from './helpers/patient-chains.ts';
import { type Partner, startTestService, type TestService, tempDataDir } from './helpers/service.ts';

let facade: SolanaFacade;
let proxy: RpcFaultProxy;
let svc: TestService;
let partner: Partner;
let connection: Connection;

before(async () => {
  // A blockhash valid for 40 blocks of 50 ms: an expiry takes seconds, not a minute.
  facade = await startSolanaFacade({ blockhashValidBlocks: 40 });
  proxy = await startRpcFaultProxy(facade.rpcUrl);
  const dir = tempDataDir('wcs-chains-');
  const file = path.join(dir, 'chains.json');
  fs.writeFileSync(file, JSON.stringify({ solana: [{ network: 'SOLANA_DEVNET', rpcUrl: proxy.url }] }));
  svc = await startTestService(
    { CHAINS_FILE: file, CHAIN_POLL_INTERVAL_MS: '100' },
    // A dropped transaction is proven expired once absent 5 s: longer than the status lag the tests inject after its blockhash died (20 s by default).
    { api: { createChain: chainsWithDelays({ solanaExpiryProofAfterMs: 5_000 }) } },
  );
  fs.rmSync(dir, { recursive: true, force: true });
  partner = await svc.newPartner();
  connection = new Connection(facade.rpcUrl, 'confirmed');
});

beforeEach(() => proxy.clear());

after(async () => {
  await svc?.stop();
  await proxy?.close();
  await facade?.stop();
});

let walletCount = 0;
async function newWallet(): Promise<{ id: string; address: string }> {
  const r = await svc.v1(partner.secret, 'POST', '/wallets', {
    type: 'SOLANA',
    userIdentifier: `sol-faults-${walletCount++}`,
    userIdentifierType: 'CUSTOM_ID',
  });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  await airdrop(connection, new PublicKey(r.body.address), 2_000_000_000);
  return { id: r.body.id, address: r.body.address };
}

const transfer = (walletId: string, to: PublicKey, value = '1000000') =>
  svc.v1(partner.secret, 'POST', `/wallets/${walletId}/transfer`, {
    to: to.toBase58(),
    value,
    network: 'SOLANA_DEVNET',
  });

/** Polls the record until `done`; every status seen on the way is returned. */
async function follow(walletId: string, id: string, done: (r: any) => boolean, timeoutMs = 20_000) {
  const seen: string[] = [];
  const until = Date.now() + timeoutMs;
  for (;;) {
    const r = (await svc.v1(partner.secret, 'GET', `/wallets/${walletId}/transactions/${id}`)).body;
    if (seen.at(-1) !== r.status) seen.push(r.status);
    if (done(r)) return { record: r, seen };
    if (Date.now() > until) throw new Error(`record ${JSON.stringify(r)} after ${seen.join(' → ')}`);
    await new Promise((res) => setTimeout(res, 50));
  }
}

/** Hides `signature` from getSignatureStatuses answers until `until` (a node whose status index lags). */
function hideStatus(signature: () => string | undefined, until: number) {
  proxy.add({
    method: 'getSignatureStatuses',
    until,
    fault: {
      kind: 'edit-result',
      edit(result, call) {
        const asked = (call.params?.[0] ?? []) as string[];
        const r = result as { context: unknown; value: unknown[] };
        return { ...r, value: r.value.map((v, i) => (asked[i] === signature() ? null : v)) };
      },
    },
  });
}

test('a send whose answer was lost: pending, the wallet held, then confirmed; paid once', async () => {
  const w = await newWallet();
  const to = Keypair.generate().publicKey;
  proxy.add({ method: 'sendTransaction', times: 1, fault: { kind: 'drop-answer' } });
  const r = await transfer(w.id, to);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.equal(r.body.status, 'pending');
  assert.equal((await transfer(w.id, to)).body.code, 'WALLET_TRANSACTION_UNRESOLVED');
  const { seen } = await follow(w.id, r.body.transactionId, (x) => x.status === 'confirmed');
  assert.ok(!seen.includes('failed'), seen.join(' → '));
  assert.equal(await connection.getBalance(to), 1_000_000, 'paid exactly once');
});

test('"Blockhash not found" for a send the node took, its status hidden: never failed, the wallet held, then confirmed', async () => {
  const w = await newWallet();
  const to = Keypair.generate().publicKey;
  let signature: string | undefined;
  proxy.add({
    method: 'sendTransaction',
    times: 1,
    // The signature the look-up will ask for: the transaction's first (base64 wire bytes 1 to 65).
    when: (c) => {
      signature ??= bs58.encode(Buffer.from(String(c.params?.[0]), 'base64').subarray(1, 65));
      return true;
    },
    fault: { kind: 'error-after-forward', code: -32002, message: 'Transaction simulation failed: Blockhash not found' },
  });
  const hiddenUntil = Date.now() + 4_000;
  hideStatus(() => signature, hiddenUntil);
  const r = await transfer(w.id, to);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.equal(signature, r.body.txHash);
  assert.equal(r.body.status, 'pending', 'the submission is unknown, not refused');
  const { seen } = await follow(w.id, r.body.transactionId, () => Date.now() > hiddenUntil - 500, 10_000);
  assert.ok(!seen.includes('failed'), `while hidden: ${seen.join(' → ')}`);
  assert.equal((await transfer(w.id, to)).body.code, 'WALLET_TRANSACTION_UNRESOLVED', 'still held');
  const { seen: later } = await follow(w.id, r.body.transactionId, (x) => x.status === 'confirmed');
  assert.ok(!later.includes('failed'), later.join(' → '));
  assert.equal(await connection.getBalance(to), 1_000_000, 'paid exactly once');
});

test('a node that refuses every send ("Blockhash not found", nothing forwarded): pending until the blockhash is proven expired, then TRANSACTION_EXPIRED and released', async () => {
  const w = await newWallet();
  const to = Keypair.generate().publicKey;
  const refuse = proxy.add({
    method: 'sendTransaction',
    fault: { kind: 'error', code: -32002, message: 'Transaction simulation failed: Blockhash not found' },
  });
  const r = await transfer(w.id, to);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.equal(r.body.status, 'pending');
  const { record, seen } = await follow(w.id, r.body.transactionId, (x) => x.status === 'failed', 30_000);
  assert.deepEqual(seen, ['pending', 'failed']);
  assert.equal(record.failureCode, 'TRANSACTION_EXPIRED');
  assert.equal(record.failureStage, 'broadcast', 'no node ever took it');
  assert.equal(record.monitoring?.reason, 'expired');
  refuse();
  const next = await transfer(w.id, to, '2000000');
  assert.equal(next.status, 200, 'the wallet is released');
  await follow(w.id, next.body.transactionId, (x) => x.status === 'confirmed');
  assert.equal(await connection.getBalance(to), 2_000_000, 'only the second payment executed');
});
