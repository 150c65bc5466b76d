/**
 * `Idempotency-Key` on `/v1` POSTs, end to end: the appliance (real enclave process, real SQLite) against anvil. Every
 * "did it once" is checked on the chain (the wallet's nonce, the recipient's balance) and in the records, not only in
 * the answers.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import Database from 'better-sqlite3';
import { type Anvil, startAnvil } from '../fixtures/anvil.ts';
import { mine, rpc, setAutomine, setBalance } from '../fixtures/evm-helpers.ts';
import { type Partner, startTestService, type TestService, tempDataDir } from './helpers/service.ts';

const RECIPIENT = '0x000000000000000000000000000000000000cafE';
let anvil: Anvil;
let svc: TestService;
let partner: Partner;
let env: Record<string, string>;
let chainsDir: string;

before(async () => {
  anvil = await startAnvil({ slotsInAnEpoch: 1 });
  chainsDir = tempDataDir('wcs-chains-');
  const chainsFile = path.join(chainsDir, 'chains.json');
  fs.writeFileSync(chainsFile, JSON.stringify({ evm: [{ chainId: 31337, rpcUrl: anvil.rpcUrl, environment: 'any' }] }));
  env = { CHAINS_FILE: chainsFile, CHAIN_POLL_INTERVAL_MS: '100' };
  svc = await startTestService(env);
  partner = await svc.newPartner();
});

after(async () => {
  await svc?.stop();
  await anvil?.stop();
  fs.rmSync(chainsDir, { recursive: true, force: true });
});

let walletCount = 0;
async function newWallet(owner: Partner = partner, fund = true): Promise<{ id: string; address: string }> {
  const r = await svc.v1(owner.secret, 'POST', '/wallets', {
    type: 'EVM',
    userIdentifier: `idem-${walletCount++}`,
    userIdentifierType: 'CUSTOM_ID',
  });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  if (fund) await setBalance(anvil.rpcUrl, r.body.address, 10n ** 18n);
  return { id: r.body.id, address: r.body.address };
}

const withKey = (key: string) => ({ 'idempotency-key': key });
const transfer = (walletId: string, body: object, key?: string, owner: Partner = partner) =>
  svc.v1(owner.secret, 'POST', `/wallets/${walletId}/transfer`, body, key === undefined ? {} : withKey(key));

async function records(walletId: string): Promise<Array<{ id: string; status: string }>> {
  const r = await svc.v1(partner.secret, 'GET', `/wallets/${walletId}/transactions`);
  assert.equal(r.status, 200);
  return r.body.data;
}

async function nonceOf(address: string, tag = 'latest'): Promise<number> {
  return Number(await rpc<string>(anvil.rpcUrl, 'eth_getTransactionCount', [address, tag]));
}

async function balance(address: string): Promise<bigint> {
  return BigInt(await rpc<string>(anvil.rpcUrl, 'eth_getBalance', [address, 'latest']));
}

/** The service database, through a second connection (as an operator, or a crash, would leave it). */
function withDb<T>(dataDir: string, fn: (db: Database.Database) => T): T {
  const db = new Database(path.join(dataDir, 'service.db'));
  try {
    db.pragma('busy_timeout = 5000');
    return fn(db);
  } finally {
    db.close();
  }
}

test('a transfer sent again with its key is answered as the first time and paid once', async () => {
  const w = await newWallet();
  const before = await balance(RECIPIENT);
  const body = { to: RECIPIENT, value: '1234', chainId: '31337' };
  const first = await transfer(w.id, body, 'pay-invoice-1');
  assert.equal(first.status, 200, JSON.stringify(first.body));
  assert.equal(first.headers.get('idempotent-replayed'), null);
  // The same body with its fields in another order is the same request.
  const again = await transfer(w.id, { chainId: '31337', value: '1234', to: RECIPIENT }, 'pay-invoice-1');
  assert.equal(again.status, 200);
  assert.equal(again.headers.get('idempotent-replayed'), 'true');
  assert.deepEqual(again.body, first.body);
  assert.equal(again.headers.get('x-transaction-id'), first.body.transactionId);
  await mine(anvil.rpcUrl, 2);
  assert.equal((await records(w.id)).length, 1);
  assert.equal(await nonceOf(w.address), 1);
  assert.equal((await balance(RECIPIENT)) - before, 1234n);
});

