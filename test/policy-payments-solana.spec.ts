/**
 * Signing policies on the Solana payments the service sends, against the Solana façade (LiteSVM behind JSON-RPC)
 * through the fault-injecting proxy, which swallows chosen sends (answered, never landed) so that attempts expire and
 * are rebuilt. Blockhashes live 40 blocks of 50 ms: an attempt expires in about two seconds, and its absence is proof
 * after one more. What a partner sees is checked (status codes, bodies, the usage meter, the record) beside what is on
 * the chain (the recipients' balances, what the service sent).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, beforeEach, test } from 'node:test';
import { Connection, Keypair, PublicKey, VersionedTransaction } from '@solana/web3.js';
import bs58 from 'bs58';
import { type RpcCall, type RpcFaultProxy, startRpcFaultProxy } from '../fixtures/rpc-fault-proxy.ts';
import { airdrop } from '../fixtures/solana-facade/facade-client.ts';
import { type SolanaFacade, startSolanaFacade } from '../fixtures/solana-facade.ts';
import { recordReader } from './helpers/records.ts';
import { type Partner, startTestService, type TestService, tempDataDir } from './helpers/service.ts';
import { createActivePolicy } from './helpers/spec-steps.ts';

const BASE = '/permissions-v2';
const NETWORK = 'solana:devnet';
const PROOF_AFTER_MS = 1_000;
const SOL_VALUE = 1_000_000n;

let facade: SolanaFacade;
let proxy: RpcFaultProxy;
let svc: TestService;
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
  svc = await startTestService({ CHAINS_FILE: file, CHAIN_POLL_INTERVAL_MS: '100', EVM_REPLACEMENT_DELAY_MS: '300' });
  fs.rmSync(dir, { recursive: true, force: true });
  connection = new Connection(facade.rpcUrl, 'confirmed');
});

beforeEach(() => proxy.clear());

after(async () => {
  await svc?.stop();
  await proxy?.close();
  await facade?.stop();
});

let current: Partner;
const { until } = recordReader(
  () => svc,
  () => current.secret,
  { timeoutMs: 30_000 },
);

const capRule = (limit: bigint) => ({
  id: 'sol-cap',
  effect: 'deny',
  actions: ['transfer'],
  conditions: [{ spend: { asset: 'native', window: '24h' }, op: 'gt', value: limit.toString() }],
});
const guardrail = (name: string, rules: unknown[]) => ({
  name,
  layer: 'guardrail',
  scope: { walletType: 'SOLANA', networks: [NETWORK] },
  rules,
});

/** A key with permissions on, `rules` active on Solana devnet, and a Solana wallet of it holding 2 SOL. */
async function setUp(name: string, rules: unknown[]) {
  const partner = await svc.newPartner();
  current = partner;
  assert.equal(
    (await svc.admin('PUT', `/api-keys/${partner.keyId}/permissions`, { enabled: true, approvals: false })).status,
    200,
  );
  const created = await createActivePolicy(svc, partner.secret, guardrail(name, rules));
  const policyId = created.id as string;
  const w = await svc.v1(partner.secret, 'POST', '/wallets', {
    type: 'SOLANA',
    userIdentifier: name,
    userIdentifierType: 'CUSTOM_ID',
  });
  assert.equal(w.status, 201, JSON.stringify(w.body));
  const wallet = w.body as { id: string; address: string };
  await airdrop(connection, new PublicKey(wallet.address), 2_000_000_000);
  const send = (body: Record<string, unknown>, key: string | null = null) =>
    svc.v1(
      partner.secret,
      'POST',
      `/wallets/${wallet.id}/transfer`,
      { network: 'SOLANA_DEVNET', value: SOL_VALUE.toString(), ...body },
      key === null ? {} : { 'idempotency-key': key },
    );
  const meter = async () => {
    const u = await svc.v1(partner.secret, 'GET', `${BASE}/wallets/${wallet.id}/policies/${policyId}/usage`);
    assert.equal(u.status, 200, JSON.stringify(u.body));
    const meters = u.body.meters as Array<{ ruleId: string; asset: string; used: string; limit: string }>;
    assert.equal(meters.length, 1, JSON.stringify(meters));
    return meters[0]!;
  };
  const records = async () => {
    const list = await svc.v1(partner.secret, 'GET', `/wallets/${wallet.id}/transactions`);
    assert.equal(list.status, 200, JSON.stringify(list.body));
    return list.body.data as Array<{ transactionId: string }>;
  };
  const replaceRules = async (next: unknown[]) => {
    const now = await svc.v1(partner.secret, 'GET', `${BASE}/policies/${policyId}`);
    const put = await svc.v1(partner.secret, 'PUT', `${BASE}/policies/${policyId}`, {
      policy: guardrail(name, next),
      expectedRevision: now.body.revision,
    });
    assert.equal(put.status, 200, JSON.stringify(put.body));
    assert.ok(put.body.version > now.body.version, 'a new version, live at once');
  };
  return { partner, policyId, wallet, send, meter, records, replaceRules };
}

