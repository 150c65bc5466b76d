/**
 * Signing policies on the auto-retry payments the service sends, against a real anvil node (mining held back, so
 * attempts wait in the pool and are replaced) and the service's own stores, seen as a partner sees them: the usage
 * meter, the record, the webhooks, and the chain. Every new signature of a payment is decided again at the one decision
 * point (POLICIES.md §4): replacements are counted once with the payment and never with their gas; a policy changed
 * while the payment is in flight stops the next replacement (denied, or now needing an approval) and nothing more is
 * signed or sent; a payment admitted through an approval keeps its replacements; a payment that stops before anything
 * was signed gives its spend back. The node is reached through a JSON-RPC proxy (fixtures/rpc-fault-proxy.ts), which
 * counts what the service sent and holds one market read while the test changes the wallet's funds.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { keccak256, parseTransaction, recoverTransactionAddress } from 'viem';
import { type Anvil, startAnvil } from '../fixtures/anvil.ts';
import { setAutomine, setBalance } from '../fixtures/evm-helpers.ts';
import { type RpcCall, type RpcFaultProxy, startRpcFaultProxy } from '../fixtures/rpc-fault-proxy.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../fixtures/webhook-receiver.ts';
import { anvilView, recordReader, sleep } from './helpers/records.ts';
import { type Partner, startTestService, stopProcess, type TestService, tempDataDir } from './helpers/service.ts';
import { createActivePolicy } from './helpers/spec-steps.ts';

const BASE = '/permissions-v2';
const REPLACEMENT_DELAY_MS = 150;
const ETH = 10n ** 18n;
const VALUE = 1000n;

let anvil: Anvil;
let proxy: RpcFaultProxy;
let receiver: WebhookReceiver;
let svc: TestService;
let chainsDir: string;

before(async () => {
  anvil = await startAnvil({ slotsInAnEpoch: 1 });
  proxy = await startRpcFaultProxy(anvil.rpcUrl);
  receiver = await startWebhookReceiver();
  chainsDir = tempDataDir('wcs-chains-');
  const chainsFile = path.join(chainsDir, 'chains.json');
  fs.writeFileSync(chainsFile, JSON.stringify({ evm: [{ chainId: 31337, rpcUrl: proxy.url, environment: 'any' }] }));
  svc = await startTestService(
    {
      CHAINS_FILE: chainsFile,
      CHAIN_POLL_INTERVAL_MS: '100',
      EVM_REPLACEMENT_DELAY_MS: String(REPLACEMENT_DELAY_MS),
      WEBHOOK_ALLOW_PRIVATE_TARGETS: '1',
      WEBHOOK_RETRY_BASE_MS: '100',
    },
    { api: { webhooks: { extraCa: receiver.caPem } } },
  );
});

after(async () => {
  await svc?.stop();
  await proxy?.close();
  await anvil?.stop();
  await receiver?.close();
  if (chainsDir) fs.rmSync(chainsDir, { recursive: true, force: true });
});

/** The partner whose records `record`/`until` read (set by each test's `setUp`). */
let current: Partner;
const { record, until } = recordReader(
  () => svc,
  () => current.secret,
);
const { balance, nonceOf, withMiningHeld, mineUntilFinal } = anvilView(() => anvil.rpcUrl, { record });

const inMinutes = (m: number) => new Date(Date.now() + m * 60_000).toISOString();
const terms = () => ({ maxExecutionFeeWei: '1000000000000000', expiresAt: inMinutes(10) });

const capRule = (limit: bigint, id = 'daily-cap') => ({
  id,
  effect: 'deny',
  actions: ['transfer'],
  conditions: [{ spend: { asset: 'native', window: '24h' }, op: 'gt', value: limit.toString() }],
});
const guardrail = (name: string, rules: unknown[]) => ({
  name,
  layer: 'guardrail',
  scope: { walletType: 'EVM', networks: ['eip155:31337'] },
  rules,
});

/**
 * A key with permissions on (and approvals when asked), its webhook on a path of its own, `rules` active on chain
 * 31337, and an EVM wallet of it holding `fundWei`.
 */
