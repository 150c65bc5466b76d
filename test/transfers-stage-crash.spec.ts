/**
 * EVM payments with the API process killed at precise stages of each, on anvil behind the fault proxy
 * (fixtures/rpc-fault-proxy.ts), the whole appliance under its supervisor:
 *
 * - SIGKILL (the supervisor restarts the API) with four payments of four wallets stopped at four stages at once: one
 *   being signed (the enclave stopped with SIGSTOP), one signed and on its way to the node (the proxy holds the send),
 *   one taken by the node with the answer lost (the proxy forwards the send and holds the answer), one answered
 *   `submitted` and not mined (automine off; mined while the API is down). One kill serves the four: an API start
 *   costs seconds, and each payment is still caught at its own moment and checked on its own. A fifth is a send whose
 *   answer was lost and whose resend after the restart a node refuses: the broadcast effect, re-delivered after the
 *   crash, counts that refusal as proving nothing (EffectContext.redelivered).
 * - SIGTERM while a payment is being signed (the enclave stopped, continued a second later), once with the partner
 *   waiting for the answer and once with the partner gone; the API must exit within the supervisor's grace (10 s).
 *
 * What is checked is what the chain shows (the wallet's nonce, the recipient's balance, the transaction at the
 * nonce), what the proxy saw sent, and the record, against what was stored before the process went.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { keccak256, parseTransaction } from 'viem';
import { type Anvil, startAnvil } from '../fixtures/anvil.ts';
import { mine, rpc, setAutomine, setBalance } from '../fixtures/evm-helpers.ts';
import { type RpcCall, type RpcFaultProxy, startRpcFaultProxy } from '../fixtures/rpc-fault-proxy.ts';
import { createPartnerKey } from './helpers/http.ts';
import { tempDataDir } from './helpers/service.ts';
import { queryServiceDb } from './helpers/spec-steps.ts';
import { alive, childPid, createPauser, type RunningSupervisor, startSupervisor } from './helpers/supervisor.ts';

const ADMIN = 'stage-crash-admin-token-0123456789abcdef';
let anvil: Anvil | undefined;
let proxy: RpcFaultProxy | undefined;
let sup: RunningSupervisor | undefined;
let dataDir = '';
let headers: Record<string, string> = {};
/** Enclaves this file stopped (SIGSTOP): continued at the end whatever happened, so that they can be stopped. */
const enclaves = createPauser();

before(async () => {
  anvil = await startAnvil({ slotsInAnEpoch: 1 });
  proxy = await startRpcFaultProxy(anvil.rpcUrl);
  dataDir = tempDataDir('wcs-stage-crash-');
  const chains = path.join(dataDir, 'chains.json');
  fs.writeFileSync(chains, JSON.stringify({ evm: [{ chainId: 31337, rpcUrl: proxy.url, environment: 'any' }] }));
  sup = await startSupervisor({
    DATA_DIR: dataDir,
    ADMIN_TOKEN: ADMIN,
    CHAINS_FILE: chains,
    CHAIN_POLL_INTERVAL_MS: '100',
  });
  const key = await createPartnerKey(sup.adminUrl, ADMIN, { plan: 'enterprise', rateLimitPerMinute: 100_000 });
  headers = { 'x-api-key': key.secretKey, 'content-type': 'application/json' };
});

after(async () => {
  enclaves.resumeAll();
  if (anvil) await setAutomine(anvil.rpcUrl, true).catch(() => undefined);
  await sup?.stop();
  await proxy?.close();
  await anvil?.stop();
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
});

// --- the processes ---------------------------------------------------------------------------------------------

const count = (re: RegExp) => [...sup!.log().matchAll(re)].length;

/** How long the supervisor gives a child it stops (SIGTERM) before it kills it (main.ts `stopChild`). */
const STOP_GRACE_MS = 10_000;

/**
 * Sends `signal` to the API process. `exited()` waits for the process to be gone, at most STOP_GRACE_MS after the
 * signal; `restarted()` for the supervisor's restart and /readyz (the database, the enclave, and the actors the start
 * recovered).
 */