test('twenty concurrent duplicates make one payment; every one of them is answered with it', async () => {
  const w = await newWallet();
  const body = { to: RECIPIENT, value: '20', chainId: '31337' };
  const answers = await Promise.all(Array.from({ length: 20 }, () => transfer(w.id, body, 'burst-20')));
  for (const a of answers) assert.equal(a.status, 200, JSON.stringify(a.body));
  const ids = new Set(answers.map((a) => a.body.transactionId));
  assert.equal(ids.size, 1, `one payment, got ${[...ids].join(', ')}`);
  assert.equal(answers.filter((a) => a.headers.get('idempotent-replayed') === 'true').length, 19);
  await mine(anvil.rpcUrl, 2);
  assert.equal((await records(w.id)).length, 1);
  assert.equal(await nonceOf(w.address), 1, 'the chain saw one transaction from the wallet');
});

test('the same key with another body, wallet or route is a 409 IDEMPOTENCY_CONFLICT that does nothing', async () => {
  const w = await newWallet();
  const other = await newWallet();
  const first = await transfer(w.id, { to: RECIPIENT, value: '5', chainId: '31337' }, 'conflicting');
  assert.equal(first.status, 200);
  const body = await transfer(w.id, { to: RECIPIENT, value: '6', chainId: '31337' }, 'conflicting');
  assert.equal(body.status, 409);
  assert.equal(body.body.code, 'IDEMPOTENCY_CONFLICT');
  assert.equal(body.body.differs, 'body');
  const wallet = await transfer(other.id, { to: RECIPIENT, value: '5', chainId: '31337' }, 'conflicting');
  assert.equal(wallet.body.code, 'IDEMPOTENCY_CONFLICT');
  assert.equal(wallet.body.differs, 'walletId');
  const route = await svc.v1(
    partner.secret,
    'POST',
    `/wallets/${w.id}/estimate-fee`,
    { to: RECIPIENT, value: '5', chainId: '31337' },
    withKey('conflicting'),
  );
  assert.equal(route.body.code, 'IDEMPOTENCY_CONFLICT');
  assert.equal(route.body.differs, 'operation');
  await mine(anvil.rpcUrl, 2);
  assert.equal((await records(w.id)).length, 1);
  assert.equal((await records(other.id)).length, 0);
  assert.equal(await nonceOf(other.address), 0);
});

test('keys are per project: another partner may use the same key for its own operation', async () => {
  const second = await svc.newPartner();
  const mine1 = await newWallet();
  const theirs = await newWallet(second);
  const a = await transfer(mine1.id, { to: RECIPIENT, value: '3', chainId: '31337' }, 'shared-key');
  const b = await transfer(theirs.id, { to: RECIPIENT, value: '3', chainId: '31337' }, 'shared-key', second);
  assert.equal(a.status, 200);
  assert.equal(b.status, 200, JSON.stringify(b.body));
  assert.notEqual(a.body.transactionId, b.body.transactionId);
  assert.equal(b.headers.get('idempotent-replayed'), null);
});

test('a key that is empty, longer than 256 characters or not printable ASCII is a 400 naming the header', async () => {
  const w = await newWallet(partner, false);
  for (const key of ['', 'k'.repeat(257), 'caf\u00e9']) {
    const r = await svc.v1(partner.secret, 'POST', `/wallets/${w.id}/sign-message`, { message: 'hi' }, withKey(key));
    assert.equal(r.status, 400, `key ${JSON.stringify(key.slice(0, 10))}: ${JSON.stringify(r.body)}`);
    assert.equal(r.body.code, 'INVALID_REQUEST');
    assert.equal(r.body.field, 'headers.idempotency-key');
  }
  const longest = await svc.v1(
    partner.secret,
    'POST',
    `/wallets/${w.id}/sign-message`,
    { message: 'hi' },
    withKey('k'.repeat(256)),
  );
  assert.equal(longest.status, 200, JSON.stringify(longest.body));
  const count = withDb(svc.dataDir, (db) =>
    db.prepare("select count(*) as n from idempotency_keys where key in ('', 'caf\u00e9') or length(key) > 256").get(),
  ) as { n: number };
  assert.equal(count.n, 0, 'a refused key is not stored');
});

