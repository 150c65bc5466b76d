/**
 * Auto-retry Solana transfers end to end: the appliance (real enclave process, real SQLite) on the Solana façade
 * through the fault-injecting JSON-RPC proxy, which swallows chosen sends (answered, never landed: a leader that
 * dropped them) and hides statuses (a lagging index). Blockhashes live 40 blocks of 50 ms, so an attempt expires in
 * about two seconds. Each row of the spec's Solana rules is checked against the node's state: the recipient is paid
 * once, the attempt that landed is the one the record names, and a new attempt follows only a proven expiry.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, beforeEach, test } from 'node:test';
import { Connection, Keypair, PublicKey, VersionedTransaction } from '@solana/web3.js';
import bs58 from 'bs58';
import { readComputeUnitPrice } from '../chains/solana/read-compute-unit-price.ts';
import { type RpcCall, type RpcFaultProxy, startRpcFaultProxy } from '../fixtures/rpc-fault-proxy.ts';
import { airdrop, facadeControl } from '../fixtures/solana-facade/facade-client.ts';
import { type SolanaFacade, startSolanaFacade } from '../fixtures/solana-facade.ts';
import { recordReader } from './helpers/records.ts';
import { type Partner, startTestService, type TestService, tempDataDir } from './helpers/service.ts';

/** An absence after expiry is proof once it lasted this long (the service's default is 20 s). */
const PROOF_AFTER_MS = 1_000;
/** EVM_REPLACEMENT_DELAY_MS: here, how long a rebuilt attempt the node could not prepare waits. */
const RETRY_MS = 300;

let facade: SolanaFacade;
let proxy: RpcFaultProxy;
let svc: TestService;
let partner: Partner;
let connection: Connection;

before(async () => {
  facade = await startSolanaFacade({ blockhashValidBlocks: 40 });
  proxy = await startRpcFaultProxy(facade.rpcUrl);
  const dir = tempDataDir('wcs-chains-');
  const file = path.join(dir, 'chains.json');
  fs.writeFileSync(
    file,
    JSON.stringify({
      solana: [{ network: 'SOLANA_DEVNET', rpcUrl: proxy.url, expiryProofAfterMs: PROOF_AFTER_MS }],
    }),
  );
  svc = await startTestService({
    CHAINS_FILE: file,
    CHAIN_POLL_INTERVAL_MS: '100',
    EVM_REPLACEMENT_DELAY_MS: String(RETRY_MS),
  });
  fs.rmSync(dir, { recursive: true, force: true });
  partner = await svc.newPartner();
  connection = new Connection(facade.rpcUrl, 'confirmed');
});

beforeEach(async () => {
  proxy.clear();
  await facadeControl(facade.rpcUrl).setPrioritizationFee(0);
});

after(async () => {
  await svc?.stop();
  await proxy?.close();
  await facade?.stop();
});

let walletCount = 0;
async function newWallet(lamports = 2_000_000_000): Promise<{ id: string; address: string }> {
  const r = await svc.v1(partner.secret, 'POST', '/wallets', {
    type: 'SOLANA',
    userIdentifier: `sol-auto-retry-${walletCount++}`,
    userIdentifierType: 'CUSTOM_ID',
  });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  if (lamports > 0) await airdrop(connection, new PublicKey(r.body.address), lamports);
  return { id: r.body.id, address: r.body.address };
}

const inSeconds = (s: number) => new Date(Date.now() + s * 1000).toISOString();
let keys = 0;
function send(
  walletId: string,
  body: Record<string, unknown>,
  key: string | null = `sar-${keys++}`,
  secret = partner.secret,
) {
  return svc.v1(
    secret,
    'POST',
    `/wallets/${walletId}/transfer`,
    { network: 'SOLANA_DEVNET', value: '1000000', ...body },
    key === null ? {} : { 'idempotency-key': key },
  );
}

const terms = (over: Record<string, unknown> = {}) => ({
  maxExecutionFeeLamports: '1000000',
  expiresAt: inSeconds(600),
  ...over,
});