function signalApi(signal: NodeJS.Signals) {
  const pid = childPid(sup!, 'api');
  const restarts = count(/\[supervisor\] api restarted/g);
  process.kill(pid, signal);
  const at = Date.now();
  return {
    pid,
    exited: () =>
      sup!.waitFor(
        () => !alive(pid),
        `the API (pid ${pid}) to exit within ${STOP_GRACE_MS} ms of ${signal}`,
        Math.max(0, at + STOP_GRACE_MS - Date.now()),
      ),
    async restarted() {
      await sup!.waitFor(() => count(/\[supervisor\] api restarted/g) > restarts, 'the API restart', 30_000);
      await sup!.waitFor(
        async () => (await fetch(`${sup!.url}/readyz`).catch(() => undefined))?.status === 200,
        'the restarted API to be ready',
      );
    },
  };
}

// --- the records, as stored ------------------------------------------------------------------------------------

interface RecordRow {
  id: string;
  status: string;
  hash: string | null;
  signed_transaction: string | null;
  failure_stage: string | null;
  failure_code: string | null;
  nonce: number | null;
  unresolved: number;
}

const query = <T>(sql: string, ...params: unknown[]): T[] => queryServiceDb<T>(dataDir, sql, ...params);

/** The wallet's payment records, oldest first. */
const recordsOf = (walletId: string) =>
  query<RecordRow>(
    `select id, status, hash, signed_transaction, failure_stage, failure_code, nonce, unresolved
     from transactions where wallet_id = ? order by seq`,
    walletId,
  );

/** The payment actor's committed state and the effects it has under way (or interrupted). */
function actorOf(id: string): { state: string; done: number; effects: string[] } {
  const [row] = query<{ state: string; done: number }>(
    'select state, done from actor_snapshots where actor_id = ?',
    id,
  );
  const effects = query<{ src: string }>('select src from actor_effects where actor_id = ?', id).map((e) => e.src);
  return { ...row!, effects };
}

/** The `rest.transaction.failed` / `send.failed` events written for a record (the partner hears these). */
const failedEventsOf = (rec: { id: string; hash: string | null }) =>
  query<{ type: string; data: string }>(
    `select type, data from outbox where type in ('rest.transaction.failed', 'send.failed')
     and (data like '%' || ? || '%' or (? is not null and data like '%' || ? || '%'))`,
    rec.id,
    rec.hash,
    rec.hash,
  );

/** Waits for the wallet's one record to be committed in `state` with its effect `effect` under way. */
async function waitForStage(walletId: string, state: string, effect: string): Promise<RecordRow> {
  let found: RecordRow | undefined;
  await sup!.waitFor(
    () => {
      found = recordsOf(walletId)[0];
      if (!found) return false;
      const a = actorOf(found.id);
      return a.state === state && a.effects.includes(effect);
    },
    `a payment of wallet ${walletId} in ${state}`,
    15_000,
  );
  return found!;
}

/** Mines until the record's status passes `done`; answers every status it showed on the way. */
async function follow(id: string, done: (status: string) => boolean): Promise<string[]> {
  const seen: string[] = [];
  await sup!.waitFor(
    async () => {
      const [r] = query<{ status: string }>('select status from transactions where id = ?', id);
      if (seen.at(-1) !== r!.status) seen.push(r!.status);
      if (done(r!.status)) return true;
      await mine(anvil!.rpcUrl, 1);
      return false;
    },
    `record ${id} to settle (seen ${seen.join(' → ')})`,
    20_000,
  );
  return seen;
}

// --- the chain, and what the proxy saw sent --------------------------------------------------------------------

const nonceOf = async (address: string, tag: 'latest' | 'pending' = 'latest') =>
  Number(BigInt(await rpc<string>(anvil!.rpcUrl, 'eth_getTransactionCount', [address, tag])));
const balanceOf = async (address: string) =>
  BigInt(await rpc<string>(anvil!.rpcUrl, 'eth_getBalance', [address, 'latest']));
const txByHash = (hash: string) =>
  rpc<{ from: string; nonce: string; blockNumber: string | null } | null>(anvil!.rpcUrl, 'eth_getTransactionByHash', [
    hash,
  ]);

/** The recipient of a sent transaction (each case pays its own), lower-case; undefined if it does not parse. */
function recipientOf(call: RpcCall): string | undefined {
  try {
    return parseTransaction(call.params?.[0] as `0x${string}`).to?.toLowerCase();
  } catch {
    return undefined;
  }
}

