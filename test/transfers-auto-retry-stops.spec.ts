/**
 * Auto-retry EVM transfers end to end, the rows of the spec's "Auto-retry `state`" table that are about waiting and
 * stopping: a base fee over the ceiling (active, no bump, held, then replaced once it falls back), a claim of the
 * wallet while the retry is active (stopped before the next replacement, or its signature refused; the original
 * still confirms), and a first signature refused (claimed while admitted, or the enclave down) or a first send
 * refused (the transaction `failed`, the retry `stopped`, the wallet released). The appliance (real enclave process,
 * real SQLite) talks to anvil through a fault proxy, which holds a chosen node call while the test claims the wallet
 * or drains it: the change lands at the moment the test names, not by luck. Outcomes are checked on the chain: what
 * executed, how often, and that nothing did. (A stopped payment whose nonce a foreign transaction took, resolved with
 * RECOVERY_NONCE_CONSUMED, is in transfers-auto-retry.spec.ts.)
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import Database from 'better-sqlite3';
import { type Anvil, startAnvil } from '../fixtures/anvil.ts';
import { rpc, setAutomine, setBalance } from '../fixtures/evm-helpers.ts';
import { type RpcCall, type RpcFaultProxy, startRpcFaultProxy } from '../fixtures/rpc-fault-proxy.ts';
import { anvilView, recordReader, sleep } from './helpers/records.ts';
import { type Partner, startTestService, stopProcess, type TestService, tempDataDir } from './helpers/service.ts';

const REPLACEMENT_DELAY_MS = 150;
const GWEI = 10n ** 9n;
let anvil: Anvil;
let proxy: RpcFaultProxy;
let svc: TestService;
let partner: Partner;
let chainsDir: string;

before(async () => {
  anvil = await startAnvil({ slotsInAnEpoch: 1 });
  proxy = await startRpcFaultProxy(anvil.rpcUrl);
  chainsDir = tempDataDir('wcs-chains-');
  const chainsFile = path.join(chainsDir, 'chains.json');
  fs.writeFileSync(chainsFile, JSON.stringify({ evm: [{ chainId: 31337, rpcUrl: proxy.url, environment: 'any' }] }));
  svc = await startTestService({
    CHAINS_FILE: chainsFile,
    CHAIN_POLL_INTERVAL_MS: '100',
    EVM_REPLACEMENT_DELAY_MS: String(REPLACEMENT_DELAY_MS),
  });
  partner = await svc.newPartner();
});

after(async () => {
  await svc?.stop();
  await proxy?.close();
  await anvil?.stop();
  fs.rmSync(chainsDir, { recursive: true, force: true });
});

let count = 0;
async function newWallet(fundWei = 10n ** 18n): Promise<{ id: string; address: string }> {
  const r = await svc.v1(partner.secret, 'POST', '/wallets', {
    type: 'EVM',
    userIdentifier: `auto-retry-stops-${count++}`,
    userIdentifierType: 'CUSTOM_ID',
  });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  if (fundWei > 0n) await setBalance(anvil.rpcUrl, r.body.address, fundWei);
  return { id: r.body.id, address: r.body.address };
}

const inMinutes = (m: number) => new Date(Date.now() + m * 60_000).toISOString();
const terms = (maxExecutionFeeWei = '1000000000000000') => ({ maxExecutionFeeWei, expiresAt: inMinutes(10) });
let keys = 0;
function send(walletId: string, body: Record<string, unknown>, key: string | null = `stops-${keys++}`) {
  return svc.v1(
    partner.secret,
    'POST',
    `/wallets/${walletId}/transfer`,
    { chainId: '31337', value: '1000', ...body },
    key === null ? {} : { 'idempotency-key': key },
  );
}

const { record, until } = recordReader(
  () => svc,
  () => partner.secret,
);
const { balance, nonceOf, withMiningHeld, mineUntilFinal } = anvilView(() => anvil.rpcUrl, { record });

/** Sets the base fee of the next block anvil mines (what a transaction sent now must at least offer per gas). */
async function setNextBaseFee(wei: bigint): Promise<void> {
  await rpc(anvil.rpcUrl, 'anvil_setNextBlockBaseFeePerGas', [`0x${wei.toString(16)}`]);
}

