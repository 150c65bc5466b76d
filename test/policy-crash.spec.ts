/**
 * Signing policies across a SIGKILL of the API at the worst moment of the decision point: after the transaction that
 * commits the decision, its spend reservation and its decision-log row (and, for a broadcast, the payment record), and
 * before the signature (POLICIES.md §4). The whole appliance runs under its supervisor, on anvil behind the fault proxy
 * (fixtures/rpc-fault-proxy.ts, here only recording what is sent). One key with permissions on, one policy on chain
 * 31337: a cap of 10 000 wei per wallet per day, and an approval by one `approver` for 8 000 wei or more.
 *
 * One kill serves three cases, each caught at its own moment (an API start costs seconds):
 * - a transfer (broadcast) being signed, the enclave stopped (SIGSTOP): after the restart it has failed at `mpc_sign`
 *   (SIGNING_INTERRUPTED), nothing was sent, its reservation is released, and the wallet pays again up to the cap and
 *   no further;
 * - a sign-only `sign-transaction` being signed: the service cannot know whether the partner got the signature, so
 *   its reservation still counts; the identical resend (same Idempotency-Key, same body) is signed and not counted
 *   again; a different request over the cap is refused, one that fits exactly is signed;
 * - a transfer held for approval before the kill: its case is still pending after the restart; approved, the resend is
 *   signed once (the chain pays once) and a further resend answers the same payment.
 *
 * What is checked is what a partner sees (answers, records, usage meters, cases) and what the chain shows (nonces,
 * balances, every send the proxy saw), beside the ledger and decision log as stored.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import Database from 'better-sqlite3';
import { parseTransaction, recoverTransactionAddress } from 'viem';
import { type Anvil, startAnvil } from '../fixtures/anvil.ts';
import { mine, rpc, sendRawTransaction, setBalance } from '../fixtures/evm-helpers.ts';
import { type RpcCall, type RpcFaultProxy, startRpcFaultProxy } from '../fixtures/rpc-fault-proxy.ts';
import { createPartnerKey } from './helpers/http.ts';
import { tempDataDir } from './helpers/service.ts';
import { alive, childPid, createPauser, type RunningSupervisor, startSupervisor } from './helpers/supervisor.ts';

const ADMIN = 'policy-crash-admin-token-0123456789abcdef';
const BASE = '/permissions-v2';
const NETWORK = 'eip155:31337';
/** The day's cap per wallet, in wei: the policy denies a request that would take the day's total above it. */
const CAP = 10_000n;
/** From this value on, a transfer waits for one approver. */
const APPROVAL_FROM = 8_000n;

let anvil: Anvil | undefined;
let proxy: RpcFaultProxy | undefined;
let sup: RunningSupervisor | undefined;
let dataDir = '';
let headers: Record<string, string> = {};
let policyId = '';
let approverId = '';
let scopeId = '';
/** Enclaves this file stopped (SIGSTOP): continued at the end whatever happened, so that they can be stopped. */
const enclaves = createPauser();