async function setUp(name: string, rules: unknown[], { fundWei = ETH, approvals = false } = {}) {
  const partner = await svc.newPartner();
  current = partner;
  assert.equal(
    (await svc.admin('PUT', `/api-keys/${partner.keyId}/permissions`, { enabled: true, approvals })).status,
    200,
  );
  const hook = await svc.admin('PUT', `/api-keys/${partner.keyId}/webhook`, {
    url: `${receiver.url}/${name}`,
    events: ['rest.transaction.confirmed', 'rest.transaction.failed'],
  });
  assert.equal(hook.status, 200, JSON.stringify(hook.body));
  const created = await createActivePolicy(svc, partner.secret, guardrail(name, rules));
  const w = await svc.v1(partner.secret, 'POST', '/wallets', {
    type: 'EVM',
    userIdentifier: name,
    userIdentifierType: 'CUSTOM_ID',
  });
  assert.equal(w.status, 201, JSON.stringify(w.body));
  const wallet = w.body as { id: string; address: string };
  if (fundWei > 0n) await setBalance(anvil.rpcUrl, wallet.address, fundWei);
  const policyId = created.id as string;
  const send = (body: Record<string, unknown>, key: string | null) =>
    svc.v1(
      partner.secret,
      'POST',
      `/wallets/${wallet.id}/transfer`,
      { chainId: '31337', value: VALUE.toString(), ...body },
      key === null ? {} : { 'idempotency-key': key },
    );
  const meter = async () => {
    const u = await svc.v1(
      partner.secret,
      'GET',
      `${BASE}/wallets/${wallet.id}/policies/${policyId}/usage?network=eip155:31337`,
    );
    assert.equal(u.status, 200, JSON.stringify(u.body));
    const meters = u.body.meters as Array<{ ruleId: string; asset: string; used: string; limit: string }>;
    assert.equal(meters.length, 1, JSON.stringify(meters));
    return meters[0]!;
  };
  /** Replaces the active policy's rules: its next version, live at once. */
  const replaceRules = async (next: unknown[]) => {
    const current = await svc.v1(partner.secret, 'GET', `${BASE}/policies/${policyId}`);
    assert.equal(current.status, 200, JSON.stringify(current.body));
    const put = await svc.v1(partner.secret, 'PUT', `${BASE}/policies/${policyId}`, {
      policy: guardrail(name, next),
      expectedRevision: current.body.revision,
    });
    assert.equal(put.status, 200, JSON.stringify(put.body));
    assert.equal(put.body.status, 'active');
    assert.ok(put.body.version > current.body.version, 'a new version');
  };
  const records = async () => {
    const list = await svc.v1(partner.secret, 'GET', `/wallets/${wallet.id}/transactions`);
    assert.equal(list.status, 200, JSON.stringify(list.body));
    return list.body.data as Array<{ transactionId: string }>;
  };
  /** The webhook events delivered to this key's path about `transactionId`. */
  const events = (transactionId: string) =>
    receiver.received
      .filter((d) => d.path === `/hooks/${name}`)
      .map((d) => JSON.parse(d.rawBody) as { type: string; data: Record<string, any> })
      .filter((e) => e.data.transactionId === transactionId);
  return { partner, policyId, wallet, send, meter, replaceRules, records, events };
}

/** The recipient of raw signed bytes a call sends, or undefined. */
function recipientOf(call: RpcCall): string | undefined {
  try {
    return parseTransaction(call.params![0] as `0x${string}`).to?.toLowerCase();
  } catch {
    return undefined;
  }
}

/** The distinct signed transactions the service sent to the node paying `to` (resends of the same bytes count once). */
function sentTo(to: string): Map<string, `0x${string}`> {
  const sent = new Map<string, `0x${string}`>();
  for (const { call } of proxy.calls) {
    if (call.method !== 'eth_sendRawTransaction' || recipientOf(call) !== to.toLowerCase()) continue;
    const raw = call.params![0] as `0x${string}`;
    sent.set(keccak256(raw), raw);
  }
  return sent;
}

