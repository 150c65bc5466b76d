/**
 * SIGKILL of the API in the middle of a batch of transfers (the supervisor restarts it): no record is lost, no
 * record is left unresolved, and no record ever puts two different payloads on the chain.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, test } from 'node:test';
import Database from 'better-sqlite3';
import { type Anvil, startAnvil } from '../fixtures/anvil.ts';
import { mine, rpc, setBalance } from '../fixtures/evm-helpers.ts';
import { createPartnerKey } from './helpers/http.ts';
import { tempDataDir } from './helpers/service.ts';
import { type RunningSupervisor, startSupervisor } from './helpers/supervisor.ts';

const ADMIN = 'transfer-crash-admin-token-0123456789';
const WALLETS = 40;
const RECIPIENT = '0x000000000000000000000000000000000000bEEF';
let sup: RunningSupervisor | undefined;
let anvil: Anvil | undefined;
let dataDir = '';

after(async () => {
  await sup?.stop();
  await anvil?.stop();
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
});

function records(): Array<{
  id: string;
  wallet_id: string;
  status: string;
  hash: string | null;
  signed_transaction: string | null;
  failure_code: string | null;
  unresolved: number;
}> {
  const db = new Database(path.join(dataDir, 'service.db'), { readonly: true });
  try {
    return db
      .prepare('select id, wallet_id, status, hash, signed_transaction, failure_code, unresolved from transactions')
      .all() as ReturnType<typeof records>;
  } finally {
    db.close();
  }
}

test('SIGKILL during a batch of in-flight transfers loses no record and never broadcasts two payloads for one', async () => {
  anvil = await startAnvil({ slotsInAnEpoch: 1 });
  const rpcUrl = anvil.rpcUrl;
  dataDir = tempDataDir();
  const chains = path.join(dataDir, 'chains.json');
  fs.writeFileSync(chains, JSON.stringify({ evm: [{ chainId: 31337, rpcUrl, environment: 'any' }] }));
  sup = await startSupervisor({
    DATA_DIR: dataDir,
    ADMIN_TOKEN: ADMIN,
    CHAINS_FILE: chains,
    CHAIN_POLL_INTERVAL_MS: '100',
  });
  const { url, waitFor } = sup;
  const key = await createPartnerKey(sup.adminUrl, ADMIN, { plan: 'enterprise', rateLimitPerMinute: 100000 });
  const headers = { 'x-api-key': key.secretKey, 'content-type': 'application/json' };
  const wallets: Array<{ id: string; address: string }> = [];
  for (let i = 0; i < WALLETS; i++) {
    const r = await fetch(`${url}/v1/wallets`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ type: 'EVM', userIdentifier: `crash-${i}`, userIdentifierType: 'CUSTOM_ID' }),
    });
    assert.equal(r.status, 201);
    const w = (await r.json()) as { id: string; address: string };
    await setBalance(rpcUrl, w.address, 10n ** 18n);
    wallets.push(w);
  }

  const apiPid = sup.apiPid();
  const answered = new Map<string, { transactionId: string; txHash: string; signedTransaction: string }>();
  let killed = false;
  await Promise.all(
    wallets.map(async (w, i) => {
      // Spread over a few hundred milliseconds so the kill finds payments in every stage.
      await new Promise((r) => setTimeout(r, i * 8));
      try {
        const r = await fetch(`${url}/v1/wallets/${w.id}/transfer`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ to: RECIPIENT, value: String(1000 + i), chainId: '31337' }),
        });
        if (r.status === 200) answered.set(w.id, (await r.json()) as never);
      } catch {
        // the connection died with the process
      }
      if (!killed && answered.size >= WALLETS / 4) {
        killed = true;
        process.kill(apiPid, 'SIGKILL');
      }
    }),
  );
  assert.ok(killed, 'the API was killed mid-batch');

  await waitFor(() => /api restarted/.test(sup!.log()), 'the API restart');
  // Mine until every record is resolved: the restarted API resumes what was broadcast and fails what was mid-signing.
  await waitFor(
    async () => {
      await mine(rpcUrl, 1);
      return records().every((r) => r.unresolved === 0);
    },
    'every record resolved',
    60_000,
  );

  const rows = records();
  const byWallet = new Map<string, typeof rows>();
  for (const r of rows) byWallet.set(r.wallet_id, [...(byWallet.get(r.wallet_id) ?? []), r]);
  for (const [walletId, a] of answered) {
    const rec = rows.find((r) => r.id === a.transactionId);
    assert.ok(rec, `answered record ${a.transactionId} exists`);
    assert.equal(rec.hash, a.txHash);
    assert.equal(rec.signed_transaction, a.signedTransaction, 'the stored payload is the one answered');
    assert.equal(rec.wallet_id, walletId);
  }
  let confirmed = 0;
  for (const w of wallets) {
    const recs = byWallet.get(w.id) ?? [];
    assert.ok(recs.length <= 1, 'one transfer per wallet was sent, so at most one record');
    const onChain = Number(BigInt(await rpc<string>(rpcUrl, 'eth_getTransactionCount', [w.address, 'latest'])));
    const rec = recs[0];
    if (!rec) {
      assert.equal(onChain, 0, 'no record, nothing on chain');
      continue;
    }
    if (rec.status === 'confirmed') {
      confirmed += 1;
      assert.equal(onChain, 1);
      const receipt = await rpc<{ from: string; status: string } | null>(rpcUrl, 'eth_getTransactionReceipt', [
        rec.hash,
      ]);
      assert.ok(receipt, 'the recorded hash is the transaction on chain');
      assert.equal(receipt.from.toLowerCase(), w.address.toLowerCase());
    } else {
      assert.equal(rec.status, 'failed');
      assert.equal(onChain, 0, `a failed record (${rec.failure_code}) put nothing on chain`);
      assert.equal(rec.failure_code, 'SIGNING_INTERRUPTED');
    }
  }
  console.log(
    `records ${rows.length}, answered 200 ${answered.size}, confirmed ${confirmed}, interrupted ${rows.length - confirmed}`,
  );
  assert.ok(confirmed >= answered.size);
});