// Rebuilt attempts take a few seconds each (an expiry, then its proof): a record gets somewhere within 30 s.
const { until } = recordReader(
  () => svc,
  () => partner.secret,
  { timeoutMs: 30_000 },
);

const wireOf = (call: RpcCall) => Buffer.from(call.params![0] as string, 'base64');
const signatureOf = (call: RpcCall) => bs58.encode(wireOf(call).subarray(1, 65));
const payerOf = (call: RpcCall) =>
  VersionedTransaction.deserialize(wireOf(call)).message.staticAccountKeys[0]!.toBase58();

/**
 * Swallows the sends of the first `attempts` distinct transactions `payer` signs, and every resend of them: each is
 * answered with its signature, as a node that took it, and never lands (a leader dropped it). Returns what it caught.
 */
function dropAttempts(payer: string, attempts: number): Set<string> {
  const dropped = new Set<string>();
  proxy.add({
    method: 'sendTransaction',
    when: (call) => {
      if (payerOf(call) !== payer) return false;
      const signature = signatureOf(call);
      if (dropped.has(signature)) return true;
      if (dropped.size >= attempts) return false;
      dropped.add(signature);
      return true;
    },
    fault: { kind: 'result', result: 'dropped-by-the-leader' },
  });
  return dropped;
}

/** The wire bytes the service sent for `signature` (the proxy saw them). */
function sentWire(signature: string): string {
  const call = proxy.calls.find((c) => c.call.method === 'sendTransaction' && signatureOf(c.call) === signature);
  assert.ok(call, `no send of ${signature}`);
  return call.call.params![0] as string;
}

async function landed(signature: string): Promise<boolean> {
  const { value } = await connection.getSignatureStatuses([signature], { searchTransactionHistory: true });
  return value[0] !== null;
}

test('admission: 202 with the record (network, lamport ceiling, attempt 0 with its last valid height); lands once', async () => {
  const w = await newWallet();
  const to = Keypair.generate().publicKey;
  const key = `sar-admit-${keys++}`;
  const body = { to: to.toBase58(), autoRetry: terms() };
  const r = await send(w.id, body, key);
  assert.equal(r.status, 202, JSON.stringify(r.body));
  const id = r.body.transactionId;
  assert.equal(r.headers.get('x-transaction-id'), id);
  assert.equal(r.headers.get('location'), `/v1/wallets/${w.id}/transactions/${id}`);
  assert.equal(r.body.autoRetry.network, 'SOLANA_DEVNET');
  assert.equal(r.body.autoRetry.maxExecutionFeeLamports, '1000000');
  assert.equal(r.body.autoRetry.maxExecutionFeeWei, undefined);
  assert.equal(r.body.autoRetry.nonce, undefined, 'nonce is EVM only');
  assert.equal(r.body.autoRetry.state, 'active');
  assert.equal(r.body.signedTransaction, undefined, 'no signed bytes in an auto-retry answer');
  const done = await until(w.id, id, (x) => x.status === 'confirmed');
  assert.equal(done.autoRetry.state, 'resolved');
  assert.equal(done.autoRetry.bumpCount, 0);
  assert.equal(done.autoRetry.attempts.length, 1);
  const [a0] = done.autoRetry.attempts;
  assert.equal(a0.hash, done.hash);
  assert.equal(a0.stage, 'submitted');
  assert.equal(typeof a0.lastValidBlockHeight, 'number');
  assert.equal(await connection.getBalance(to), 1_000_000, 'paid once');
  // A replay answers the same operation, now settled, and changes nothing.
  const replay = await send(w.id, body, key);
  assert.equal(replay.status, 202);
  assert.equal(replay.body.transactionId, id);
  assert.equal(replay.body.status, 'confirmed');
  assert.equal(replay.headers.get('idempotent-replayed'), 'true');
});