/** Every eth_sendRawTransaction to `to` the proxy saw from call index `from` on: its bytes, value, and fault. */
const sendsTo = (to: string, from = 0) =>
  proxy!.calls
    .slice(from)
    .filter((c) => c.call.method === 'eth_sendRawTransaction' && recipientOf(c.call) === to.toLowerCase())
    .map((c) => {
      const raw = c.call.params?.[0] as `0x${string}`;
      return { raw, value: parseTransaction(raw).value, fault: c.fault };
    });

// --- the partner -----------------------------------------------------------------------------------------------

let wallets = 0;
async function newWallet(): Promise<{ id: string; address: string }> {
  const r = await fetch(`${sup!.url}/v1/wallets`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ type: 'EVM', userIdentifier: `stage-${wallets++}`, userIdentifierType: 'CUSTOM_ID' }),
  });
  assert.equal(r.status, 201, await r.clone().text());
  const w = (await r.json()) as { id: string; address: string };
  await setBalance(anvil!.rpcUrl, w.address, 10n ** 18n);
  return w;
}

type Answer = { status: number; body: any } | { error: Error };

/** A transfer; a connection that dies with the process (or is abandoned) answers `{error}`. */
function transfer(walletId: string, to: string, value: string, signal?: AbortSignal): Promise<Answer> {
  return fetch(`${sup!.url}/v1/wallets/${walletId}/transfer`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ to, value, chainId: '31337' }),
    ...(signal ? { signal } : {}),
  }).then(
    async (r) => ({ status: r.status, body: await r.json() }),
    (error: Error) => ({ error }),
  );
}

/** GET on a connection of its own (never a pooled one): the status, or the connection error's code. */
function freshGet(urlPath: string): Promise<number | string> {
  const { hostname, port } = new URL(sup!.url);
  return new Promise((resolve) => {
    const req = http.request({ host: hostname, port, path: urlPath, agent: false }, (res) => {
      res.resume();
      resolve(res.statusCode!);
    });
    req.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
    req.end();
  });
}

// --- SIGKILL at four stages ------------------------------------------------------------------------------------