/** Asserts that what the service sent paying `to` is exactly `hashes`, each signed by `from`. */
async function assertSentExactly(to: string, from: string, hashes: string[]) {
  const sent = sentTo(to);
  assert.deepEqual([...sent.keys()].sort(), [...hashes].sort(), 'the signed transactions that reached the node');
  for (const raw of sent.values()) {
    assert.equal(
      (await recoverTransactionAddress({ serializedTransaction: raw as never })).toLowerCase(),
      from.toLowerCase(),
    );
  }
}

const hashesOf = (r: { autoRetry: { attempts: Array<{ hash: string | null }> } }) =>
  r.autoRetry.attempts.map((a) => a.hash).filter((h): h is string => h !== null);

async function waitForEvent(events: () => Array<{ type: string }>, type: string) {
  await receiver.waitFor(() => events().some((e) => e.type === type), type);
}

test('an auto-retry payment under a cap of exactly its value: three replacements, counted once, gas never', async () => {
  const to = '0x00000000000000000000000000000000000c0a01';
  const { wallet, send, meter, records, events } = await setUp('replaced-once', [capRule(VALUE)]);
  await withMiningHeld(async () => {
    const body = { to, autoRetry: terms() };
    const r = await send(body, 'replaced-once-1');
    assert.equal(
      r.status,
      202,
      `the value fills the cap; the gas it may pay is not counted: ${JSON.stringify(r.body)}`,
    );
    const id = r.body.transactionId as string;
    // Each replacement is decided again against the cap: counted again it would pass it and stop the retry.
    const stopped = await until(wallet.id, id, (x) => x.autoRetry.state === 'stopped');
    assert.equal(stopped.autoRetry.reason, 'ATTEMPT_LIMIT_REACHED', JSON.stringify(stopped.autoRetry));
    assert.equal(stopped.autoRetry.bumpCount, 3);
    assert.equal(hashesOf(stopped).length, 4);
    const m = await meter();
    assert.deepEqual([m.used, m.limit, m.asset], [VALUE.toString(), VALUE.toString(), 'native']);
    await assertSentExactly(to, wallet.address, hashesOf(stopped));
    // The partner's replay of the admission answers the same operation and counts nothing.
    const replay = await send(body, 'replaced-once-1');
    assert.equal(replay.status, 202, JSON.stringify(replay.body));
    assert.equal(replay.body.transactionId, id);
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
    assert.equal((await meter()).used, VALUE.toString());

    await setAutomine(anvil.rpcUrl, true);
    const final = await mineUntilFinal(wallet.id, id);
    assert.equal(final.status, 'confirmed');
    assert.equal(final.monitoring?.winningHash, hashesOf(stopped)[3], 'the last replacement executed');
    assert.equal(await nonceOf(wallet.address), 1);
    assert.equal(await balance(to), VALUE, 'paid once');
    assert.equal((await meter()).used, VALUE.toString(), 'a confirmed payment stays counted');
    await waitForEvent(() => events(id), 'rest.transaction.confirmed');
    assert.deepEqual(
      events(id).map((e) => e.type),
      ['rest.transaction.confirmed'],
    );
  });
  // The window is full: one more wei is refused at admission, with no record and nothing sent.
  const over = await send({ to, value: '1' }, null);
  assert.equal(over.status, 403, JSON.stringify(over.body));
  assert.equal(over.body.code, 'POLICY_DENIED');
  assert.equal(over.body.deniedBy[0].reason, 'denied-by-rule');
  assert.equal(over.body.ruleId, 'daily-cap');
  assert.equal((await records()).length, 1);
  assert.equal(await nonceOf(wallet.address, 'pending'), 1);
});