/**
 * Holds the next node call `matches` accepts (with the rest of its batch) until `release()`; `reached` resolves
 * once the service has made it. What the test does in between happens while the service waits for the node.
 */
function holdNext(method: string, matches: (call: RpcCall) => boolean) {
  let release!: () => void;
  const released = new Promise<void>((r) => {
    release = r;
  });
  const since = proxy.calls.length;
  const remove = proxy.add({ method, when: matches, fault: { kind: 'hold', until: released }, times: 1 });
  const reached = (async () => {
    const end = Date.now() + 15_000;
    while (!proxy.calls.slice(since).some((c) => c.call.method === method && c.fault === 'hold')) {
      if (Date.now() > end) throw new Error(`the service never called ${method}`);
      await sleep(10);
    }
  })();
  return {
    reached,
    release() {
      remove();
      release();
    },
  };
}

const isOf = (address: string) => (call: RpcCall) =>
  typeof call.params?.[0] === 'string' && call.params[0].toLowerCase() === address.toLowerCase();

/** The wallet's holds, as the operator reads them in the service database (one row per wallet and chain held). */
function holdsOf(walletId: string): Array<{ transactionId: string }> {
  const db = new Database(path.join(svc.dataDir, 'service.db'), { readonly: true });
  try {
    return db.prepare('select holder_id as transactionId from holds where wallet_id = ?').all(walletId) as Array<{
      transactionId: string;
    }>;
  } finally {
    db.close();
  }
}

const claim = (walletId: string) => svc.admin('POST', `/wallets/${walletId}/claim`, {});

test('base fee plus tip over the ceiling: active, no bump, the wallet held; replaced once the base fee falls back', async () => {
  const w = await newWallet();
  const to = '0x00000000000000000000000000000000000A7801';
  // Explicit first fees (kept as given): a 10 gwei cap and tip. The ceiling allows 20 gwei per gas, so the least
  // replacement (+12.5%: cap and tip 11.25 gwei) fits it, but not on top of a 10 gwei base fee (21.25 > 20).
  const fees = {
    type: 2,
    gasLimit: '21000',
    maxFeePerGas: String(10n * GWEI),
    maxPriorityFeePerGas: String(10n * GWEI),
  };
  const perGasCeiling = 20n * GWEI;
  await withMiningHeld(async () => {
    await setNextBaseFee(10n * GWEI);
    // The service's fee quote is shared for up to a second: let any quote from before the change expire.
    await sleep(1_100);
    const r = await send(w.id, { to, ...fees, autoRetry: terms(String(21_000n * perGasCeiling)) });
    assert.equal(r.status, 202, JSON.stringify(r.body));
    const id = r.body.transactionId;
    const waiting = await until(w.id, id, (x) => x.autoRetry.reason === 'BASE_FEE_ABOVE_CEILING');
    assert.equal(waiting.autoRetry.state, 'active');
    assert.equal(waiting.autoRetry.bumpCount, 0);
    assert.equal(waiting.status, 'submitted');
    // It looks again by itself, still without a bump, and keeps the wallet and chain.
    const looked = proxy.calls.filter((c) => c.call.method === 'eth_getBalance' && isOf(w.address)(c.call)).length;
    for (let i = 0; i < 100; i++) {
      const now = proxy.calls.filter((c) => c.call.method === 'eth_getBalance' && isOf(w.address)(c.call)).length;
      if (now >= looked + 2) break;
      await sleep(50);
    }
    const still = await record(w.id, id);
    assert.equal(still.autoRetry.state, 'active');
    assert.equal(still.autoRetry.reason, 'BASE_FEE_ABOVE_CEILING');
    assert.equal(still.autoRetry.bumpCount, 0);
    assert.equal(still.autoRetry.attempts.length, 1, JSON.stringify(still.autoRetry.attempts));
    assert.ok(
      proxy.calls.filter((c) => c.call.method === 'eth_getBalance' && isOf(w.address)(c.call)).length >= looked + 2,
      'the retry looked at the market again',
    );
    const busy = await send(w.id, { to, autoRetry: terms() });
    assert.equal(busy.status, 409, JSON.stringify(busy.body));
    assert.equal(busy.body.code, 'WALLET_TRANSACTION_UNRESOLVED');
    assert.equal(busy.body.blockingTransactionId, id);
    assert.equal(await nonceOf(w.address), 0);

    // The base fee falls back to 1 gwei: the next look replaces the attempt.
    await setNextBaseFee(GWEI);
    const fellAt = Date.now();
    // Mined once the node holds a replacement (it took the original's place in the pool).
    const replaced = await until(w.id, id, (x) => x.autoRetry.attempts[1]?.stage === 'submitted');
    assert.ok(replaced.autoRetry.bumpCount >= 1);
    assert.notEqual(replaced.autoRetry.reason, 'BASE_FEE_ABOVE_CEILING');
    const first = replaced.autoRetry.attempts[1] as { preparedAt: string };
    assert.ok(Date.parse(first.preparedAt) >= fellAt, 'prepared after the base fee fell');
    await setAutomine(anvil.rpcUrl, true);
    const final = await mineUntilFinal(w.id, id);
    assert.equal(final.status, 'confirmed');
    assert.equal(final.autoRetry.state, 'resolved');
    const hashes = (final.autoRetry.attempts as Array<{ hash: string | null }>).map((a) => a.hash);
    assert.ok(hashes.indexOf(final.monitoring?.winningHash) >= 1, 'a replacement executed');
    // What executed pays at least the least increase over the first fees, and stays within the ceiling.
    const executed = await rpc<{ maxFeePerGas: string; maxPriorityFeePerGas: string; nonce: string }>(
      anvil.rpcUrl,
      'eth_getTransactionByHash',
      [final.monitoring.winningHash],
    );
    assert.equal(Number(executed.nonce), 0, 'the same nonce');
    assert.ok(BigInt(executed.maxPriorityFeePerGas) >= (10n * GWEI * 9n) / 8n, `tip ${executed.maxPriorityFeePerGas}`);
    assert.ok(BigInt(executed.maxFeePerGas) >= (10n * GWEI * 9n) / 8n, `cap ${executed.maxFeePerGas}`);
    assert.ok(BigInt(executed.maxFeePerGas) <= perGasCeiling, `cap ${executed.maxFeePerGas} within the ceiling`);
    assert.equal(await nonceOf(w.address), 1, 'one transaction from the wallet');
    assert.equal(await balance(to), 1000n, 'paid once');
  });
});