test('the priority fee is chosen within the ceiling: a busy market is bid down to what fits', async () => {
  await facadeControl(facade.rpcUrl).setPrioritizationFee(500_000);
  const w = await newWallet();
  const before = await connection.getBalance(new PublicKey(w.address));
  const to = Keypair.generate().publicKey;
  // 5,000 lamports of base fee plus at most 1 of priority fee: a native transfer's 1,000 units at ≤ 1,000 µ-lamports.
  const r = await send(w.id, { to: to.toBase58(), autoRetry: terms({ maxExecutionFeeLamports: '5001' }) });
  assert.equal(r.status, 202, JSON.stringify(r.body));
  const done = await until(w.id, r.body.transactionId, (x) => x.status === 'confirmed');
  assert.equal(readComputeUnitPrice(sentWire(done.hash)), 1_000);
  const paid = before - (await connection.getBalance(new PublicKey(w.address)));
  assert.equal(paid - 1_000_000, 5_001, 'the fee charged on-chain is the ceiling, not the market');
});

test('admission refusals name what is wrong, and leave nothing behind', async () => {
  const w = await newWallet(0);
  const to = Keypair.generate().publicKey.toBase58();
  const cases: Array<[Record<string, unknown>, string | null, string]> = [
    [{ to, autoRetry: terms({ maxExecutionFeeLamports: '4999' }) }, 'k1', 'body.autoRetry.maxExecutionFeeLamports'],
    [{ to, autoRetry: terms({ maxExecutionFeeLamports: '0' }) }, 'k2', 'body.autoRetry.maxExecutionFeeLamports'],
    [
      { to, autoRetry: terms({ maxExecutionFeeLamports: '18446744073709551616' }) },
      'k3',
      'body.autoRetry.maxExecutionFeeLamports',
    ],
    [
      { to, autoRetry: { expiresAt: inSeconds(60), maxExecutionFeeWei: '1' } },
      'k4',
      'body.autoRetry.maxExecutionFeeWei',
    ],
    [{ to, autoRetry: terms({ expiresAt: inSeconds(25 * 3600) }) }, 'k5', 'body.autoRetry.expiresAt'],
    [{ to, autoRetry: terms({ expiresAt: '2026-01-01T00:00:00' }) }, 'k6', 'body.autoRetry.expiresAt'],
    [{ to, autoRetry: terms(), broadcast: false }, 'k7', 'body.broadcast'],
    [{ to, autoRetry: terms() }, null, 'headers.idempotency-key'],
    [{ to, autoRetry: terms(), gasLimit: '21000' }, 'k8', 'body.gasLimit'],
    [{ to, autoRetry: terms(), nonce: 1 }, 'k9', 'body.nonce'],
  ];
  for (const [body, key, field] of cases) {
    const r = await send(w.id, body, key);
    assert.equal(r.status, 400, `${field}: ${JSON.stringify(r.body)}`);
    assert.equal(r.body.code, 'INVALID_REQUEST', JSON.stringify(r.body));
    assert.equal(r.body.field, field, JSON.stringify(r.body));
  }
  assert.equal((await svc.v1(partner.secret, 'GET', `/wallets/${w.id}/transactions`)).body.data.length, 0);
});

test('a dropped send is sent again as the identical bytes while its blockhash is valid: no new attempt', async () => {
  const w = await newWallet();
  const to = Keypair.generate().publicKey;
  // The first send of the first transaction is swallowed; its resends go through.
  let first: string | undefined;
  proxy.add({
    method: 'sendTransaction',
    times: 1,
    when: (call) => {
      if (payerOf(call) !== w.address) return false;
      first = signatureOf(call);
      return true;
    },
    fault: { kind: 'result', result: 'dropped-by-the-leader' },
  });
  const r = await send(w.id, { to: to.toBase58(), autoRetry: terms() });
  assert.equal(r.status, 202, JSON.stringify(r.body));
  const done = await until(w.id, r.body.transactionId, (x) => x.status === 'confirmed');
  assert.equal(done.hash, first);
  assert.equal(done.autoRetry.bumpCount, 0, 'a resend of the same bytes is not an attempt');
  assert.equal(done.autoRetry.attempts.length, 1);
  const sends = proxy.calls.filter((c) => c.call.method === 'sendTransaction' && signatureOf(c.call) === first);
  assert.ok(sends.length >= 2, `sent ${sends.length} times`);
  assert.equal(await connection.getBalance(to), 1_000_000);
});