test('the cap lowered under the payment between two replacements: the next one is refused (POLICY_DENIED), nothing more is signed, the latest attempt lands', async () => {
  const to = '0x00000000000000000000000000000000000c0a02';
  const { wallet, send, meter, replaceRules, records, events } = await setUp('lowered', [capRule(2n * VALUE)]);
  // The second replacement's market read (the wallet's balance) waits at the node while the test takes the wallet's
  // funds down to what the first replacement may cost: the retry then waits for funds, between two replacements.
  let release!: () => void;
  const released = new Promise<void>((r) => {
    release = r;
  });
  proxy.add({
    method: 'eth_getBalance',
    times: 1,
    when: (call) => String(call.params?.[0]).toLowerCase() === wallet.address.toLowerCase() && sentTo(to).size >= 2,
    fault: { kind: 'hold', until: released },
  });
  try {
    await withMiningHeld(async () => {
      const body = { to, autoRetry: terms() };
      const r = await send(body, 'lowered-1');
      assert.equal(r.status, 202, JSON.stringify(r.body));
      const id = r.body.transactionId as string;
      const deadline = Date.now() + 15_000;
      while (!proxy.calls.some((c) => c.fault === 'hold')) {
        if (Date.now() > deadline) throw new Error('the second replacement never read the market');
        await sleep(10);
      }
      const [, first] = [...sentTo(to).values()];
      const tx = parseTransaction(first!);
      await setBalance(anvil.rpcUrl, wallet.address, VALUE + tx.gas! * tx.maxFeePerGas!);
      release();
      const waiting = await until(wallet.id, id, (x) => x.autoRetry.reason === 'INSUFFICIENT_FUNDS_FOR_REPLACEMENT');
      assert.equal(waiting.autoRetry.state, 'active');
      assert.equal(waiting.autoRetry.bumpCount, 1);
      assert.equal((await meter()).used, VALUE.toString(), 'the original and its replacement: one payment');

      // A new version of the policy: the window now allows half the payment. Then funds come back, so that nothing
      // but the policy stands in the way of the next replacement.
      await replaceRules([capRule(VALUE / 2n)]);
      await setBalance(anvil.rpcUrl, wallet.address, ETH);
      const stopped = await until(wallet.id, id, (x) => x.autoRetry.state !== 'active');
      assert.equal(stopped.autoRetry.state, 'stopped');
      assert.equal(stopped.autoRetry.reason, 'POLICY_DENIED', JSON.stringify(stopped.autoRetry));
      assert.equal(stopped.autoRetry.bumpCount, 1);
      assert.equal(stopped.status, 'submitted', 'the attempts sent may still execute: still watched');
      await sleep(REPLACEMENT_DELAY_MS * 4);
      const later = await record(wallet.id, id);
      assert.equal(later.autoRetry.state, 'stopped');
      assert.deepEqual(
        later.autoRetry.attempts.map((a: { stage: string }) => a.stage),
        ['submitted', 'submitted'],
        'no third attempt was prepared',
      );
      await assertSentExactly(to, wallet.address, hashesOf(later));
      assert.equal(await nonceOf(wallet.address, 'pending'), 1);
      // Still counted (a signature that may execute exists), now against the lower limit.
      const m = await meter();
      assert.deepEqual([m.used, m.limit], [VALUE.toString(), (VALUE / 2n).toString()]);
      // Replayed, the admission answers the same operation, still stopped: a replay never restarts the retry.
      const replay = await send(body, 'lowered-1');
      assert.equal(replay.status, 202, JSON.stringify(replay.body));
      assert.equal(replay.body.transactionId, id);
      assert.equal(replay.body.autoRetry.state, 'stopped');
      assert.equal(replay.body.autoRetry.reason, 'POLICY_DENIED');
      // The wallet stays held while the payment may execute.
      const busy = await send({ to, value: '1' }, null);
      assert.equal(busy.status, 409, JSON.stringify(busy.body));
      assert.equal(busy.body.code, 'WALLET_TRANSACTION_UNRESOLVED');

      await setAutomine(anvil.rpcUrl, true);
      const final = await mineUntilFinal(wallet.id, id);
      assert.equal(final.status, 'confirmed');
      assert.equal(
        final.monitoring?.winningHash,
        hashesOf(later)[1],
        'the replacement sent before the change executed',
      );
      assert.equal(final.autoRetry.state, 'resolved');
      assert.equal(await nonceOf(wallet.address), 1);
      assert.equal(await balance(to), VALUE, 'paid once');
      await waitForEvent(() => events(id), 'rest.transaction.confirmed');
      assert.deepEqual(
        events(id).map((e) => e.type),
        ['rest.transaction.confirmed'],
      );
    });
  } finally {
    release();
  }
  const over = await send({ to, value: '1' }, null);
  assert.equal(over.status, 403, JSON.stringify(over.body));
  assert.equal(over.body.code, 'POLICY_DENIED');
  assert.equal((await records()).length, 1, 'no record for the refused transfer');
});