const wireOf = (call: RpcCall) => Buffer.from(call.params![0] as string, 'base64');
const signatureOf = (call: RpcCall) => bs58.encode(wireOf(call).subarray(1, 65));
const payerOf = (call: RpcCall) =>
  VersionedTransaction.deserialize(wireOf(call)).message.staticAccountKeys[0]!.toBase58();

/** The distinct transactions `payer` had the service send (resends of the same bytes count once). */
function sentBy(payer: string): Set<string> {
  return new Set(
    proxy.calls
      .filter((c) => c.call.method === 'sendTransaction' && payerOf(c.call) === payer)
      .map((c) => signatureOf(c.call)),
  );
}

/** Swallows every send of the first `attempts` distinct transactions `payer` signs: answered, never landed. */
function dropAttempts(payer: string, attempts: number): { dropped: Set<string>; stop: () => void } {
  const dropped = new Set<string>();
  const stop = proxy.add({
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
  return { dropped, stop };
}

const lamportsOf = (who: PublicKey) => connection.getBalance(who, 'confirmed');

test('a SOL cap per day on solana:devnet and an allow-list of payees: one transfer counted, the next over the cap and one off the list refused, nothing of them sent', async () => {
  const payee = Keypair.generate().publicKey;
  const other = Keypair.generate().publicKey;
  const stranger = Keypair.generate().publicKey;
  const { wallet, send, meter, records, policyId } = await setUp('sol-cap', [
    capRule(SOL_VALUE + SOL_VALUE / 2n),
    {
      id: 'payees',
      effect: 'allow',
      actions: ['transfer'],
      conditions: [{ fact: 'to', op: 'in', value: [payee.toBase58(), other.toBase58()] }],
    },
  ]);
  const first = await send({ to: payee.toBase58() });
  assert.equal(first.status, 200, JSON.stringify(first.body));
  const done = await until(wallet.id, first.body.transactionId, (x) => x.status === 'confirmed');
  assert.equal(await lamportsOf(payee), Number(SOL_VALUE));
  const m = await meter();
  assert.deepEqual(
    [m.ruleId, m.asset, m.used, m.limit],
    ['sol-cap', 'native', SOL_VALUE.toString(), (SOL_VALUE + SOL_VALUE / 2n).toString()],
    'the lamports moved; never the fee',
  );

  const over = await send({ to: other.toBase58() });
  assert.equal(over.status, 403, JSON.stringify(over.body));
  assert.equal(over.body.code, 'POLICY_DENIED');
  assert.deepEqual(over.body.deniedBy, [{ reason: 'denied-by-rule', policyId, ruleId: 'sol-cap' }]);
  assert.equal(over.headers.get('x-transaction-id'), null);
  // A sign-only transfer is held to the same cap.
  const signOnly = await send({ to: other.toBase58(), broadcast: false });
  assert.equal(signOnly.status, 403, JSON.stringify(signOnly.body));
  assert.equal(signOnly.body.signedTransaction, undefined);

  const offList = await send({ to: stranger.toBase58(), value: '1' });
  assert.equal(offList.status, 403, JSON.stringify(offList.body));
  assert.equal(offList.body.code, 'POLICY_DENIED');
  assert.equal(offList.body.deniedBy[0].reason, 'outside-boundary');
  assert.equal(offList.body.deniedBy[0].policyId, policyId);

  // Under the cap and on the list: paid (to the payee's account, which exists: no rent-exempt minimum to meet).
  const under = await send({ to: payee.toBase58(), value: (SOL_VALUE / 2n).toString() });
  assert.equal(under.status, 200, JSON.stringify(under.body));
  await until(wallet.id, under.body.transactionId, (x) => x.status === 'confirmed');
  assert.equal((await meter()).used, (SOL_VALUE + SOL_VALUE / 2n).toString());
  assert.equal(await lamportsOf(payee), Number(SOL_VALUE + SOL_VALUE / 2n));

  assert.deepEqual(
    (await records()).map((r) => r.transactionId).sort(),
    [first.body.transactionId, under.body.transactionId].sort(),
    'no record for the refused transfers',
  );
  assert.deepEqual(sentBy(wallet.address), new Set([done.hash, under.body.txHash]), 'nothing refused was sent');
  assert.equal(await lamportsOf(other), 0);
  assert.equal(await lamportsOf(stranger), 0);
});

test('an auto-retry payment whose attempt expired is rebuilt under a cap of exactly its value: counted once', async () => {
  const to = Keypair.generate().publicKey;
  const { wallet, send, meter } = await setUp('sol-rebuilt', [capRule(SOL_VALUE)]);
  const { dropped } = dropAttempts(wallet.address, 1);
  const r = await send(
    {
      to: to.toBase58(),
      autoRetry: { maxExecutionFeeLamports: '1000000', expiresAt: new Date(Date.now() + 600_000).toISOString() },
    },
    'sol-rebuilt-1',
  );
  assert.equal(r.status, 202, JSON.stringify(r.body));
  // The rebuilt attempt is decided again: counted a second time it would pass the cap and stop the retry.
  const done = await until(wallet.id, r.body.transactionId, (x) => x.status !== 'pending' && x.status !== 'submitted');
  assert.equal(done.status, 'confirmed', JSON.stringify(done.autoRetry));
  assert.equal(done.autoRetry.bumpCount, 1);
  const [a0, a1] = done.autoRetry.attempts;
  assert.ok(dropped.has(a0.hash));
  assert.equal(done.monitoring.winningHash, a1.hash);
  assert.equal((await meter()).used, SOL_VALUE.toString());
  assert.equal(await lamportsOf(to), Number(SOL_VALUE), 'paid once');
  assert.deepEqual(sentBy(wallet.address), new Set([a0.hash, a1.hash]));
  const more = await send({ to: to.toBase58(), value: '1' });
  assert.equal(more.status, 403, JSON.stringify(more.body));
  assert.equal(more.body.code, 'POLICY_DENIED');
});

test('the cap lowered while the attempt is in the air: the rebuild is refused (POLICY_DENIED), the payment ends TRANSACTION_EXPIRED and its spend is released', async () => {
  const to = Keypair.generate().publicKey;
  const { wallet, send, meter, replaceRules, records } = await setUp('sol-expired', [capRule(SOL_VALUE)]);
  const { dropped, stop: stopDropping } = dropAttempts(wallet.address, 4);
  const r = await send(
    {
      to: to.toBase58(),
      autoRetry: { maxExecutionFeeLamports: '1000000', expiresAt: new Date(Date.now() + 600_000).toISOString() },
    },
    'sol-expired-1',
  );
  assert.equal(r.status, 202, JSON.stringify(r.body));
  const id = r.body.transactionId as string;
  const live = await until(wallet.id, id, (x) => x.hash !== null);
  assert.equal((await meter()).used, SOL_VALUE.toString(), 'counted while its attempt may land');
  // Attempt 0 needs about two seconds to expire and one more to be proven so: the new version, one lamport short of
  // the payment, is live well before.
  const lower = SOL_VALUE - 1n;
  await replaceRules([capRule(lower)]);
  const done = await until(wallet.id, id, (x) => x.status === 'failed');
  assert.equal(done.failureCode, 'TRANSACTION_EXPIRED', JSON.stringify(done));
  assert.equal(done.autoRetry.reason, 'POLICY_DENIED', JSON.stringify(done.autoRetry));
  assert.equal(done.autoRetry.attempts.length, 1, 'no attempt rebuilt after the change');
  assert.equal(done.autoRetry.bumpCount, 0);
  assert.deepEqual(sentBy(wallet.address), new Set([live.hash]), 'nothing else was sent');
  assert.ok(dropped.has(live.hash));
  assert.equal(await lamportsOf(to), 0, 'nothing paid');
  assert.equal((await meter()).used, '0', 'proven expired: no usable signature, released');

  // The wallet is released and the window has room again: a payment the new cap allows goes through.
  stopDropping();
  const next = await send({ to: to.toBase58(), value: lower.toString() });
  assert.equal(next.status, 200, `the expired payment no longer counts: ${JSON.stringify(next.body)}`);
  await until(wallet.id, next.body.transactionId, (x) => x.status === 'confirmed');
  assert.equal(await lamportsOf(to), Number(lower));
  assert.equal((await meter()).used, lower.toString());
  assert.equal((await records()).length, 2);
});

test('a transfer the node refuses at its first send stays counted while its signed bytes may land, and is released once they are proven expired', async () => {
  const to = Keypair.generate().publicKey;
  const { wallet, send, meter } = await setUp('sol-refused', [capRule(SOL_VALUE)]);
  // Less than a new account's rent-exempt minimum: the node's preflight refuses the transaction.
  const short = SOL_VALUE / 2n;
  const refused = await send({ to: to.toBase58(), value: short.toString() });
  assert.equal(refused.status, 400, JSON.stringify(refused.body));
  assert.equal(refused.body.failureStage, 'broadcast');
  assert.ok(refused.body.signedTransaction, 'the partner holds the signed bytes');
  const id = refused.body.transactionId as string;
  // Those bytes could still be sent by whoever holds them until their blockhash expires: still counted.
  assert.equal((await meter()).used, short.toString());
  const proven = await until(wallet.id, id, (x) => x.monitoring?.reason === 'expired');
  assert.equal(proven.status, 'failed');
  assert.equal(proven.failureStage, 'broadcast', 'the refusal stands; the proof is noted beside it');
  assert.equal(await lamportsOf(to), 0);
  assert.equal((await meter()).used, '0', 'proven expired: no usable signature is left, the spend is released');
  // The window has room for the whole cap again.
  const paid = await send({ to: to.toBase58() });
  assert.equal(paid.status, 200, `the refused transfer no longer counts: ${JSON.stringify(paid.body)}`);
  await until(wallet.id, paid.body.transactionId, (x) => x.status === 'confirmed');
  assert.equal(await lamportsOf(to), Number(SOL_VALUE));
  assert.equal((await meter()).used, SOL_VALUE.toString());
});
