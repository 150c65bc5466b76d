/**
 * Auto-retry EVM transfers end to end: the appliance (real enclave process, real SQLite) on anvil with mining held
 * back, so that attempts wait in the pool and are replaced. Every outcome is checked on the chain: the wallet's nonce
 * moves once, the recipient is paid once, and the transaction that executed is the one the record names.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import Database from 'better-sqlite3';
import { keccak256 } from 'viem';
import { type Anvil, startAnvil } from '../fixtures/anvil.ts';
import { dropTransaction, mine, rpc, setAutomine, setBalance } from '../fixtures/evm-helpers.ts';
import { anvilView, recordReader } from './helpers/records.ts';
import { type Partner, startTestService, type TestService, tempDataDir } from './helpers/service.ts';

const REPLACEMENT_DELAY_MS = 150;
let anvil: Anvil;
let svc: TestService;
let partner: Partner;
let chainsDir: string;

before(async () => {
  anvil = await startAnvil({ slotsInAnEpoch: 1 });
  chainsDir = tempDataDir('wcs-chains-');
  const chainsFile = path.join(chainsDir, 'chains.json');
  fs.writeFileSync(chainsFile, JSON.stringify({ evm: [{ chainId: 31337, rpcUrl: anvil.rpcUrl, environment: 'any' }] }));
  svc = await startTestService({
    CHAINS_FILE: chainsFile,
    CHAIN_POLL_INTERVAL_MS: '100',
    EVM_REPLACEMENT_DELAY_MS: String(REPLACEMENT_DELAY_MS),
  });
  partner = await svc.newPartner();
});

after(async () => {
  await svc?.stop();
  await anvil?.stop();
  fs.rmSync(chainsDir, { recursive: true, force: true });
});

let count = 0;
async function newWallet(fundWei = 10n ** 18n, type = 'EVM'): Promise<{ id: string; address: string }> {
  const r = await svc.v1(partner.secret, 'POST', '/wallets', {
    type,
    userIdentifier: `auto-retry-${count++}`,
    userIdentifierType: 'CUSTOM_ID',
  });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  if (type === 'EVM' && fundWei > 0n) await setBalance(anvil.rpcUrl, r.body.address, fundWei);
  return { id: r.body.id, address: r.body.address };
}

/** The fee preview of a 1000-wei transfer: what its first attempt may cost (`maxFee`) and its fees. */
async function estimateFor(walletId: string, to: string) {
  const r = await svc.v1(partner.secret, 'POST', `/wallets/${walletId}/estimate-fee`, {
    to,
    value: '1000',
    chainId: '31337',
  });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r;
}