test('the wallet claimed while the retry waits: stopped SIGNING_AUTHORITY_ENDED, no replacement; the original still confirms', async () => {
  const to = '0x00000000000000000000000000000000000A7802';
  const probe = await newWallet();
  const estimate = await svc.v1(partner.secret, 'POST', `/wallets/${probe.id}/estimate-fee`, {
    to,
    value: '1000',
    chainId: '31337',
  });
  assert.equal(estimate.status, 200, JSON.stringify(estimate.body));
  // Funds for the first attempt only: the retry waits (INSUFFICIENT_FUNDS_FOR_REPLACEMENT) and looks again each time.
  const w = await newWallet(BigInt(estimate.body.maxFee) + 1000n + 10n);
  await withMiningHeld(async () => {
    const r = await send(w.id, { to, autoRetry: terms() });
    assert.equal(r.status, 202, JSON.stringify(r.body));
    const id = r.body.transactionId;
    await until(w.id, id, (x) => x.autoRetry.reason === 'INSUFFICIENT_FUNDS_FOR_REPLACEMENT');
    const claimed = await claim(w.id);
    assert.equal(claimed.status, 200, JSON.stringify(claimed.body));
    const stopped = await until(w.id, id, (x) => x.autoRetry.state === 'stopped');
    assert.equal(stopped.autoRetry.reason, 'SIGNING_AUTHORITY_ENDED');
    assert.equal(stopped.autoRetry.bumpCount, 0);
    assert.equal(stopped.status, 'submitted', 'still watched');
    // Several replacement delays later: nothing new was prepared, and the wallet is refused to REST signing.
    await sleep(REPLACEMENT_DELAY_MS * 4);
    const later = await record(w.id, id);
    assert.equal(later.autoRetry.state, 'stopped');
    assert.equal(later.autoRetry.attempts.length, 1, JSON.stringify(later.autoRetry.attempts));
    const refused = await send(w.id, { to, value: '5' }, null);
    assert.equal(refused.status, 403, JSON.stringify(refused.body));
    assert.equal(refused.body.code, 'WALLET_CLAIMED');
    assert.deepEqual(holdsOf(w.id), [{ transactionId: id }], 'the payment still holds the wallet');

    await setAutomine(anvil.rpcUrl, true);
    const final = await mineUntilFinal(w.id, id);
    assert.equal(final.status, 'confirmed');
    assert.equal(final.hash, later.autoRetry.attempts[0].hash);
    assert.equal(final.monitoring?.winningHash, undefined, 'the original won');
    assert.equal(final.autoRetry.state, 'resolved');
    assert.equal(await balance(to), 1000n);
    assert.deepEqual(holdsOf(w.id), [], 'released once the chain settled it');
  });
});