test('SIGKILL with payments caught at each stage: being signed, signed but unsent, sent with the answer lost, submitted', async (t) => {
  const TO = {
    signing: '0x00000000000000000000000000000000000c0001',
    unsent: '0x00000000000000000000000000000000000c0002',
    answerLost: '0x00000000000000000000000000000000000c0003',
    submitted: '0x00000000000000000000000000000000000c0004',
    refusedResend: '0x00000000000000000000000000000000000c0007',
  };
  const w = {
    signing: await newWallet(),
    unsent: await newWallet(),
    answerLost: await newWallet(),
    submitted: await newWallet(),
    refusedResend: await newWallet(),
  };
  const mark = proxy!.calls.length;
  const pending: Promise<Answer>[] = [];

  // Sent, answer lost: the node takes the bytes (and automine mines them), the answer is held.
  const holdAnswer = proxy!.add({
    method: 'eth_sendRawTransaction',
    when: (c) => recipientOf(c) === TO.answerLost,
    fault: { kind: 'hang-after-forward' },
  });
  pending.push(transfer(w.answerLost.id, TO.answerLost, '3333'));
  await sup!.waitFor(() => sendsTo(TO.answerLost, mark).length > 0, 'the send forwarded, its answer held');
  const answerLost = await waitForStage(w.answerLost.id, 'broadcasting', 'broadcast');
  await sup!.waitFor(async () => (await txByHash(answerLost.hash!))?.blockNumber != null, 'the transaction mined');

  // Submitted, not mined: the node answered; nothing is mined from now until the API is down.
  await setAutomine(anvil!.rpcUrl, false);
  const submittedAnswer = await transfer(w.submitted.id, TO.submitted, '4444');
  assert.ok('status' in submittedAnswer && submittedAnswer.status === 200, JSON.stringify(submittedAnswer));
  assert.equal(submittedAnswer.body.status, 'submitted');
  const submitted = recordsOf(w.submitted.id)[0]!;

  // Sent, answer lost, and the resend after the restart refused (below). The proxy holds the bytes unforwarded and the
  // test plays the node that took them: it hands them to the chain in the subtest, so that nothing mined while the
  // API is down settles this payment before its resend is judged.
  const holdRefusedAnswer = proxy!.add({
    method: 'eth_sendRawTransaction',
    when: (c) => recipientOf(c) === TO.refusedResend,
    fault: { kind: 'hang' },
  });
  pending.push(transfer(w.refusedResend.id, TO.refusedResend, '8888'));
  await sup!.waitFor(() => sendsTo(TO.refusedResend, mark).length > 0, 'the send taken, its answer held');
  const refusedResend = await waitForStage(w.refusedResend.id, 'broadcasting', 'broadcast');

  // Signed, never sent: every send of these bytes is held by the proxy, none forwarded (the poller's resends too).
  const holdSend = proxy!.add({
    method: 'eth_sendRawTransaction',
    when: (c) => recipientOf(c) === TO.unsent,
    fault: { kind: 'hang' },
  });
  pending.push(transfer(w.unsent.id, TO.unsent, '2222'));
  await sup!.waitFor(() => sendsTo(TO.unsent, mark).length > 0, 'the send held by the proxy');
  const unsent = await waitForStage(w.unsent.id, 'broadcasting', 'broadcast');

  // Signing: the enclave takes the request and answers nothing.
  const enclave = childPid(sup!, 'enclave');
  enclaves.pause(enclave);
  try {
    pending.push(transfer(w.signing.id, TO.signing, '1111'));
    const signing = await waitForStage(w.signing.id, 'signing', 'sign');
    assert.equal(signing.status, 'pending');
    assert.equal(signing.signed_transaction, null, 'not signed yet');
    // Let the request reach the enclave's socket: once continued, the enclave signs it for a process that is gone.
    await new Promise((r) => setTimeout(r, 200));

    // Each payment is still where it was caught (nothing moved on while the others were set up).
    assert.equal(actorOf(signing.id).state, 'signing');
    assert.equal(actorOf(unsent.id).state, 'broadcasting');
    assert.equal(await txByHash(unsent.hash!), null, 'the held bytes never reached the node');
    assert.equal(actorOf(answerLost.id).state, 'broadcasting', 'no answer yet');
    assert.equal(actorOf(submitted.id).state, 'submitted');
    assert.equal((await txByHash(submitted.hash!))?.blockNumber, null, 'in the pool, not mined');
    assert.equal(actorOf(refusedResend.id).state, 'broadcasting', 'no answer yet');

    const api = signalApi('SIGKILL');
    await api.exited();
    holdAnswer();
    holdSend();
    holdRefusedAnswer();
    // The first send after the restart (the interrupted broadcast, run again) meets a node that does not have the
    // bytes and refuses them with a refusal of the proven list (another node behind the same RPC URL, with a higher
    // price floor): it proves nothing of the copy the first node took. Later sends reach the chain.
    proxy!.add({
      method: 'eth_sendRawTransaction',
      when: (c) => recipientOf(c) === TO.refusedResend,
      fault: { kind: 'error', code: -32000, message: 'transaction underpriced' },
      times: 1,
    });
    enclaves.resume(enclave);
    // The chain moves on while the API is down: the submitted payment is mined.
    await mine(anvil!.rpcUrl, 3);
    await setAutomine(anvil!.rpcUrl, true);
    await api.restarted();
  } finally {
    enclaves.resume(enclave);
    await setAutomine(anvil!.rpcUrl, true);
  }
  for (const answer of await Promise.all(pending)) assert.ok('error' in answer, 'the request died with the process');

  await t.test(
    'being signed: failed at mpc_sign (SIGNING_INTERRUPTED), released, nothing sent, never signed again',
    async () => {
      // Failure would look like: the record still pending and holding (the next transfer answers 409), the interrupted
      // payment sent after the restart (a signature made again: a send of 1111 to its recipient), the wallet's nonce
      // moved while its record says failed, or the recipient paid 1111.
      const [rec] = recordsOf(w.signing.id);
      assert.equal(rec!.status, 'failed');
      assert.equal(rec!.failure_stage, 'mpc_sign');
      assert.equal(rec!.failure_code, 'SIGNING_INTERRUPTED');
      assert.equal(rec!.unresolved, 0, 'the wallet is not held');
      assert.equal(rec!.signed_transaction, null);
      assert.equal(actorOf(rec!.id).done, 1);
      const told = failedEventsOf(rec!).find((e) => e.type === 'rest.transaction.failed');
      assert.equal(JSON.parse(told!.data).failureCode, 'SIGNING_INTERRUPTED', 'the partner is told');
      await mine(anvil!.rpcUrl, 2);
      assert.deepEqual(sendsTo(TO.signing, mark), [], 'nothing was sent, before the kill or after');
      assert.equal(await nonceOf(w.signing.address, 'pending'), 0, "nothing of the wallet's reached the node");

      // Released: the next transfer is taken, with the nonce the interrupted one had; it alone executes.
      const next = await transfer(w.signing.id, TO.signing, '5555');
      assert.ok('status' in next && next.status === 200, JSON.stringify(next));
      await follow(next.body.transactionId, (s) => s === 'confirmed');
      assert.equal(Number((await txByHash(next.body.txHash))!.nonce), rec!.nonce);
      const values = sendsTo(TO.signing, mark).map((s) => s.value);
      assert.ok(
        values.length > 0 && values.every((v) => v === 5555n),
        `only the next payment was ever sent: ${values}`,
      );
      assert.equal(await nonceOf(w.signing.address), 1);
      assert.equal(await balanceOf(TO.signing), 5555n, 'the interrupted payment never executed');
      assert.equal(recordsOf(w.signing.id)[0]!.status, 'failed', 'and its record still says so');
    },
  );

  await t.test('signed, never sent: after the restart the stored bytes are sent, confirm once, nonce +1', async () => {
    // Failure would look like: a send of other bytes (signed again), the record failed or stuck while the chain paid,
    // the wallet's nonce moved by two, or the recipient paid twice.
    const seen = await follow(unsent.id, (s) => s === 'confirmed');
    assert.ok(!seen.includes('failed'), seen.join(' → '));
    const [final] = recordsOf(w.unsent.id);
    assert.equal(final!.hash, unsent.hash);
    assert.equal(final!.hash, keccak256(unsent.signed_transaction as `0x${string}`));
    assert.equal(final!.signed_transaction, unsent.signed_transaction);
    const sends = sendsTo(TO.unsent, mark);
    assert.ok(
      sends.some((s) => s.fault === null),
      'sent (and forwarded) after the restart',
    );
    assert.ok(
      sends.every((s) => s.raw === unsent.signed_transaction),
      'only the stored bytes were ever sent',
    );
    assert.equal((await txByHash(unsent.hash!))!.from.toLowerCase(), w.unsent.address.toLowerCase());
    assert.equal(await nonceOf(w.unsent.address), 1, 'one transaction of the wallet executed');
    assert.equal(await balanceOf(TO.unsent), 2222n, 'paid once');
    assert.deepEqual(failedEventsOf(unsent), [], 'never told failed');
  });

  await t.test(
    'sent, answer lost: the resend ("nonce too low": mined) does not fail it; it confirms once',
    async () => {
      // Failure would look like: the record failed (NONCE_TOO_LOW, or REPLACED by its own transaction) while the chain
      // paid, a second signature sent, or the recipient paid twice.
      const seen = await follow(answerLost.id, (s) => s === 'confirmed');
      assert.ok(!seen.includes('failed'), seen.join(' → '));
      const sends = sendsTo(TO.answerLost, mark);
      assert.ok(
        sends.some((s) => s.fault === null),
        'the restart sent the stored bytes again, to a node that had mined them',
      );
      assert.ok(sends.every((s) => s.raw === answerLost.signed_transaction));
      assert.equal(recordsOf(w.answerLost.id)[0]!.hash, answerLost.hash);
      assert.equal(await nonceOf(w.answerLost.address), 1);
      assert.equal(await balanceOf(TO.answerLost), 3333n, 'paid once');
      assert.deepEqual(failedEventsOf(answerLost), [], 'never told failed');
    },
  );

  await t.test('submitted, mined while the API was down: the record confirms, paid once', async () => {
    // Failure would look like: the record stuck submitted or failed after the restart, or other bytes sent for it
    // (the nonce moved by two, the recipient paid twice).
    const seen = await follow(submitted.id, (s) => s === 'confirmed');
    assert.ok(!seen.includes('failed'), seen.join(' → '));
    const [final] = recordsOf(w.submitted.id);
    assert.equal(final!.hash, submittedAnswer.body.txHash);
    assert.equal(final!.signed_transaction, submittedAnswer.body.signedTransaction);
    assert.ok(sendsTo(TO.submitted, mark).every((s) => s.raw === submittedAnswer.body.signedTransaction));
    assert.equal(await nonceOf(w.submitted.address, 'pending'), 1);
    assert.equal(await balanceOf(TO.submitted), 4444n, 'paid once');
    assert.deepEqual(failedEventsOf(submitted), [], 'never told failed');
  });

  await t.test(
    'sent, answer lost, the resend refused by a node without the bytes: the payment stays held and is never failed',
    async () => {
      // Failure would look like (and did, before EffectContext.redelivered): the record `failed` at `broadcast` (TRANSACTION_REJECTED) with the wallet
      // released, and `rest.transaction.failed` / `send.failed` written, for bytes a node had taken before the kill;
      // when they execute, the record moves to `confirmed`, after the partner was told it failed. Expected instead:
      // the refusal proves nothing after a send whose answer was lost (payment.machine.ts), so it stays pending.
      const id = refusedResend.id;
      await sup!.waitFor(
        () => sendsTo(TO.refusedResend, mark).some((s) => s.fault === 'error') && actorOf(id).state !== 'broadcasting',
        'the refused resend judged',
      );
      const judged = recordsOf(w.refusedResend.id)[0]!;
      // The first node's copy reaches the chain (the service's own later sends may have brought it already).
      await rpc(anvil!.rpcUrl, 'eth_sendRawTransaction', [refusedResend.signed_transaction]).catch(() => undefined);
      const seen = await follow(id, (s) => s === 'confirmed');
      assert.equal(await balanceOf(TO.refusedResend), 8888n, 'the bytes the first node took executed, once');
      assert.equal(await nonceOf(w.refusedResend.address), 1);
      assert.deepEqual(
        failedEventsOf(refusedResend).map((e) => e.type),
        [],
        `told failed for a payment that executed (after the refused resend: ${judged.status} ${judged.failure_code ?? ''}, unresolved ${judged.unresolved}; then ${seen.join(' → ')})`,
      );
      assert.equal(judged.unresolved, 1, 'the wallet stayed held');
    },
  );
});