/** How old the service's fee quote may be (evm-chain.ts `feeDataMaxAgeMs`, default). */
const FEE_QUOTE_MAX_AGE_MS = 1_000;
const inMinutes = (m: number) => new Date(Date.now() + m * 60_000).toISOString();
let keys = 0;
function send(walletId: string, body: Record<string, unknown>, key: string | null = `ar-${keys++}`) {
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

test('admission: 202 with the record, Location and x-transaction-id; a replay answers the same operation', async () => {
  const w = await newWallet();
  const body = {
    to: '0x00000000000000000000000000000000000A7701',
    autoRetry: { maxExecutionFeeWei: '1000000000000000', expiresAt: inMinutes(10) },
  };
  const r = await send(w.id, body, 'admit-1');
  assert.equal(r.status, 202, JSON.stringify(r.body));
  const id = r.body.transactionId;
  assert.equal(r.headers.get('x-transaction-id'), id);
  assert.equal(r.headers.get('location'), `/v1/wallets/${w.id}/transactions/${id}`);
  assert.equal(r.body.autoRetry.state, 'active');
  assert.equal(r.body.autoRetry.maxExecutionFeeWei, '1000000000000000');
  assert.equal(r.body.autoRetry.nonce, 0);
  assert.equal(r.body.autoRetry.bumpCount, 0);
  assert.equal(r.body.signedTransaction, undefined, 'no signed bytes in the answer');
  const again = await send(w.id, body, 'admit-1');
  assert.equal(again.status, 202);
  assert.equal(again.body.transactionId, id);
  assert.equal(again.headers.get('idempotent-replayed'), 'true');
  const final = await mineUntilFinal(w.id, id);
  assert.equal(final.status, 'confirmed');
  assert.equal(final.autoRetry.state, 'resolved');
  // Replayed after the end: the same operation, in its current state; nothing new is sent.
  const late = await send(w.id, body, 'admit-1');
  assert.equal(late.status, 202);
  assert.equal(late.body.status, 'confirmed');
  assert.equal(await nonceOf(w.address), 1);
});

test('admission refusals name what is wrong, and leave nothing behind', async () => {
  const w = await newWallet();
  const to = '0x00000000000000000000000000000000000A7702';
  const terms = { maxExecutionFeeWei: '1000000000000000', expiresAt: inMinutes(10) };
  const cases: Array<[Record<string, unknown>, string | null, number, string, string]> = [
    [{ to, autoRetry: terms }, null, 400, 'INVALID_REQUEST', 'headers.idempotency-key'],
    [{ to, autoRetry: terms, broadcast: false }, 'k-b', 400, 'INVALID_REQUEST', 'body.broadcast'],
    [
      { to, autoRetry: { ...terms, expiresAt: inMinutes(25 * 60) } },
      'k-x',
      400,
      'INVALID_REQUEST',
      'body.autoRetry.expiresAt',
    ],
    [
      { to, autoRetry: { ...terms, expiresAt: inMinutes(-1) } },
      'k-p',
      400,
      'INVALID_REQUEST',
      'body.autoRetry.expiresAt',
    ],
    [
      { to, autoRetry: { ...terms, maxExecutionFeeWei: '0' } },
      'k-z',
      400,
      'INVALID_REQUEST',
      'body.autoRetry.maxExecutionFeeWei',
    ],
    [
      { to, autoRetry: { ...terms, maxExecutionFeeWei: '1.5' } },
      'k-f',
      400,
      'INVALID_REQUEST',
      'body.autoRetry.maxExecutionFeeWei',
    ],
    [
      { to, autoRetry: { ...terms, maxExecutionFeeLamports: '5' } },
      'k-l',
      400,
      'INVALID_REQUEST',
      'body.autoRetry.maxExecutionFeeLamports',
    ],
    // The first attempt alone costs more than 21000 wei.
    [
      { to, autoRetry: { ...terms, maxExecutionFeeWei: '21000' } },
      'k-c',
      400,
      'INVALID_REQUEST',
      'body.autoRetry.maxExecutionFeeWei',
    ],
  ];
  for (const [body, key, status, code, field] of cases) {
    const r = await send(w.id, body, key);
    assert.equal(r.status, status, `${field}: ${JSON.stringify(r.body)}`);
    assert.equal(r.body.code, code);
    assert.equal(r.body.field, field, JSON.stringify(r.body));
  }
  const solana = await newWallet(0n, 'SOLANA');
  const s = await send(
    solana.id,
    { to: '11111111111111111111111111111111', chainId: undefined, autoRetry: terms },
    'k-s',
  );
  // A Solana wallet's ceiling is in lamports: the EVM field is refused by name.
  assert.equal(s.status, 400);
  assert.equal(s.body.code, 'INVALID_REQUEST');
  assert.equal(s.body.field, 'body.autoRetry.maxExecutionFeeWei');
  assert.equal((await svc.v1(partner.secret, 'GET', `/wallets/${w.id}/transactions`)).body.data.length, 0);
});

test('held back by the chain: replaced three times (+12.5% each), then stopped; the latest attempt lands once', async () => {
  const w = await newWallet();
  const to = '0x00000000000000000000000000000000000A7703';
  const estimate = await estimateFor(w.id, to);
  await withMiningHeld(async () => {
    const r = await send(w.id, { to, autoRetry: { maxExecutionFeeWei: '1000000000000000', expiresAt: inMinutes(10) } });
    assert.equal(r.status, 202, JSON.stringify(r.body));
    const id = r.body.transactionId;
    const stopped = await until(w.id, id, (x) => x.autoRetry.state === 'stopped');
    assert.equal(stopped.autoRetry.reason, 'ATTEMPT_LIMIT_REACHED');
    assert.equal(stopped.autoRetry.bumpCount, 3);
    assert.equal(stopped.status, 'submitted');
    const attempts = stopped.autoRetry.attempts as Array<{ ordinal: number; stage: string; hash: string }>;
    assert.deepEqual(
      attempts.map((a) => a.ordinal),
      [0, 1, 2, 3],
    );
    assert.ok(
      attempts.every((a) => a.stage === 'submitted' && a.hash),
      JSON.stringify(attempts),
    );
    assert.equal(stopped.hash, attempts[0]!.hash, "the record's hash stays the original's");
    assert.equal(stopped.autoRetry.latestAttemptHash, attempts[3]!.hash);
    // What the poller would send again while the node does not show it: the latest attempt, not the replaced original.
    const db = new Database(path.join(svc.dataDir, 'service.db'), { readonly: true });
    const stored = db.prepare('select signed_transaction as s from transactions where id = ?').get(id) as { s: string };
    db.close();
    assert.equal(keccak256(stored.s as `0x${string}`), attempts[3]!.hash);
    // The wallet stays held while the payment may execute.
    const busy = await send(w.id, {
      to,
      autoRetry: { maxExecutionFeeWei: '1000000000000000', expiresAt: inMinutes(10) },
    });
    assert.equal(busy.status, 409);
    assert.equal(busy.body.code, 'WALLET_TRANSACTION_UNRESOLVED');
    await setAutomine(anvil.rpcUrl, true);
    const final = await mineUntilFinal(w.id, id);
    assert.equal(final.status, 'confirmed');
    assert.equal(final.autoRetry.state, 'resolved');
    // What executed is the third replacement: at least 12.5% dearer than the one before, three times over.
    const executed = await rpc<{ maxFeePerGas: string; maxPriorityFeePerGas: string }>(
      anvil.rpcUrl,
      'eth_getTransactionByHash',
      [attempts[3]!.hash],
    );
    let least = BigInt(estimate.body.maxFeePerGas);
    for (let i = 0; i < 3; i++) least += (least + 7n) / 8n;
    assert.ok(BigInt(executed.maxFeePerGas) >= least, `${executed.maxFeePerGas} >= ${least}`);
    const receipt = await rpc<{ transactionHash: string } | null>(anvil.rpcUrl, 'eth_getTransactionReceipt', [
      attempts[3]!.hash,
    ]);
    assert.ok(receipt, 'the latest attempt executed');
    assert.equal(final.monitoring?.winningHash, attempts[3]!.hash);
    assert.equal(await nonceOf(w.address), 1, 'one transaction from the wallet');
    assert.equal(await balance(to), 1000n, 'paid once');
  });
});

test('a ceiling the minimum increase does not fit stops the retry at once; the original still lands', async () => {
  const w = await newWallet();
  const to = '0x00000000000000000000000000000000000A7704';
  const estimate = await estimateFor(w.id, to);
  await withMiningHeld(async () => {
    const r = await send(w.id, {
      to,
      autoRetry: { maxExecutionFeeWei: estimate.body.maxFee, expiresAt: inMinutes(10) },
    });
    assert.equal(r.status, 202, JSON.stringify(r.body));
    const stopped = await until(
      r.body.transactionId ? w.id : w.id,
      r.body.transactionId,
      (x) => x.autoRetry.state === 'stopped',
    );
    assert.equal(stopped.autoRetry.reason, 'FEE_CEILING_REACHED');
    assert.equal(stopped.autoRetry.bumpCount, 0);
    await setAutomine(anvil.rpcUrl, true);
    const final = await mineUntilFinal(w.id, r.body.transactionId);
    assert.equal(final.status, 'confirmed');
    assert.equal(final.monitoring?.winningHash, undefined, 'the original won');
    assert.equal(await balance(to), 1000n);
  });
});

test('funds short for a replacement: the retry stays active without a bump, and the original lands when mined', async () => {
  const to = '0x00000000000000000000000000000000000A7705';
  // The funds are measured against the estimate, so the estimate and the send must price the same base fee: mining
  // is held from before the estimate, and the estimate waits out the fee quote the service may still hold from the
  // blocks the test before mined (at most a second old), which priced the first attempt higher than the send did.
  await withMiningHeld(async () => {
    await new Promise((r) => setTimeout(r, FEE_QUOTE_MAX_AGE_MS + 100));
    const estimate = await estimateFor((await newWallet()).id, to);
    // Enough for the first attempt, not for one 12.5% dearer.
    const w = await newWallet(BigInt(estimate.body.maxFee) + 1000n + 10n);
    const r = await send(w.id, { to, autoRetry: { maxExecutionFeeWei: '1000000000000000', expiresAt: inMinutes(10) } });
    assert.equal(r.status, 202, JSON.stringify(r.body));
    const waiting = await until(
      w.id,
      r.body.transactionId,
      (x) => x.autoRetry.reason === 'INSUFFICIENT_FUNDS_FOR_REPLACEMENT',
    );
    assert.equal(waiting.autoRetry.state, 'active');
    assert.equal(waiting.autoRetry.bumpCount, 0);
    await setAutomine(anvil.rpcUrl, true);
    const final = await mineUntilFinal(w.id, r.body.transactionId);
    assert.equal(final.status, 'confirmed');
    assert.equal(await balance(to), 1000n);
  });
});

test('the deadline stops the retry: no attempt is prepared after it', async () => {
  const to = '0x00000000000000000000000000000000000A7706';
  // Mining held, and the service's fee quote renewed, before the estimate, as above.
  await withMiningHeld(async () => {
    await new Promise((r) => setTimeout(r, FEE_QUOTE_MAX_AGE_MS + 100));
    const estimate = await estimateFor((await newWallet()).id, to);
    // Funds for the first attempt only: the retry waits (no replacement can be paid) until the deadline stops it.
    const w = await newWallet(BigInt(estimate.body.maxFee) + 1000n + 10n);
    const r = await send(w.id, {
      to,
      autoRetry: { maxExecutionFeeWei: '1000000000000000', expiresAt: new Date(Date.now() + 3_000).toISOString() },
    });
    assert.equal(r.status, 202, JSON.stringify(r.body));
    const stopped = await until(w.id, r.body.transactionId, (x) => x.autoRetry.state === 'stopped');
    assert.equal(stopped.autoRetry.reason, 'DEADLINE_REACHED');
    assert.ok(Date.now() >= Date.parse(stopped.autoRetry.expiresAt), 'stopped at the deadline, not before');
    const deadline = Date.parse(stopped.autoRetry.expiresAt);
    for (const a of stopped.autoRetry.attempts as Array<{ preparedAt: string }>) {
      assert.ok(Date.parse(a.preparedAt) <= deadline, 'prepared before the deadline');
    }
    await setAutomine(anvil.rpcUrl, true);
    const final = await mineUntilFinal(w.id, r.body.transactionId);
    assert.equal(final.status, 'confirmed');
    assert.equal(await nonceOf(w.address), 1);
    assert.equal(await balance(to), 1000n);
  });
});

test("the API key's rotation ends the signing authority: the retry stops before the next replacement", async () => {
  const other = await svc.newPartner();
  const created = await svc.v1(other.secret, 'POST', '/wallets', {
    type: 'EVM',
    userIdentifier: 'auto-retry-rotation',
    userIdentifierType: 'CUSTOM_ID',
  });
  assert.equal(created.status, 201);
  const w = created.body as { id: string; address: string };
  await setBalance(anvil.rpcUrl, w.address, 10n ** 18n);
  const to = '0x00000000000000000000000000000000000A7707';
  await withMiningHeld(async () => {
    const r = await svc.v1(
      other.secret,
      'POST',
      `/wallets/${w.id}/transfer`,
      {
        to,
        value: '1000',
        chainId: '31337',
        autoRetry: { maxExecutionFeeWei: '1000000000000000', expiresAt: inMinutes(10) },
      },
      { 'idempotency-key': 'rotation-1' },
    );
    assert.equal(r.status, 202, JSON.stringify(r.body));
    const rotated = await svc.admin('POST', `/api-keys/${other.keyId}/rotate`);
    assert.equal(rotated.status, 200, JSON.stringify(rotated.body));
    const rotatedBy = Date.now();
    const secret = rotated.body.secretKey as string;
    const read = async () =>
      (await svc.v1(secret, 'GET', `/wallets/${w.id}/transactions/${r.body.transactionId}`)).body;
    let stopped = await read();
    for (let i = 0; i < 200 && stopped.autoRetry.state !== 'stopped'; i++) {
      await new Promise((res) => setTimeout(res, 50));
      stopped = await read();
    }
    assert.equal(stopped.autoRetry.state, 'stopped', JSON.stringify(stopped.autoRetry));
    assert.equal(stopped.autoRetry.reason, 'SIGNING_AUTHORITY_ENDED');
    // A replacement may have come due before the rotation; none is prepared after it.
    for (const a of (stopped.autoRetry.attempts as Array<{ ordinal: number; preparedAt: string }>).slice(1)) {
      assert.ok(Date.parse(a.preparedAt) <= rotatedBy, `attempt ${a.ordinal} prepared after the rotation`);
    }
    await setAutomine(anvil.rpcUrl, true);
    for (let i = 0; i < 100 && (await read()).status !== 'confirmed'; i++) {
      await mine(anvil.rpcUrl, 1);
      await new Promise((res) => setTimeout(res, 50));
    }
    assert.equal((await read()).status, 'confirmed', 'the original still lands');
    assert.equal(await balance(to), 1000n);
  });
});

test('a finalized nonce past every attempt, none executed: failed REPLACED, the retry resolved RECOVERY_NONCE_CONSUMED', async () => {
  const w = await newWallet();
  const to = '0x00000000000000000000000000000000000A7708';
  await withMiningHeld(async () => {
    const r = await send(w.id, { to, autoRetry: { maxExecutionFeeWei: '1000000000000000', expiresAt: inMinutes(10) } });
    assert.equal(r.status, 202, JSON.stringify(r.body));
    const stopped = await until(w.id, r.body.transactionId, (x) => x.autoRetry.state === 'stopped');
    const hashes = (stopped.autoRetry.attempts as Array<{ hash: string }>).map((a) => a.hash);
    assert.equal(hashes.length, 4);
    // The network loses every attempt; another transaction of the account takes the nonce.
    for (const h of hashes) await dropTransaction(anvil.rpcUrl, h);
    await rpc(anvil.rpcUrl, 'anvil_impersonateAccount', [w.address]);
    const winner = await rpc<string>(anvil.rpcUrl, 'eth_sendTransaction', [
      { from: w.address, to: '0x00000000000000000000000000000000000A7709', value: '0x7', nonce: '0x0', gas: '0x5208' },
    ]);
    await rpc(anvil.rpcUrl, 'anvil_stopImpersonatingAccount', [w.address]);
    await setAutomine(anvil.rpcUrl, true);
    const final = await mineUntilFinal(w.id, r.body.transactionId);
    assert.equal(final.status, 'failed');
    assert.equal(final.failureCode, 'REPLACED');
    assert.equal(final.monitoring?.reason, 'nonce_consumed');
    assert.equal(final.monitoring?.winningHash, winner);
    assert.equal(final.autoRetry.state, 'resolved');
    assert.equal(final.autoRetry.reason, 'RECOVERY_NONCE_CONSUMED');
    assert.equal(await balance(to), 0n, 'no attempt executed');
    // The hold is released: the wallet pays again.
    const next = await send(w.id, { to, value: '5' }, null);
    assert.equal(next.status, 200, JSON.stringify(next.body));
  });
});

test('manual cancellation of a stopped payment: only the spec payload, with its own record; the winner decides both', async () => {
  const w = await newWallet();
  const to = '0x00000000000000000000000000000000000A770A';
  const estimate = await estimateFor(w.id, to);
  await withMiningHeld(async () => {
    // A ceiling the first replacement cannot fit: stopped at once, the original waiting in the pool.
    const r = await send(w.id, {
      to,
      autoRetry: { maxExecutionFeeWei: estimate.body.maxFee, expiresAt: inMinutes(10) },
    });
    assert.equal(r.status, 202, JSON.stringify(r.body));
    const id = r.body.transactionId;
    const fee = String(BigInt(estimate.body.maxFeePerGas) * 4n);
    const cancellation = {
      to: w.address,
      chainId: 31337,
      nonce: 0,
      value: '0',
      data: '0x',
      gasLimit: '21000',
      type: 2,
      maxFeePerGas: fee,
      maxPriorityFeePerGas: fee,
    };
    const cancel = (transaction: object, key: string | null = 'cancel-1') =>
      svc.v1(
        partner.secret,
        'POST',
        `/wallets/${w.id}/sign-transaction`,
        { broadcast: true, transaction },
        key === null ? {} : { 'idempotency-key': key },
      );
    // Before the stop, and any other payload after it, the hold refuses.
    const early = await cancel(cancellation, 'cancel-early');
    const stopped = await until(w.id, id, (x) => x.autoRetry.state === 'stopped');
    if (early.status !== 409) assert.fail(`a cancellation before the stop was taken: ${JSON.stringify(early.body)}`);
    assert.equal(stopped.autoRetry.reason, 'FEE_CEILING_REACHED');
    const other = await cancel({ ...cancellation, value: '1' }, 'cancel-other');
    assert.equal(other.status, 409);
    assert.equal(other.body.code, 'WALLET_TRANSACTION_UNRESOLVED');
    const keyless = await cancel(cancellation, null);
    assert.equal(keyless.status, 400);
    assert.equal(keyless.body.field, 'headers.idempotency-key');
    const c = await cancel(cancellation);
    assert.equal(c.status, 200, JSON.stringify(c.body));
    assert.notEqual(c.body.transactionId, id, 'the cancellation has its own record');
    // The wallet stays held until a winner is final.
    const busy = await send(w.id, { to, value: '5' }, null);
    assert.equal(busy.status, 409);
    assert.equal(busy.body.blockingTransactionId, id);
    await setAutomine(anvil.rpcUrl, true);
    const original = await mineUntilFinal(w.id, id);
    // The cancellation paid more for the same nonce: anvil's pool kept it, and it won.
    assert.equal(original.status, 'failed');
    assert.equal(original.failureCode, 'CANCELLED');
    assert.equal(original.monitoring?.winningHash, c.body.txHash);
    assert.equal(original.autoRetry.state, 'resolved');
    const cancelled = await mineUntilFinal(w.id, c.body.transactionId);
    assert.equal(cancelled.status, 'confirmed');
    assert.equal(await balance(to), 0n, 'the payment never executed');
    assert.equal(await nonceOf(w.address), 1);
    const free = await send(w.id, { to, value: '5' }, null);
    assert.equal(free.status, 200, JSON.stringify(free.body));
  });
});