test('the wallet claimed while a replacement is prepared: its signature is refused, the retry stopped; the original keeps the hold and confirms', async () => {
  const w = await newWallet();
  const to = '0x00000000000000000000000000000000000A7803';
  await withMiningHeld(async () => {
    // The first replacement's market read (the wallet's balance) waits at the node while the claim commits.
    const held = holdNext('eth_getBalance', isOf(w.address));
    try {
      const r = await send(w.id, { to, autoRetry: terms() });
      assert.equal(r.status, 202, JSON.stringify(r.body));
      const id = r.body.transactionId;
      await held.reached;
      const claimed = await claim(w.id);
      assert.equal(claimed.status, 200, JSON.stringify(claimed.body));
      held.release();
      const stopped = await until(w.id, id, (x) => x.autoRetry.state === 'stopped');
      assert.equal(stopped.autoRetry.reason, 'SIGNING_AUTHORITY_ENDED');
      const attempts = stopped.autoRetry.attempts as Array<{ ordinal: number; stage: string; hash: string | null }>;
      assert.equal(attempts.length, 2, JSON.stringify(attempts));
      assert.deepEqual(
        attempts.map((a) => [a.ordinal, a.stage]),
        [
          [0, 'submitted'],
          [1, 'rejected'],
        ],
      );
      assert.equal(attempts[1]!.hash, null, 'no signature exists for the refused replacement');
      assert.equal(stopped.autoRetry.latestAttemptHash, attempts[0]!.hash);
      // A refused replacement does not release the original payment: it may still execute.
      assert.equal(stopped.status, 'submitted');
      assert.deepEqual(holdsOf(w.id), [{ transactionId: id }]);
      assert.equal(await nonceOf(w.address, 'pending'), 1, 'only the original is in the pool');

      await setAutomine(anvil.rpcUrl, true);
      const final = await mineUntilFinal(w.id, id);
      assert.equal(final.status, 'confirmed');
      assert.equal(final.monitoring?.winningHash, undefined, 'the original won');
      assert.equal(final.autoRetry.state, 'resolved');
      assert.equal(await nonceOf(w.address), 1);
      assert.equal(await balance(to), 1000n);
      assert.deepEqual(holdsOf(w.id), []);
    } finally {
      held.release();
    }
  });
});

test('the wallet claimed while the transfer is admitted: the first signature is refused; failed at mpc_sign, the wallet released, nothing sent', async () => {
  const w = await newWallet();
  const to = '0x00000000000000000000000000000000000A7804';
  // The admission's nonce read waits at the node while the claim commits; the admission then carries on.
  const held = holdNext('eth_getTransactionCount', (c) => isOf(w.address)(c) && c.params?.[1] === 'pending');
  try {
    const answer = send(w.id, { to, autoRetry: terms() });
    await held.reached;
    const claimed = await claim(w.id);
    assert.equal(claimed.status, 200, JSON.stringify(claimed.body));
    held.release();
    const r = await answer;
    assert.equal(r.status, 202, JSON.stringify(r.body));
    const id = r.body.transactionId;
    const failed = await until(w.id, id, (x) => x.status === 'failed');
    assert.equal(failed.failureStage, 'mpc_sign');
    assert.equal(failed.failureCode, 'WALLET_CLAIMED');
    assert.equal(failed.hash, null);
    assert.notEqual(failed.autoRetry.state, 'active', JSON.stringify(failed.autoRetry));
    assert.equal(failed.autoRetry.state, 'stopped');
    assert.equal(failed.autoRetry.reason, 'SIGNING_AUTHORITY_ENDED');
    assert.deepEqual(
      (failed.autoRetry.attempts as Array<{ stage: string; hash: string | null }>).map((a) => [a.stage, a.hash]),
      [['rejected', null]],
    );
    // Released: the operator finds no hold to release.
    const release = await svc.admin('POST', `/wallets/${w.id}/release-hold`, {
      chainKey: 'evm:31337',
      reason: 'checking that the failed payment let go',
      releasedBy: 'test',
    });
    assert.equal(release.status, 404, JSON.stringify(release.body));
    assert.equal(release.body.code, 'HOLD_NOT_FOUND');
    assert.equal(await nonceOf(w.address, 'pending'), 0, 'nothing reached the node');
    assert.equal(await balance(to), 0n);
  } finally {
    held.release();
  }
});