// --- SIGTERM while a payment is being signed -------------------------------------------------------------------
//
// What a graceful stop does (api/main.ts, api/server.ts `close()`): first both listeners close (Fastify's
// `app.close()`: the port stops accepting; connections without a request under way are closed, and the others once
// answered (httpLimitsPlugin and the connection guard); a request arriving on a connection still open, behind one
// under way, is answered 503 SERVICE_UNAVAILABLE; the requests under way are awaited); then the chain pollers stop;
// then the actor host stops, which first drains: at-most-once effects under way (a signature) finish and their
// outcome is committed, within `stopDrainMs` (10 s), and nothing new is dispatched (the broadcast their step asks for
// is stored and runs at the next start). So a new request during the stop finds the port closed: ECONNREFUSED, or
// ECONNRESET for a connection the kernel had queued as the port closed. SERVICE_STOPPING is the host's answer to work
// reaching it once its stop began, which no partner request can do by then, the listeners being closed first.

/** Polls new connections until one is refused; answers what the last one got. */
async function untilRefused(timeoutMs: number): Promise<number | string> {
  const until = Date.now() + timeoutMs;
  let got: number | string = 'none';
  while (Date.now() < until) {
    got = await freshGet('/healthz');
    if (typeof got === 'string') return got;
    await new Promise((r) => setTimeout(r, 20));
  }
  return got;
}