test('attempt 0 dropped: proven expired, then rebuilt with a fresh blockhash and a raised priority fee, which lands', async () => {
  await facadeControl(facade.rpcUrl).setPrioritizationFee(1_000);
  const w = await newWallet();
  const to = Keypair.generate().publicKey;
  const dropped = dropAttempts(w.address, 1);
  const r = await send(w.id, { to: to.toBase58(), autoRetry: terms() });
  assert.equal(r.status, 202, JSON.stringify(r.body));
  const id = r.body.transactionId;
  // While attempt 0 may land, nothing else is tried and the wallet stays held.
  const live = await until(w.id, id, (x) => x.hash !== null);
  assert.equal((await send(w.id, { to: to.toBase58() }, null)).body.code, 'WALLET_TRANSACTION_UNRESOLVED');
  await facadeControl(facade.rpcUrl).setPrioritizationFee(0);
  const done = await until(w.id, id, (x) => x.status === 'confirmed');
  const [a0, a1] = done.autoRetry.attempts;
  assert.equal(done.autoRetry.attempts.length, 2);
  assert.equal(done.autoRetry.bumpCount, 1);
  assert.equal(done.hash, live.hash, "the record's hash stays attempt 0's");
  assert.equal(a0.hash, live.hash);
  assert.ok(dropped.has(a0.hash));
  assert.equal(done.monitoring.winningHash, a1.hash);
  assert.ok(a1.lastValidBlockHeight > a0.lastValidBlockHeight, 'a fresh blockhash');
  assert.ok(Date.parse(a1.preparedAt) > Date.parse(a0.preparedAt));
  assert.equal(readComputeUnitPrice(sentWire(a0.hash)), 1_000);
  assert.equal(readComputeUnitPrice(sentWire(a1.hash)), 1_125, '+12.5% on the expired attempt, above the market');
  assert.equal(await landed(a0.hash), false);
  assert.equal(await connection.getBalance(to), 1_000_000, 'paid once');
});

test('every attempt dropped: four attempts, then failed with TRANSACTION_EXPIRED and the wallet released', async () => {
  const w = await newWallet();
  const to = Keypair.generate().publicKey;
  const dropped = dropAttempts(w.address, 4);
  const r = await send(w.id, { to: to.toBase58(), autoRetry: terms() });
  assert.equal(r.status, 202, JSON.stringify(r.body));
  const done = await until(w.id, r.body.transactionId, (x) => x.status === 'failed', { timeoutMs: 60_000 });
  assert.equal(done.failureCode, 'TRANSACTION_EXPIRED', JSON.stringify(done));
  assert.equal(done.autoRetry.state, 'resolved');
  assert.equal(done.autoRetry.reason, 'ATTEMPT_LIMIT_REACHED');
  assert.equal(done.autoRetry.bumpCount, 3);
  const hashes = done.autoRetry.attempts.map((a: { hash: string }) => a.hash);
  assert.equal(hashes.length, 4);
  assert.equal(new Set(hashes).size, 4);
  assert.deepEqual(new Set(hashes), dropped);
  for (const h of hashes) assert.equal(await landed(h), false);
  assert.ok(!done.seen.includes('confirmed'));
  assert.equal(await connection.getBalance(to), 0, 'nothing paid');
  // Released: the next payment of the wallet is admitted and lands.
  const next = await send(w.id, { to: to.toBase58(), autoRetry: terms() });
  assert.equal(next.status, 202, JSON.stringify(next.body));
  await until(w.id, next.body.transactionId, (x) => x.status === 'confirmed');
  assert.equal(await connection.getBalance(to), 1_000_000);
});