test('an approval rule added while the payment waits: the next replacement would need it, so the retry stops (POLICY_REVIEW_REQUIRED) and opens no case', async () => {
  const to = '0x00000000000000000000000000000000000c0a03';
  const rules = [capRule(10n * VALUE)];
  const { partner, wallet, send, meter, replaceRules, events } = await setUp('approval-mid-flight', rules, {
    fundWei: 0n,
    approvals: true,
  });
  // People who could approve, and the wallet bound to them: an admission over the threshold would open a case.
  const user = await svc.admin('POST', `/projects/${partner.projectId}/users`, { name: 'ann' });
  const scope = await svc.admin('POST', `/projects/${partner.projectId}/authorization-scopes`, { name: 'ops' });
  assert.equal(
    (
      await svc.admin('PUT', `/authorization-scopes/${scope.body.id}/assignments/${user.body.id}`, {
        roles: ['approver'],
        expectedRevision: 0,
      })
    ).status,
    200,
  );
  assert.equal(
    (await svc.admin('PUT', `/wallets/${wallet.id}/authorization-scope`, { scopeId: scope.body.id })).status,
    200,
  );
  const estimate = await svc.v1(partner.secret, 'POST', `/wallets/${wallet.id}/estimate-fee`, {
    to,
    value: VALUE.toString(),
    chainId: '31337',
  });
  assert.equal(estimate.status, 200, JSON.stringify(estimate.body));
  // Funds for the first attempt only: the retry waits, and looks again every replacement delay.
  await setBalance(anvil.rpcUrl, wallet.address, BigInt(estimate.body.maxFee) + VALUE + 10n);
  await withMiningHeld(async () => {
    const r = await send({ to, autoRetry: terms() }, 'approval-mid-flight-1');
    assert.equal(r.status, 202, JSON.stringify(r.body));
    const id = r.body.transactionId as string;
    await until(wallet.id, id, (x) => x.autoRetry.reason === 'INSUFFICIENT_FUNDS_FOR_REPLACEMENT');
    await replaceRules([
      ...rules,
      {
        id: 'large',
        effect: 'require_approval',
        actions: ['transfer'],
        conditions: [{ fact: 'value', op: 'gte', value: VALUE.toString() }],
        approval: { stages: [{ role: 'approver', threshold: 1 }] },
      },
    ]);
    await setBalance(anvil.rpcUrl, wallet.address, ETH);
    const stopped = await until(wallet.id, id, (x) => x.autoRetry.state !== 'active');
    assert.equal(stopped.autoRetry.state, 'stopped');
    assert.equal(stopped.autoRetry.reason, 'POLICY_REVIEW_REQUIRED', JSON.stringify(stopped.autoRetry));
    assert.equal(stopped.autoRetry.bumpCount, 0);
    await sleep(REPLACEMENT_DELAY_MS * 4);
    const later = await record(wallet.id, id);
    assert.equal(later.autoRetry.attempts.length, 1, 'nothing signed after the rule');
    await assertSentExactly(to, wallet.address, hashesOf(later));
    // A replacement cannot be resent by the partner: no case is opened for it.
    const cases = await svc.v1(partner.secret, 'GET', `${BASE}/approval-cases`);
    assert.equal(cases.status, 200, JSON.stringify(cases.body));
    assert.deepEqual(cases.body.data, []);
    assert.equal((await meter()).used, VALUE.toString());

    await setAutomine(anvil.rpcUrl, true);
    const final = await mineUntilFinal(wallet.id, id);
    assert.equal(final.status, 'confirmed');
    assert.equal(final.monitoring?.winningHash, undefined, 'the original won');
    assert.equal(await balance(to), VALUE);
    await waitForEvent(() => events(id), 'rest.transaction.confirmed');
  });
});