test('SIGTERM while a payment is being signed, the partner waiting: new connections are refused, the request is answered, the payment confirms', async () => {
  // Failure would look like: the waiting request cut off or answered 503 with the payment then failed
  // SIGNING_INTERRUPTED after the restart (the signature made during the stop lost), a port still accepting during the
  // stop, the payment sent twice, or the API still running past the supervisor's grace (it did: the connection that
  // carried the answer, kept alive by the client, held the close for HTTP_KEEP_ALIVE_TIMEOUT_MS, and a pooled
  // connection that never sent a request held it for HTTP_IDLE_TIMEOUT_MS; the supervisor would SIGKILL it first).
  const to = '0x00000000000000000000000000000000000c0005';
  const w = await newWallet();
  const mark = proxy!.calls.length;
  const enclave = childPid(sup!, 'enclave');
  enclaves.pause(enclave);
  let api: ReturnType<typeof signalApi>;
  let answer: Answer;
  try {
    const pending = transfer(w.id, to, '6666');
    await waitForStage(w.id, 'signing', 'sign');
    api = signalApi('SIGTERM');
    const sentAt = Date.now();
    assert.match(
      String(await untilRefused(5_000)),
      /^ECONN(REFUSED|RESET)$/,
      'a new connection during the stop is refused',
    );
    assert.ok(alive(api.pid), 'while the API is still stopping');
    assert.equal(actorOf(recordsOf(w.id)[0]!.id).state, 'signing', 'and the signature is still being made');
    // The enclave was slow, not gone: it answers a second (at least) into the stop.
    await new Promise((r) => setTimeout(r, Math.max(0, 1_000 - (Date.now() - sentAt))));
    enclaves.resume(enclave);
    answer = await pending;
  } finally {
    enclaves.resume(enclave);
  }
  assert.ok('status' in answer && answer.status === 200, JSON.stringify(answer));
  assert.equal(answer.body.status, 'submitted');
  await api.exited();
  await api.restarted();

  const seen = await follow(answer.body.transactionId, (s) => s === 'confirmed');
  assert.ok(!seen.includes('failed'), seen.join(' → '));
  const [rec] = recordsOf(w.id);
  assert.equal(rec!.signed_transaction, answer.body.signedTransaction);
  assert.equal(rec!.hash, answer.body.txHash);
  assert.ok(sendsTo(to, mark).every((s) => s.raw === answer.body.signedTransaction));
  assert.equal(await nonceOf(w.address), 1);
  assert.equal(await balanceOf(to), 6666n, 'paid once');
});