async function call(
  url: string,
  method: string,
  extra: Record<string, string>,
  body?: unknown,
): Promise<{ status: number; body: any; headers: Headers }> {
  const r = await fetch(url, {
    method,
    headers: body === undefined ? extra : { 'content-type': 'application/json', ...extra },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await r.text();
  return { status: r.status, body: text ? JSON.parse(text) : undefined, headers: r.headers };
}
const admin = (method: string, route: string, body?: unknown) =>
  call(`${sup!.adminUrl}/admin/v1${route}`, method, { authorization: `Bearer ${ADMIN}` }, body);
const v1 = (method: string, route: string, body?: unknown, extra: Record<string, string> = {}) =>
  call(`${sup!.url}/v1${route}`, method, { ...headers, ...extra }, body);

before(async () => {
  anvil = await startAnvil({ slotsInAnEpoch: 1 });
  proxy = await startRpcFaultProxy(anvil.rpcUrl);
  dataDir = tempDataDir('wcs-policy-crash-');
  const chains = path.join(dataDir, 'chains.json');
  fs.writeFileSync(chains, JSON.stringify({ evm: [{ chainId: 31337, rpcUrl: proxy.url, environment: 'any' }] }));
  sup = await startSupervisor({
    DATA_DIR: dataDir,
    ADMIN_TOKEN: ADMIN,
    CHAINS_FILE: chains,
    CHAIN_POLL_INTERVAL_MS: '100',
  });
  // A development key: it writes its own policies (a production key receives them through the production review).
  const key = await createPartnerKey(
    sup.adminUrl,
    ADMIN,
    { plan: 'enterprise', rateLimitPerMinute: 100_000 },
    'development',
  );
  headers = { 'x-api-key': key.secretKey };
  const on = await admin('PUT', `/api-keys/${key.keyId}/permissions`, { enabled: true, approvals: true });
  assert.equal(on.status, 200, JSON.stringify(on.body));
  const policy = {
    name: 'daily cap, large transfers approved',
    layer: 'guardrail',
    scope: { walletType: 'EVM', networks: [NETWORK] },
    rules: [
      {
        id: 'daily-cap',
        effect: 'deny',
        actions: ['transfer', 'sign_transaction'],
        conditions: [{ spend: { asset: 'native', window: '24h' }, op: 'gt', value: CAP.toString() }],
      },
      {
        id: 'large',
        effect: 'require_approval',
        actions: ['transfer', 'sign_transaction'],
        conditions: [{ fact: 'value', op: 'gte', value: APPROVAL_FROM.toString() }],
        approval: { stages: [{ role: 'approver', threshold: 1 }] },
      },
    ],
  };
  const created = await v1('POST', `${BASE}/policies`, { policy });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  policyId = created.body.id;
  const active = await v1('POST', `${BASE}/policies/${policyId}/activate`, { expectedRevision: created.body.revision });
  assert.equal(active.status, 200, JSON.stringify(active.body));
  const user = await admin('POST', `/projects/${key.projectId}/users`, { name: 'carol' });
  assert.equal(user.status, 201, JSON.stringify(user.body));
  approverId = user.body.id;
  const scope = await admin('POST', `/projects/${key.projectId}/authorization-scopes`, { name: 'treasury' });
  assert.equal(scope.status, 201, JSON.stringify(scope.body));
  const assigned = await admin('PUT', `/authorization-scopes/${scope.body.id}/assignments/${approverId}`, {
    roles: ['approver'],
    expectedRevision: 0,
  });
  assert.equal(assigned.status, 200, JSON.stringify(assigned.body));
  scopeId = scope.body.id;
});

after(async () => {
  enclaves.resumeAll();
  await sup?.stop();
  await proxy?.close();
  await anvil?.stop();
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
});

// --- the processes ---------------------------------------------------------------------------------------------

const restarts = () => [...sup!.log().matchAll(/\[supervisor\] api restarted/g)].length;

// --- the records, ledger and decision log, as stored -----------------------------------------------------------

function query<T>(sql: string, ...params: unknown[]): T[] {
  const db = new Database(path.join(dataDir, 'service.db'), { readonly: true });
  try {
    return db.prepare(sql).all(...params) as T[];
  } finally {
    db.close();
  }
}

interface SpendRow {
  spend_ref: string;
  amount: string;
  released_at: number | null;
}
/** The spend ledger's entries of a wallet, in the order counted. */
const ledgerOf = (walletId: string) =>
  query<SpendRow>(
    'select spend_ref, amount, released_at from policy_spend where wallet_id = ? order by counted_at, rowid',
    walletId,
  );

/** The decision-log rows of a spend reference (a payment's id, or a sign-only request's reference and nonce). */
const decisionsOf = (spendRef: string) =>
  query<{ effect: string; action: string; policy_id: string | null; wallet_id: string }>(
    'select effect, action, policy_id, wallet_id from policy_decisions where spend_ref = ? order by seq',
    spendRef,
  );

/** The payment actor's committed state and the effects it has under way (or interrupted). */
function actorOf(id: string): { state: string; effects: string[] } {
  const [row] = query<{ state: string }>('select state from actor_snapshots where actor_id = ?', id);
  const effects = query<{ src: string }>('select src from actor_effects where actor_id = ?', id).map((e) => e.src);
  return { state: row?.state ?? 'none', effects };
}

// --- the chain, and what the proxy saw sent --------------------------------------------------------------------

const nonceOf = async (address: string, tag: 'latest' | 'pending' = 'latest') =>
  Number(BigInt(await rpc<string>(anvil!.rpcUrl, 'eth_getTransactionCount', [address, tag])));
const balanceOf = async (address: string) =>
  BigInt(await rpc<string>(anvil!.rpcUrl, 'eth_getBalance', [address, 'latest']));

function recipientOf(c: RpcCall): string | undefined {
  try {
    return parseTransaction(c.params?.[0] as `0x${string}`).to?.toLowerCase();
  } catch {
    return undefined;
  }
}

/** Every eth_sendRawTransaction to `to` the proxy saw: its bytes and value. */
const sendsTo = (to: string) =>
  proxy!.calls
    .filter((c) => c.call.method === 'eth_sendRawTransaction' && recipientOf(c.call) === to.toLowerCase())
    .map((c) => {
      const raw = c.call.params?.[0] as `0x${string}`;
      return { raw, value: parseTransaction(raw).value };
    });

// --- the partner -----------------------------------------------------------------------------------------------

let wallets = 0;
async function newWallet(): Promise<{ id: string; address: `0x${string}` }> {
  const r = await v1('POST', '/wallets', {
    type: 'EVM',
    userIdentifier: `policy-crash-${wallets++}`,
    userIdentifierType: 'CUSTOM_ID',
  });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  await setBalance(anvil!.rpcUrl, r.body.address, 10n ** 18n);
  return r.body;
}

type Answer = { status: number; body: any; headers: Headers } | { error: Error };
const settled = (p: Promise<{ status: number; body: any; headers: Headers }>): Promise<Answer> =>
  p.catch((error: Error) => ({ error }));

const transfer = (walletId: string, to: string, value: bigint, key?: string) =>
  v1(
    'POST',
    `/wallets/${walletId}/transfer`,
    { to, value: value.toString(), chainId: '31337' },
    key ? { 'idempotency-key': key } : {},
  );

/** A sign-only EVM value transfer with every field given (no node asked). */
const signTransaction = (walletId: string, to: string, value: bigint, nonce: number, key: string) =>
  v1(
    'POST',
    `/wallets/${walletId}/sign-transaction`,
    {
      transaction: {
        to,
        value: value.toString(),
        chainId: 31337,
        type: 2,
        nonce,
        gasLimit: '21000',
        maxFeePerGas: '30000000000',
        maxPriorityFeePerGas: '1000000000',
      },
    },
    { 'idempotency-key': key },
  );

/** The wallet's day meter of the cap rule, as the usage route shows it. */
async function used(walletId: string): Promise<bigint> {
  const u = await v1('GET', `${BASE}/wallets/${walletId}/policies/${policyId}/usage?network=${NETWORK}`);
  assert.equal(u.status, 200, JSON.stringify(u.body));
  const meter = (u.body.meters as Array<{ ruleId: string; used: string; limit: string }>).find(
    (m) => m.ruleId === 'daily-cap',
  );
  assert.ok(meter, JSON.stringify(u.body));
  assert.equal(meter.limit, CAP.toString());
  return BigInt(meter.used);
}

/** The payment as the partner reads it. */
async function paymentOf(walletId: string, id: string): Promise<any> {
  const r = await v1('GET', `/wallets/${walletId}/transactions/${id}`);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body;
}

/** Mines until the payment leaves `pending`/`submitted`; answers it. */
async function settle(walletId: string, id: string): Promise<any> {
  let last: any;
  await sup!.waitFor(
    async () => {
      last = await paymentOf(walletId, id);
      if (last.status !== 'pending' && last.status !== 'submitted') return true;
      await mine(anvil!.rpcUrl, 1);
      return false;
    },
    `payment ${id} to settle`,
    20_000,
  );
  return last;
}

const recipient = (n: number) => `0x00000000000000000000000000000000000d${n.toString(16).padStart(4, '0')}`;

// --- one kill, three cases -------------------------------------------------------------------------------------

test('SIGKILL after the decision committed, before the signature: a transfer, a sign-only request and a held request', async (t) => {
  const TO = { transfer: recipient(1), signOnly: recipient(2), held: recipient(3) };
  const w = { transfer: await newWallet(), signOnly: await newWallet(), held: await newWallet() };
  const bound = await admin('PUT', `/wallets/${w.held.id}/authorization-scope`, { scopeId });
  assert.equal(bound.status, 200, JSON.stringify(bound.body));

  // Before: each wallet has counted something, so that "released" and "counted once" read against a meter not at 0.
  const first = await transfer(w.transfer.id, TO.transfer, 3_000n);
  assert.equal(first.status, 200, JSON.stringify(first.body));
  assert.equal((await settle(w.transfer.id, first.body.transactionId)).status, 'confirmed');
  const s1 = await signTransaction(w.signOnly.id, TO.signOnly, 4_000n, 0, 'sign-1');
  assert.equal(s1.status, 200, JSON.stringify(s1.body));
  assert.equal(await used(w.transfer.id), 3_000n);
  assert.equal(await used(w.signOnly.id), 4_000n);

  // Held: an approval case opens; nothing is recorded, counted or signed.
  const held = await transfer(w.held.id, TO.held, 9_000n, 'held-1');
  assert.equal(held.status, 403, JSON.stringify(held.body));
  assert.equal(held.body.code, 'POLICY_REVIEW_REQUIRED');
  assert.equal(held.body.status, 'pending');
  const caseId = held.body.caseId as string;
  assert.ok(caseId, JSON.stringify(held.body));
  assert.equal(held.headers.get('x-transaction-id'), null, 'no record for a held transfer');

  const enclave = childPid(sup!, 'enclave');
  const pending: Promise<Answer>[] = [];
  let paymentId = '';
  enclaves.pause(enclave);
  try {
    // The transfer: its record, reservation and decision commit; the payment actor asks the stopped enclave.
    pending.push(settled(transfer(w.transfer.id, TO.transfer, 5_000n, 'pay-b')));
    await sup!.waitFor(
      () => {
        const [rec] = query<{ id: string }>(
          'select id from transactions where wallet_id = ? order by seq desc limit 1',
          w.transfer.id,
        );
        if (!rec || rec.id === first.body.transactionId) return false;
        paymentId = rec.id;
        const a = actorOf(rec.id);
        return a.state === 'signing' && a.effects.includes('sign');
      },
      'the transfer being signed',
      15_000,
    );
    // The sign-only request: its reservation and decision commit, then it waits on the enclave.
    pending.push(settled(signTransaction(w.signOnly.id, TO.signOnly, 5_000n, 1, 'sign-2')));
    await sup!.waitFor(() => ledgerOf(w.signOnly.id).length === 2, 'the sign-only reservation committed', 15_000);

    // Both are counted now, as the partner's meters show: what the restart does to them is what is tested below.
    assert.equal(await used(w.transfer.id), 8_000n);
    assert.equal(await used(w.signOnly.id), 9_000n);
    assert.deepEqual(
      decisionsOf(paymentId).map((d) => d.effect),
      ['allow'],
      'the decision is logged with the record, before the signature',
    );
    const [rec] = query<{ status: string; signed_transaction: string | null }>(
      'select status, signed_transaction from transactions where id = ?',
      paymentId,
    );
    assert.deepEqual(rec, { status: 'pending', signed_transaction: null }, 'not signed yet');
    // Let the requests reach the enclave's socket: once continued, the enclave signs them for a process that is gone.
    await new Promise((r) => setTimeout(r, 200));

    const api = childPid(sup!, 'api');
    const before = restarts();
    process.kill(api, 'SIGKILL');
    await sup!.waitFor(() => !alive(api), 'the API to die');
    enclaves.resume(enclave);
    await sup!.waitFor(() => restarts() > before, 'the API restart', 30_000);
    await sup!.waitFor(
      async () => (await fetch(`${sup!.url}/readyz`).catch(() => undefined))?.status === 200,
      'the restarted API to be ready',
    );
  } finally {
    enclaves.resume(enclave);
  }
  for (const a of await Promise.all(pending)) assert.ok('error' in a, `the request died with the process: ${a}`);

  await t.test(
    'the transfer: failed at mpc_sign, nothing sent, its spend released; the wallet pays up to the cap and no further',
    async () => {
      // Failure would look like: the meter still at 8 000 (the reservation kept for a payment that can never execute:
      // the 7 000 below refused), the meter at 3 000 but 5 000 sent anyway (the interrupted payment signed again after
      // the restart), or the meter below 3 000 (released twice) letting the 1 wei through.
      let payment: any;
      await sup!.waitFor(
        async () => {
          payment = await paymentOf(w.transfer.id, paymentId);
          return payment.status === 'failed';
        },
        'the interrupted payment to fail',
        15_000,
      );
      assert.equal(payment.failureStage, 'mpc_sign');
      assert.equal(payment.failureCode, 'SIGNING_INTERRUPTED');
      assert.equal(payment.signedTransaction ?? null, null);
      assert.equal(await used(w.transfer.id), 3_000n, 'released: the meter is back where it was');
      const entry = ledgerOf(w.transfer.id).find((e) => e.spend_ref === paymentId);
      assert.ok(entry?.released_at, 'the ledger keeps the entry, released');
      assert.deepEqual(
        decisionsOf(paymentId).map((d) => [d.effect, d.action, d.policy_id, d.wallet_id]),
        [['allow', 'transfer', null, w.transfer.id]],
        'the decision log still shows the one decision',
      );

      // The partner resends with the same key: the failed payment answers, nothing is counted or signed again.
      const resent = await transfer(w.transfer.id, TO.transfer, 5_000n, 'pay-b');
      assert.equal(resent.body.code, 'SIGNING_INTERRUPTED', JSON.stringify(resent.body));
      assert.equal(resent.body.transactionId, paymentId);
      assert.equal(await used(w.transfer.id), 3_000n);

      await mine(anvil!.rpcUrl, 2);
      assert.deepEqual(
        sendsTo(TO.transfer).map((s) => s.value),
        [3_000n],
        'only the first payment was ever sent',
      );
      assert.equal(await nonceOf(w.transfer.address, 'pending'), 1, 'nothing more of the wallet reached the node');

      // Up to the cap: 3 000 + 7 000 = 10 000 fits; one wei more does not.
      const fits = await transfer(w.transfer.id, TO.transfer, 7_000n);
      assert.equal(fits.status, 200, `released, so 7 000 fits: ${JSON.stringify(fits.body)}`);
      assert.equal((await settle(w.transfer.id, fits.body.transactionId)).status, 'confirmed');
      const over = await transfer(w.transfer.id, TO.transfer, 1n);
      assert.equal(over.status, 403, JSON.stringify(over.body));
      assert.equal(over.body.code, 'POLICY_DENIED');
      assert.deepEqual(over.body.deniedBy, [{ reason: 'denied-by-rule', policyId, ruleId: 'daily-cap' }]);
      assert.equal(await used(w.transfer.id), CAP);

      await mine(anvil!.rpcUrl, 1);
      assert.equal(await balanceOf(TO.transfer), CAP, 'the chain paid exactly the cap');
      assert.equal(await nonceOf(w.transfer.address, 'pending'), 2);
      assert.deepEqual(
        sendsTo(TO.transfer).map((s) => s.value),
        [3_000n, 7_000n],
      );
    },
  );

  await t.test(
    'the sign-only request: still counted; its identical resend signed and not counted again; over the cap refused',
    async () => {
      // Failure would look like: the meter at 4 000 after the restart (released while the partner may hold the
      // signature: a partner that got it before the kill could then have 6 000 more signed, 15 000 on chain), at
      // 14 000 after the resend (counted twice: the 1 000 that fits refused), or the resend refused (the partner could
      // never get the signature it was allowed).
      assert.equal(await used(w.signOnly.id), 9_000n, 'the reservation outlives the crash');

      const resent = await signTransaction(w.signOnly.id, TO.signOnly, 5_000n, 1, 'sign-2');
      assert.equal(resent.status, 200, JSON.stringify(resent.body));
      assert.equal(resent.headers.get('idempotent-replayed'), null, 'signed now: no answer was stored before the kill');
      const s2 = resent.body.signedTransaction as `0x${string}`;
      assert.equal(await recoverTransactionAddress({ serializedTransaction: s2 as never }), w.signOnly.address);
      assert.equal(parseTransaction(s2).nonce, 1);
      assert.equal(await used(w.signOnly.id), 9_000n, 'the resend is the same signature: counted once');
      const again = await signTransaction(w.signOnly.id, TO.signOnly, 5_000n, 1, 'sign-2');
      assert.equal(again.headers.get('idempotent-replayed'), 'true');
      assert.equal(again.body.signedTransaction, s2);

      const over = await signTransaction(w.signOnly.id, TO.signOnly, 2_000n, 2, 'sign-3');
      assert.equal(over.status, 403, JSON.stringify(over.body));
      assert.equal(over.body.code, 'POLICY_DENIED');
      assert.deepEqual(over.body.deniedBy, [{ reason: 'denied-by-rule', policyId, ruleId: 'daily-cap' }]);
      assert.equal(over.body.signedTransaction, undefined);
      const fits = await signTransaction(w.signOnly.id, TO.signOnly, 1_000n, 2, 'sign-4');
      assert.equal(fits.status, 200, `4 000 + 5 000 + 1 000 is the cap: ${JSON.stringify(fits.body)}`);
      assert.equal(await used(w.signOnly.id), CAP);

      const ledger = ledgerOf(w.signOnly.id);
      assert.deepEqual(
        ledger.map((e) => [e.spend_ref, e.amount, e.released_at]),
        [
          ['key:sign-1#nonce:0', '4000', null],
          ['key:sign-2#nonce:1', '5000', null],
          ['key:sign-4#nonce:2', '1000', null],
        ],
      );
      assert.deepEqual(
        decisionsOf('key:sign-2#nonce:1').map((d) => d.effect),
        ['allow', 'allow'],
        'decided before the kill and again for the resend, counted once',
      );

      // The partner broadcasts what it holds: the chain moves the cap, no more.
      for (const raw of [s1.body.signedTransaction, s2, fits.body.signedTransaction]) {
        await sendRawTransaction(anvil!.rpcUrl, raw);
      }
      await mine(anvil!.rpcUrl, 1);
      assert.equal(await nonceOf(w.signOnly.address), 3);
      assert.equal(await balanceOf(TO.signOnly), CAP);
    },
  );

  await t.test(
    'the held transfer: its case still pending after the restart; approved, the resend is paid once',
    async () => {
      // Failure would look like: the case gone or ended by the restart (the resend opening another, or 409), the
      // resend still held after the approval, or paid twice (two records, the chain paying 18 000).
      const pendingCase = await v1('GET', `${BASE}/approval-cases/${caseId}`);
      assert.equal(pendingCase.status, 200, JSON.stringify(pendingCase.body));
      assert.equal(pendingCase.body.status, 'pending');
      assert.equal(pendingCase.body.usedAt ?? null, null);
      const stillHeld = await transfer(w.held.id, TO.held, 9_000n, 'held-1');
      assert.equal(stillHeld.status, 403, JSON.stringify(stillHeld.body));
      assert.equal(stillHeld.body.code, 'POLICY_REVIEW_REQUIRED');
      assert.equal(stillHeld.body.caseId, caseId, 'the same case');
      assert.equal(await used(w.held.id), 0n);

      const approved = await admin('POST', `/approval-cases/${caseId}/decisions`, {
        userId: approverId,
        decision: 'approve',
      });
      assert.equal(approved.status, 200, JSON.stringify(approved.body));
      const paid = await transfer(w.held.id, TO.held, 9_000n, 'held-1');
      assert.equal(paid.status, 200, JSON.stringify(paid.body));
      assert.equal((await settle(w.held.id, paid.body.transactionId)).status, 'confirmed');
      const replay = await transfer(w.held.id, TO.held, 9_000n, 'held-1');
      assert.equal(replay.status, 200, JSON.stringify(replay.body));
      assert.equal(replay.body.transactionId, paid.body.transactionId, 'the resend answers the same payment');

      const used1 = await v1('GET', `${BASE}/approval-cases/${caseId}`);
      assert.equal(used1.body.status, 'completed');
      assert.ok(used1.body.usedAt, 'the case let its request through');
      const list = await v1('GET', `/wallets/${w.held.id}/transactions`);
      assert.equal(list.body.data.length, 1, 'one payment');
      assert.equal(await used(w.held.id), 9_000n);
      await mine(anvil!.rpcUrl, 1);
      assert.equal(await nonceOf(w.held.address, 'pending'), 1);
      assert.equal(await balanceOf(TO.held), 9_000n, 'paid once');
      assert.ok(sendsTo(TO.held).every((s) => s.raw === paid.body.signedTransaction));
    },
  );
});
