/**
 * SIGKILL of the API again and again while auto-retry payments are being replaced (the supervisor restarts it each
 * time), with anvil's mining held back: kills land while replacements are priced, signed and sent. Then the blocks
 * come, and the chain and the records must agree: one transaction per wallet, the recipient paid once, the executed
 * transaction one of the record's attempts; no attempt signed twice (each ordinal has at most one hash, and an
 * uncertain signing is never followed by another attempt).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, test } from 'node:test';
import Database from 'better-sqlite3';
import { type Anvil, startAnvil } from '../fixtures/anvil.ts';
import { mine, rpc, setAutomine, setBalance } from '../fixtures/evm-helpers.ts';
import { createPartnerKey } from './helpers/http.ts';
import { tempDataDir } from './helpers/service.ts';
import { type RunningSupervisor, startSupervisor } from './helpers/supervisor.ts';

const ADMIN = 'auto-retry-crash-admin-token-0123456789';
const WALLETS = 6;
const KILLS = 3;
let sup: RunningSupervisor | undefined;
let anvil: Anvil | undefined;
let dataDir = '';

after(async () => {
  await sup?.stop();
  await anvil?.stop();
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
});

interface Row {
  id: string;
  wallet_id: string;
  status: string;
  hash: string | null;
  attempts: string | null;
  auto_retry: string | null;
  unresolved: number;
}

function records(): Row[] {
  const db = new Database(path.join(dataDir, 'service.db'), { readonly: true });
  try {
    return db
      .prepare('select id, wallet_id, status, hash, attempts, auto_retry, unresolved from transactions')
      .all() as Row[];
  } finally {
    db.close();
  }
}

test('SIGKILLs while auto-retry payments are replaced: each wallet pays once, with one of its recorded attempts', async () => {
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
    EVM_REPLACEMENT_DELAY_MS: '150',
  });
  const { url, waitFor } = sup;
  const key = await createPartnerKey(sup.adminUrl, ADMIN, { plan: 'enterprise', rateLimitPerMinute: 100000 });
  const headers = { 'x-api-key': key.secretKey, 'content-type': 'application/json' };
  const wallets: Array<{ id: string; address: string; to: string }> = [];
  for (let i = 0; i < WALLETS; i++) {
    const r = await fetch(`${url}/v1/wallets`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ type: 'EVM', userIdentifier: `ar-crash-${i}`, userIdentifierType: 'CUSTOM_ID' }),
    });
    assert.equal(r.status, 201);
    const w = (await r.json()) as { id: string; address: string };
    await setBalance(rpcUrl, w.address, 10n ** 18n);
    wallets.push({ ...w, to: `0x${(0xa800 + i).toString(16).padStart(40, '0')}` });
  }

  await setAutomine(rpcUrl, false);
  const accepted = new Map<string, string>();
  for (const w of wallets) {
    const r = await fetch(`${url}/v1/wallets/${w.id}/transfer`, {
      method: 'POST',
      headers: { ...headers, 'idempotency-key': `crash-${w.id}` },
      body: JSON.stringify({
        to: w.to,
        value: '1000',
        chainId: '31337',
        autoRetry: {
          maxExecutionFeeWei: '1000000000000000',
          expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
        },
      }),
    });
    assert.equal(r.status, 202);
    accepted.set(w.id, ((await r.json()) as { transactionId: string }).transactionId);
  }
  // Kill the API at uneven moments while replacements are due every 150 ms.
  for (let k = 0; k < KILLS; k++) {
    await new Promise((r) => setTimeout(r, 120 + k * 97));
    const restarts = [...sup.log().matchAll(/api restarted/g)].length;
    process.kill(sup.apiPid(), 'SIGKILL');
    await waitFor(() => [...sup!.log().matchAll(/api restarted/g)].length > restarts, `restart ${k + 1}`);
    await waitFor(async () => (await fetch(`${url}/readyz`)).status === 200, 'ready again');
  }
  // Replacement stops for every payment: three replacements, or an uncertain signing left by a kill.
  await waitFor(
    () =>
      records().every((r) => {
        const retry = JSON.parse(r.auto_retry!) as { state: string };
        return retry.state === 'stopped';
      }),
    'every retry stopped',
    60_000,
  ).catch((err: Error) => {
    throw new Error(
      `${err.message.split('\n')[0]}\n${records()
        .map((r) => `${r.status} ${r.auto_retry} ${r.attempts}`)
        .join('\n')}`,
    );
  });
  await setAutomine(rpcUrl, true);
  await waitFor(
    async () => {
      await mine(rpcUrl, 1);
      return records().every((r) => r.unresolved === 0);
    },
    'every payment resolved',
    60_000,
  );

  const rows = records();
  assert.equal(rows.length, WALLETS, 'one record per accepted transfer, none lost, none doubled');
  for (const w of wallets) {
    const rec = rows.find((r) => r.wallet_id === w.id)!;
    assert.equal(rec.id, accepted.get(w.id));
    const attempts = JSON.parse(rec.attempts!) as Array<{ ordinal: number; stage: string; hash: string | null }>;
    const retry = JSON.parse(rec.auto_retry!) as { state: string; reason: string | null; bumpCount: number };
    assert.deepEqual(
      attempts.map((a) => a.ordinal),
      attempts.map((_, i) => i),
      'attempts are numbered in order, each once',
    );
    assert.equal(retry.bumpCount, attempts.length - 1);
    // An attempt left `signing` by a kill has no bytes and is the last: nothing was signed after it.
    const uncertain = attempts.findIndex((a) => a.stage === 'signing');
    if (uncertain !== -1) {
      assert.equal(uncertain, attempts.length - 1, JSON.stringify(attempts));
      assert.equal(attempts[uncertain]!.hash, null);
    }
    assert.equal(rec.status, 'confirmed', `${rec.id}: ${rec.status} ${JSON.stringify(attempts)}`);
    assert.equal(
      Number(await rpc<string>(rpcUrl, 'eth_getTransactionCount', [w.address, 'latest'])),
      1,
      'one transaction',
    );
    assert.equal(BigInt(await rpc<string>(rpcUrl, 'eth_getBalance', [w.to, 'latest'])), 1000n, 'paid once');
    // What executed is one of the record's attempts.
    const hashes = attempts.map((a) => a.hash).filter((h): h is string => h !== null);
    let executed = 0;
    for (const h of hashes) if (await rpc(rpcUrl, 'eth_getTransactionReceipt', [h])) executed += 1;
    assert.equal(executed, 1, 'exactly one recorded attempt executed');
  }
});