test('the first send refused (funds gone): failed at broadcast, the retry stopped, the wallet released', async () => {
  const w = await newWallet();
  const to = '0x00000000000000000000000000000000000A7806';
  // The first send waits at the node while the wallet's funds go; the node then refuses it for good.
  const held = holdNext('eth_sendRawTransaction', () => true);
  try {
    const r = await send(w.id, { to, autoRetry: terms() });
    assert.equal(r.status, 202, JSON.stringify(r.body));
    const id = r.body.transactionId;
    await held.reached;
    await setBalance(anvil.rpcUrl, w.address, 0n);
    held.release();
    const failed = await until(w.id, id, (x) => x.status === 'failed');
    assert.equal(failed.failureStage, 'broadcast');
    assert.equal(failed.failureCode, 'INSUFFICIENT_NATIVE_BALANCE');
    assert.equal(failed.autoRetry.state, 'stopped', JSON.stringify(failed.autoRetry));
    assert.equal(failed.autoRetry.reason, 'INSUFFICIENT_NATIVE_BALANCE', 'the refusal says why');
    assert.equal(failed.autoRetry.bumpCount, 0);
    await sleep(REPLACEMENT_DELAY_MS * 3);
    assert.equal((await record(w.id, id)).autoRetry.attempts.length, 1, 'no replacement follows');
    // Released: the wallet, funded again, pays again.
    await setBalance(anvil.rpcUrl, w.address, 10n ** 18n);
    const next = await send(w.id, { to, value: '5' }, null);
    assert.equal(next.status, 200, JSON.stringify(next.body));
    await mineUntilFinal(w.id, next.body.transactionId);
    assert.equal(await balance(to), 5n);
  } finally {
    held.release();
  }
});

test('the enclave down at the first signature: failed at mpc_sign, the retry stopped, and the wallet pays again', async () => {
  const w = await newWallet();
  const to = '0x00000000000000000000000000000000000A7805';
  await stopProcess(svc.enclave, 'SIGKILL');
  let id: string;
  try {
    const r = await send(w.id, { to, autoRetry: terms() });
    assert.equal(r.status, 202, JSON.stringify(r.body));
    id = r.body.transactionId;
    const failed = await until(w.id, id, (x) => x.status === 'failed');
    assert.equal(failed.failureStage, 'mpc_sign');
    assert.equal(failed.failureCode, 'ENCLAVE_UNAVAILABLE');
    assert.equal(failed.autoRetry.state, 'stopped', JSON.stringify(failed.autoRetry));
    assert.equal(failed.autoRetry.reason, 'SIGNING_FAILED');
    assert.equal(failed.autoRetry.attempts[0].stage, 'rejected');
  } finally {
    await svc.restartEnclave();
    await svc.waitReady();
  }
  // The wallet was released: the next transfer is admitted, with the nonce the failed one never used.
  const next = await send(w.id, { to, value: '5', autoRetry: terms() });
  assert.equal(next.status, 202, JSON.stringify(next.body));
  assert.equal(next.body.autoRetry.nonce, 0);
  const final = await mineUntilFinal(w.id, next.body.transactionId);
  assert.equal(final.status, 'confirmed');
  assert.equal(await nonceOf(w.address), 1);
  assert.equal(await balance(to), 5n, 'only the second transfer executed');
  assert.equal((await record(w.id, id)).status, 'failed');
});