test('refusals that did nothing are not kept: the identical request with the same key is tried again', async () => {
  // Validation: the body was wrong; the corrected one goes through with the same key.
  const w = await newWallet();
  const bad = await transfer(w.id, { to: 'not-an-address', value: '1', chainId: '31337' }, 'fix-and-retry');
  assert.equal(bad.status, 400);
  const good = await transfer(w.id, { to: RECIPIENT, value: '1', chainId: '31337' }, 'fix-and-retry');
  assert.equal(good.status, 200, JSON.stringify(good.body));

  // A busy wallet: 409 WALLET_TRANSACTION_UNRESOLVED, then the same request and key once the wallet is free.
  await setAutomine(anvil.rpcUrl, false);
  try {
    const busy = await newWallet();
    const holding = await transfer(busy.id, { to: RECIPIENT, value: '1', chainId: '31337' });
    assert.equal(holding.body.status, 'submitted');
    const refused = await transfer(busy.id, { to: RECIPIENT, value: '2', chainId: '31337' }, 'after-the-hold');
    assert.equal(refused.status, 409);
    assert.equal(refused.body.code, 'WALLET_TRANSACTION_UNRESOLVED');
    for (let i = 0; i < 100; i++) {
      await mine(anvil.rpcUrl, 1);
      const rs = await records(busy.id);
      if (rs.every((r) => r.status === 'confirmed')) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    await setAutomine(anvil.rpcUrl, true);
    const retried = await transfer(busy.id, { to: RECIPIENT, value: '2', chainId: '31337' }, 'after-the-hold');
    assert.equal(retried.status, 200, JSON.stringify(retried.body));
    assert.equal(retried.headers.get('idempotent-replayed'), null);
    assert.equal((await records(busy.id)).length, 2);
  } finally {
    await setAutomine(anvil.rpcUrl, true);
  }
});

test("a payment's failure is its answer: the retry gets the same failure and no second payment", async () => {
  const w = await newWallet(partner, false);
  const first = await transfer(w.id, { to: RECIPIENT, value: '1', chainId: '31337' }, 'unfunded');
  assert.equal(first.status, 400, JSON.stringify(first.body));
  assert.equal(first.body.code, 'INSUFFICIENT_NATIVE_BALANCE');
  const again = await transfer(w.id, { to: RECIPIENT, value: '1', chainId: '31337' }, 'unfunded');
  assert.equal(again.status, 400);
  assert.equal(again.headers.get('idempotent-replayed'), 'true');
  assert.equal(again.body.transactionId, first.body.transactionId);
  assert.equal(again.headers.get('x-transaction-id'), first.body.transactionId);
  assert.equal((await records(w.id)).length, 1);
});

test('a signature is replayed, not made again, and the key is free again once its 24 hours are over', async () => {
  const w = await newWallet(partner, false);
  const first = await svc.v1(
    partner.secret,
    'POST',
    `/wallets/${w.id}/sign-message`,
    { message: 'm1' },
    withKey('sig'),
  );
  assert.equal(first.status, 200);
  const replay = await svc.v1(
    partner.secret,
    'POST',
    `/wallets/${w.id}/sign-message`,
    { message: 'm1' },
    withKey('sig'),
  );
  assert.equal(replay.headers.get('idempotent-replayed'), 'true');
  assert.deepEqual(replay.body, first.body);
  const other = await svc.v1(
    partner.secret,
    'POST',
    `/wallets/${w.id}/sign-message`,
    { message: 'm2' },
    withKey('sig'),
  );
  assert.equal(other.body.code, 'IDEMPOTENCY_CONFLICT');
  // The answer cache ends: the same key may name a new operation.
  withDb(svc.dataDir, (db) =>
    db.prepare("update idempotency_keys set expires_at = ? where key = 'sig'").run(Date.now() - 1),
  );
  const reused = await svc.v1(
    partner.secret,
    'POST',
    `/wallets/${w.id}/sign-message`,
    { message: 'm2' },
    withKey('sig'),
  );
  assert.equal(reused.status, 200, JSON.stringify(reused.body));
  assert.equal(reused.headers.get('idempotent-replayed'), null);
});

test('after a stop between the record and its stored answer, the retry answers from the record and pays once', async () => {
  const w = await newWallet();
  const body = { to: RECIPIENT, value: '77', chainId: '31337' };
  const first = await transfer(w.id, body, 'crash-after-record');
  assert.equal(first.status, 200);
  const dataDir = svc.dataDir;
  await svc.stop({ keepData: true });
  // What a crash after the record's commit and before the answer's leaves: the key, bound to its record, no answer.
  const bound = withDb(dataDir, (db) =>
    db
      .prepare(
        "update idempotency_keys set status_code = null, body = null, headers = null where key = 'crash-after-record' returning transaction_id as id",
      )
      .get(),
  ) as { id: string };
  assert.equal(bound.id, first.body.transactionId);
  svc = await startTestService(env, { dataDir });
  await svc.waitReady();
  const again = await transfer(w.id, body, 'crash-after-record');
  assert.equal(again.status, 200, JSON.stringify(again.body));
  assert.equal(again.body.transactionId, first.body.transactionId);
  assert.equal(again.body.txHash, first.body.txHash);
  assert.equal(again.headers.get('idempotent-replayed'), 'true');
  // The answer is kept now.
  const stored = withDb(dataDir, (db) =>
    db.prepare("select status_code as s from idempotency_keys where key = 'crash-after-record'").get(),
  ) as { s: number | null };
  assert.equal(stored.s, 200);
  await mine(anvil.rpcUrl, 2);
  assert.equal((await records(w.id)).length, 1);
  assert.equal(await nonceOf(w.address), 1);
});