test('SIGTERM while a payment is being signed, the partner gone: the host drains, the signature reaches the record, sent after the restart', async () => {
  // With nobody waiting on the listener, only the host's drain stands between the signature and its loss.
  // Failure would look like: the record failed SIGNING_INTERRUPTED after the restart (the stop did not wait for the
  // signature, or did not commit it), the stored bytes sent during the stop (a dispatch while draining), or other
  // bytes sent after the restart (signed again).
  const to = '0x00000000000000000000000000000000000c0006';
  const w = await newWallet();
  const mark = proxy!.calls.length;
  const enclave = childPid(sup!, 'enclave');
  enclaves.pause(enclave);
  let api: ReturnType<typeof signalApi>;
  try {
    const gone = new AbortController();
    const pending = transfer(w.id, to, '7777', gone.signal);
    await waitForStage(w.id, 'signing', 'sign');
    gone.abort();
    assert.ok('error' in (await pending));
    api = signalApi('SIGTERM');
    const sentAt = Date.now();
    assert.match(
      String(await untilRefused(5_000)),
      /^ECONN(REFUSED|RESET)$/,
      'a new connection during the drain is refused',
    );
    assert.ok(alive(api.pid), 'while the API is still draining');
    await new Promise((r) => setTimeout(r, Math.max(0, 1_000 - (Date.now() - sentAt))));
    enclaves.resume(enclave);
    await api.exited();
  } finally {
    enclaves.resume(enclave);
  }
  // Read before the restart: the signature is committed with the state that broadcasts it, and nothing was sent.
  const [drained] = recordsOf(w.id);
  assert.equal(drained!.status, 'pending');
  assert.ok(drained!.signed_transaction, 'the signature made during the drain reached the record');
  assert.equal(drained!.hash, keccak256(drained!.signed_transaction as `0x${string}`));
  assert.deepEqual(actorOf(drained!.id), { state: 'broadcasting', done: 0, effects: ['broadcast'] });
  assert.deepEqual(sendsTo(to, mark), [], 'nothing dispatched while draining');

  await api.restarted();
  const seen = await follow(drained!.id, (s) => s === 'confirmed');
  assert.ok(!seen.includes('failed'), seen.join(' → '));
  const sends = sendsTo(to, mark);
  assert.ok(sends.length > 0 && sends.every((s) => s.raw === drained!.signed_transaction), 'the stored bytes, only');
  assert.equal(recordsOf(w.id)[0]!.hash, drained!.hash);
  assert.equal(await nonceOf(w.address), 1);
  assert.equal(await balanceOf(to), 7777n, 'paid once');
});