test('a payment admitted through an approved review keeps its replacements under the same rule', async () => {
  const to = '0x00000000000000000000000000000000000c0a04';
  const { partner, wallet, send, meter, records } = await setUp(
    'approved-admission',
    [
      capRule(VALUE),
      {
        id: 'large',
        effect: 'require_approval',
        actions: ['transfer'],
        conditions: [{ fact: 'value', op: 'gte', value: VALUE.toString() }],
      },
    ],
    { approvals: true },
  );
  const body = { to, autoRetry: terms() };
  const held = await send(body, 'approved-admission-1');
  assert.equal(held.status, 403, JSON.stringify(held.body));
  assert.equal(held.body.code, 'POLICY_REVIEW_REQUIRED');
  assert.equal((await records()).length, 0, 'a hold admits nothing');
  assert.equal((await meter()).used, '0', 'nor counts anything');
  const approved = await svc.v1(partner.secret, 'POST', `${BASE}/reviews/${held.body.reviewId}/approve`);
  assert.equal(approved.status, 200, JSON.stringify(approved.body));
  assert.equal(approved.body.status, 'approved');
  await withMiningHeld(async () => {
    const r = await send(body, 'approved-admission-1');
    assert.equal(r.status, 202, JSON.stringify(r.body));
    const id = r.body.transactionId as string;
    const stopped = await until(wallet.id, id, (x) => x.autoRetry.state === 'stopped');
    assert.equal(stopped.autoRetry.reason, 'ATTEMPT_LIMIT_REACHED', JSON.stringify(stopped.autoRetry));
    assert.equal(stopped.autoRetry.bumpCount, 3);
    assert.equal((await meter()).used, VALUE.toString());
    await assertSentExactly(to, wallet.address, hashesOf(stopped));
    await setAutomine(anvil.rpcUrl, true);
    const final = await mineUntilFinal(wallet.id, id);
    assert.equal(final.status, 'confirmed');
    assert.equal(await balance(to), VALUE);
  });
  const review = await svc.v1(partner.secret, 'POST', `${BASE}/reviews/${held.body.reviewId}/approve`);
  assert.equal(review.body.status, 'consumed', 'the approval was used once, by the admission');
});

test('a payment stopped before anything was signed (enclave down) gives its spend back: the wallet pays again under the cap', async () => {
  const to = '0x00000000000000000000000000000000000c0a05';
  const { wallet, send, meter, events } = await setUp('unsigned-release', [capRule(VALUE)]);
  await stopProcess(svc.enclave, 'SIGKILL');
  let id: string;
  try {
    const r = await send({ to, autoRetry: terms() }, 'unsigned-release-1');
    assert.equal(r.status, 202, JSON.stringify(r.body));
    id = r.body.transactionId;
    const failed = await until(wallet.id, id, (x) => x.status === 'failed');
    assert.equal(failed.failureStage, 'mpc_sign');
    assert.equal(failed.failureCode, 'ENCLAVE_UNAVAILABLE');
    assert.equal(failed.hash, null);
    assert.equal(failed.autoRetry.state, 'stopped');
    assert.deepEqual(
      failed.autoRetry.attempts.map((a: { stage: string; hash: string | null }) => [a.stage, a.hash]),
      [['rejected', null]],
    );
    assert.equal((await meter()).used, '0', 'no usable signature: released');
  } finally {
    await svc.restartEnclave();
    await svc.waitReady();
  }
  await waitForEvent(() => events(id), 'rest.transaction.failed');
  const failedEvent = events(id).find((e) => e.type === 'rest.transaction.failed')!;
  assert.deepEqual(
    [failedEvent.data.status, failedEvent.data.failureStage, failedEvent.data.failureCode],
    ['failed', 'mpc_sign', 'ENCLAVE_UNAVAILABLE'],
  );
  const next = await send({ to, autoRetry: terms() }, 'unsigned-release-2');
  assert.equal(next.status, 202, `the cap has room again: ${JSON.stringify(next.body)}`);
  assert.equal(next.body.autoRetry.nonce, 0, 'the nonce the failed payment never used');
  const final = await mineUntilFinal(wallet.id, next.body.transactionId);
  assert.equal(final.status, 'confirmed');
  assert.equal((await meter()).used, VALUE.toString());
  assert.equal(await balance(to), VALUE, 'only the second payment executed');
  assert.deepEqual([...sentTo(to).keys()], [final.hash], 'nothing of the failed payment reached the node');
});