test('the deadline stops the retry while an attempt may land; its expiry then fails the payment', async () => {
  const w = await newWallet();
  const to = Keypair.generate().publicKey;
  dropAttempts(w.address, 4);
  const r = await send(w.id, { to: to.toBase58(), autoRetry: terms({ expiresAt: inSeconds(1) }) });
  assert.equal(r.status, 202, JSON.stringify(r.body));
  const id = r.body.transactionId;
  const stopped = await until(w.id, id, (x) => x.autoRetry.state !== 'active');
  assert.equal(stopped.autoRetry.state, 'stopped');
  assert.equal(stopped.autoRetry.reason, 'DEADLINE_REACHED');
  assert.equal(stopped.autoRetry.bumpCount, 0);
  assert.notEqual(stopped.status, 'failed', 'stopped is not failed while attempt 0 may land');
  const done = await until(w.id, id, (x) => x.status === 'failed');
  assert.equal(done.failureCode, 'TRANSACTION_EXPIRED');
  assert.equal(done.autoRetry.reason, 'DEADLINE_REACHED');
  assert.equal(done.autoRetry.attempts.length, 1, 'no attempt after the deadline');
  assert.equal(await connection.getBalance(to), 0);
});

test('funds short for the next attempt: no attempt is made, and the payment fails once attempt 0 expired', async () => {
  const w = await newWallet(30_000_000);
  const to = Keypair.generate().publicKey;
  dropAttempts(w.address, 1);
  const r = await send(w.id, { to: to.toBase58(), value: '20000000', autoRetry: terms() });
  assert.equal(r.status, 202, JSON.stringify(r.body));
  const id = r.body.transactionId;
  await until(w.id, id, (x) => x.hash !== null);
  // The wallet's SOL leaves by another way (a sign-only transfer its owner broadcast) while attempt 0 is in the air.
  const drain = await svc.v1(partner.secret, 'POST', `/wallets/${w.id}/transfer`, {
    to: Keypair.generate().publicKey.toBase58(),
    value: '25000000',
    network: 'SOLANA_DEVNET',
    broadcast: false,
  });
  assert.equal(drain.status, 200, JSON.stringify(drain.body));
  await connection.sendRawTransaction(Buffer.from(drain.body.signedTransaction, 'base64'));
  const done = await until(w.id, id, (x) => x.status === 'failed');
  assert.equal(done.failureCode, 'TRANSACTION_EXPIRED');
  assert.equal(done.autoRetry.reason, 'INSUFFICIENT_FUNDS_FOR_REPLACEMENT');
  assert.match(done.failureMessage, /holds \d+ lamports/);
  assert.equal(done.autoRetry.attempts.length, 1);
  assert.equal(await connection.getBalance(to), 0);
});

test('the API key rotated: the expired attempt is not rebuilt (SIGNING_AUTHORITY_ENDED)', async () => {
  const other = await svc.newPartner();
  const r0 = await svc.v1(other.secret, 'POST', '/wallets', {
    type: 'SOLANA',
    userIdentifier: 'sol-auto-retry-rotated',
    userIdentifierType: 'CUSTOM_ID',
  });
  assert.equal(r0.status, 201);
  const w = { id: r0.body.id as string, address: r0.body.address as string };
  await airdrop(connection, new PublicKey(w.address), 2_000_000_000);
  const to = Keypair.generate().publicKey;
  dropAttempts(w.address, 4);
  const r = await send(w.id, { to: to.toBase58(), autoRetry: terms() }, `sar-rot-${keys++}`, other.secret);
  assert.equal(r.status, 202, JSON.stringify(r.body));
  const rotated = await svc.admin('POST', `/api-keys/${other.keyId}/rotate`);
  assert.equal(rotated.status, 200, JSON.stringify(rotated.body));
  const secret = rotated.body.secretKey as string;
  const done = await until(w.id, r.body.transactionId, (x) => x.status === 'failed', { secret });
  assert.equal(done.failureCode, 'TRANSACTION_EXPIRED');
  assert.equal(done.autoRetry.reason, 'SIGNING_AUTHORITY_ENDED');
  assert.equal(done.autoRetry.attempts.length, 1, 'nothing signed after the rotation');
});

test('the node fails while the next attempt is prepared: the retry waits (RPC_UNAVAILABLE), then rebuilds', async () => {
  const w = await newWallet();
  const to = Keypair.generate().publicKey;
  dropAttempts(w.address, 1);
  const r = await send(w.id, { to: to.toBase58(), autoRetry: terms() });
  assert.equal(r.status, 202, JSON.stringify(r.body));
  const id = r.body.transactionId;
  await until(w.id, id, (x) => x.hash !== null);
  // From now on the next preparation's blockhash read fails, three times.
  proxy.add({
    method: 'getLatestBlockhash',
    times: 3,
    fault: { kind: 'error', code: -32005, message: 'Node is behind by 42 slots' },
  });
  const waiting = await until(w.id, id, (x) => x.autoRetry.reason === 'RPC_UNAVAILABLE');
  assert.equal(waiting.autoRetry.state, 'active');
  assert.equal(waiting.autoRetry.bumpCount, 0);
  const done = await until(w.id, id, (x) => x.status === 'confirmed');
  assert.equal(done.autoRetry.bumpCount, 1);
  assert.equal(await connection.getBalance(to), 1_000_000);
});

test('neither a timer, a missing status nor a failing node is proof: a landed attempt hidden past its expiry is never rebuilt', async () => {
  const w = await newWallet();
  const to = Keypair.generate().publicKey;
  let signature: string | undefined;
  const hideUntil = Date.now() + 60_000;
  // The node's status index does not show the wallet's transaction (it landed) until released below, and then errs.
  const hide = proxy.add({
    method: 'getSignatureStatuses',
    until: hideUntil,
    fault: {
      kind: 'edit-result',
      edit(result, call) {
        const asked = (call.params?.[0] ?? []) as string[];
        const v = result as { context: unknown; value: unknown[] };
        return { ...v, value: v.value.map((s, i) => (asked[i] === signature ? null : s)) };
      },
    },
  });
  let sentAt = 0;
  proxy.add({
    method: 'sendTransaction',
    when: (call) => {
      if (payerOf(call) === w.address && signature === undefined) {
        signature = signatureOf(call);
        sentAt = Date.now();
      }
      return false;
    },
    fault: { kind: 'hang' },
  });
  const r = await send(w.id, { to: to.toBase58(), autoRetry: terms() });
  assert.equal(r.status, 202, JSON.stringify(r.body));
  const id = r.body.transactionId;
  await until(w.id, id, (x) => x.hash !== null);
  // Landed at once. Its blockhash is past its last valid height at finalized about 2.1 s after it was read (39 blocks,
  // then 4 for finality); the index stays blind until 2.5 s after the send, an absence shorter than the proof time.
  await new Promise((res) => setTimeout(res, Math.max(0, sentAt + 2_500 - Date.now())));
  hide();
  const errs = proxy.add({
    method: 'getSignatureStatuses',
    times: 10,
    fault: { kind: 'error', code: -32603, message: 'Internal error' },
  });
  await new Promise((res) => setTimeout(res, 500));
  errs();
  const done = await until(w.id, id, (x) => x.status === 'confirmed');
  assert.equal(done.autoRetry.attempts.length, 1, JSON.stringify(done.autoRetry));
  assert.equal(done.hash, signature);
  assert.ok(!done.seen.includes('failed'), done.seen.join(' → '));
  assert.equal(await connection.getBalance(to), 1_000_000, 'paid once');
});

test('the wallet claimed by its user: the expired attempt is not rebuilt (SIGNING_AUTHORITY_ENDED)', async () => {
  const w = await newWallet();
  const to = Keypair.generate().publicKey;
  dropAttempts(w.address, 4);
  const r = await send(w.id, { to: to.toBase58(), autoRetry: terms() });
  assert.equal(r.status, 202, JSON.stringify(r.body));
  await until(w.id, r.body.transactionId, (x) => x.hash !== null);
  const claimed = await svc.admin('POST', `/wallets/${w.id}/claim`, {});
  assert.equal(claimed.status, 200, JSON.stringify(claimed.body));
  const done = await until(w.id, r.body.transactionId, (x) => x.status === 'failed');
  assert.equal(done.failureCode, 'TRANSACTION_EXPIRED');
  assert.equal(done.autoRetry.reason, 'SIGNING_AUTHORITY_ENDED');
  assert.equal(done.autoRetry.attempts.length, 1, 'nothing signed for a claimed wallet');
  assert.equal(await connection.getBalance(to), 0);
});
