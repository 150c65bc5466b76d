/**
 * SIGKILL of the API again and again while Solana auto-retry payments are being rebuilt (the supervisor restarts it
 * each time): the fault proxy swallows each wallet's first two attempts, so kills land while expiries are being
 * proven, new attempts prepared, signed and sent. Then the chain and the records must agree: at most one of every
 * transaction a wallet ever sent landed, the recipient was paid at most once and exactly once when the record says
 * `confirmed`, everything sent is one of the record's attempts, and an uncertain signing was never followed by
 * another attempt.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, test } from 'node:test';
import { Connection, PublicKey, VersionedTransaction } from '@solana/web3.js';
import Database from 'better-sqlite3';
import bs58 from 'bs58';
import { type RpcCall, type RpcFaultProxy, startRpcFaultProxy } from '../fixtures/rpc-fault-proxy.ts';
import { airdrop } from '../fixtures/solana-facade/facade-client.ts';
import { type SolanaFacade, startSolanaFacade } from '../fixtures/solana-facade.ts';
import { createPartnerKey } from './helpers/http.ts';
import { tempDataDir } from './helpers/service.ts';
import { type RunningSupervisor, startSupervisor } from './helpers/supervisor.ts';

const ADMIN = 'solana-auto-retry-crash-admin-token-0123';
const WALLETS = 6;
const KILLS = 3;
/** Each wallet's first attempts that never land. */
const SWALLOWED = 2;
let sup: RunningSupervisor | undefined;
let facade: SolanaFacade | undefined;
let proxy: RpcFaultProxy | undefined;
let dataDir = '';

after(async () => {
  await sup?.stop();
  await proxy?.close();
  await facade?.stop();
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
});

interface Row {
  id: string;
  wallet_id: string;
  status: string;
  hash: string | null;
  monitoring: string | null;
  attempts: string;
  auto_retry: string;
  unresolved: number;
}

function records(): Row[] {
  const db = new Database(path.join(dataDir, 'service.db'), { readonly: true });
  try {
    return db
      .prepare('select id, wallet_id, status, hash, monitoring, attempts, auto_retry, unresolved from transactions')
      .all() as Row[];
  } finally {
    db.close();
  }
}

const wireOf = (call: RpcCall) => Buffer.from(call.params![0] as string, 'base64');
const signatureOf = (call: RpcCall) => bs58.encode(wireOf(call).subarray(1, 65));
const payerOf = (call: RpcCall) =>
  VersionedTransaction.deserialize(wireOf(call)).message.staticAccountKeys[0]!.toBase58();

test('SIGKILLs while Solana auto-retry payments are rebuilt: each wallet pays at most once, with a recorded attempt', async (t) => {
  const started = Date.now();
  const mark = (what: string) => t.diagnostic(`${((Date.now() - started) / 1000).toFixed(1)} s ${what}`);
  facade = await startSolanaFacade({ blockhashValidBlocks: 40 });
  proxy = await startRpcFaultProxy(facade.rpcUrl);
  const connection = new Connection(facade.rpcUrl, 'confirmed');
  dataDir = tempDataDir();
  const chains = path.join(dataDir, 'chains.json');
  fs.writeFileSync(
    chains,
    JSON.stringify({ solana: [{ network: 'SOLANA_DEVNET', rpcUrl: proxy.url, expiryProofAfterMs: 1_000 }] }),
  );
  sup = await startSupervisor({
    DATA_DIR: dataDir,
    ADMIN_TOKEN: ADMIN,
    CHAINS_FILE: chains,
    CHAIN_POLL_INTERVAL_MS: '100',
    EVM_REPLACEMENT_DELAY_MS: '200',
  });
  mark('supervisor ready');
  const { url, waitFor } = sup;
  const key = await createPartnerKey(sup.adminUrl, ADMIN, { plan: 'enterprise', rateLimitPerMinute: 100000 });
  const headers = { 'x-api-key': key.secretKey, 'content-type': 'application/json' };
  const wallets: Array<{ id: string; address: string; to: string }> = [];
  for (let i = 0; i < WALLETS; i++) {
    const r = await fetch(`${url}/v1/wallets`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ type: 'SOLANA', userIdentifier: `sar-crash-${i}`, userIdentifierType: 'CUSTOM_ID' }),
    });
    assert.equal(r.status, 201);
    const w = (await r.json()) as { id: string; address: string };
    await airdrop(connection, new PublicKey(w.address), 1_000_000_000);
    wallets.push({ ...w, to: new PublicKey(bs58.encode(Buffer.alloc(32, 0x30 + i))).toBase58() });
  }
  // Each wallet's first attempts are answered as taken and never land (a leader dropped them), resends included.
  const swallowed = new Map<string, Set<string>>(wallets.map((w) => [w.address, new Set()]));
  proxy.add({
    method: 'sendTransaction',
    when: (call) => {
      const mine = swallowed.get(payerOf(call));
      if (!mine) return false;
      const signature = signatureOf(call);
      if (mine.has(signature)) return true;
      if (mine.size >= SWALLOWED) return false;
      mine.add(signature);
      return true;
    },
    fault: { kind: 'result', result: 'dropped-by-the-leader' },
  });

  mark('wallets funded');
  const accepted = new Map<string, string>();
  for (const w of wallets) {
    const r = await fetch(`${url}/v1/wallets/${w.id}/transfer`, {
      method: 'POST',
      headers: { ...headers, 'idempotency-key': `crash-${w.id}` },
      body: JSON.stringify({
        to: w.to,
        value: '5000000',
        network: 'SOLANA_DEVNET',
        autoRetry: { maxExecutionFeeLamports: '100000', expiresAt: new Date(Date.now() + 3_600_000).toISOString() },
      }),
    });
    const text = await r.text();
    assert.equal(r.status, 202, text);
    accepted.set(w.id, (JSON.parse(text) as { transactionId: string }).transactionId);
    // Staggered, so that each kill finds the payments at different stages.
    await new Promise((res) => setTimeout(res, 450));
  }
  // Kill the API at uneven moments across the attempts' expiries, proofs and rebuilds.
  for (let k = 0; k < KILLS; k++) {
    await new Promise((r) => setTimeout(r, 1_100 + k * 913));
    const restarts = [...sup.log().matchAll(/api restarted/g)].length;
    process.kill(sup.apiPid(), 'SIGKILL');
    await waitFor(() => [...sup!.log().matchAll(/api restarted/g)].length > restarts, `restart ${k + 1}`);
    await waitFor(async () => (await fetch(`${url}/readyz`)).status === 200, 'ready again');
    mark(`kill ${k + 1}: ready again`);
  }
  await waitFor(() => records().every((r) => r.unresolved === 0), 'every payment resolved', 90_000).catch(
    (err: Error) => {
      throw new Error(
        `${err.message.split('\n')[0]}\n${records()
          .map((r) => `${r.status} ${r.auto_retry} ${r.attempts}`)
          .join('\n')}`,
      );
    },
  );
  mark('every payment resolved');
  for (const r of records()) t.diagnostic(`${r.status} ${r.auto_retry} ${r.attempts}`);
  // Settled for good: a later round changes nothing.
  await new Promise((r) => setTimeout(r, 1_500));

  const rows = records();
  assert.equal(rows.length, WALLETS, 'one record per accepted transfer, none lost, none doubled');
  const sent = new Map<string, Set<string>>();
  for (const { call } of proxy.calls) {
    if (call.method !== 'sendTransaction') continue;
    const payer = payerOf(call);
    if (!sent.has(payer)) sent.set(payer, new Set());
    sent.get(payer)!.add(signatureOf(call));
  }
  for (const w of wallets) {
    const rec = rows.find((r) => r.wallet_id === w.id)!;
    assert.equal(rec.id, accepted.get(w.id));
    const attempts = JSON.parse(rec.attempts) as Array<{ ordinal: number; stage: string; hash: string | null }>;
    const retry = JSON.parse(rec.auto_retry) as { state: string; reason: string | null; bumpCount: number };
    const detail = `${rec.id}: ${rec.status} ${rec.auto_retry} ${rec.attempts}`;
    assert.deepEqual(
      attempts.map((a) => a.ordinal),
      attempts.map((_, i) => i),
      'attempts are numbered in order, each once',
    );
    assert.equal(retry.bumpCount, attempts.length - 1, detail);
    // An attempt left `signing` by a kill has no bytes and is the last: nothing was signed after it.
    const uncertain = attempts.findIndex((a) => a.stage === 'signing');
    if (uncertain !== -1) {
      assert.equal(uncertain, attempts.length - 1, detail);
      assert.equal(attempts[uncertain]!.hash, null);
    }
    // Everything the wallet ever sent is one of the record's attempts, and at most one of them landed.
    const hashes = new Set(attempts.map((a) => a.hash).filter((h): h is string => h !== null));
    const wire = [...(sent.get(w.address) ?? [])];
    for (const s of wire) assert.ok(hashes.has(s), `${s} was sent but is not a recorded attempt: ${detail}`);
    const { value } = await connection.getSignatureStatuses(wire, { searchTransactionHistory: true });
    const landed = wire.filter((_, i) => value[i] !== null);
    assert.ok(landed.length <= 1, `${landed.length} attempts landed: ${detail}`);
    const paid = await connection.getBalance(new PublicKey(w.to));
    if (rec.status === 'confirmed') {
      assert.equal(landed.length, 1, detail);
      assert.equal(paid, 5_000_000, 'paid once');
      const winner = (JSON.parse(rec.monitoring ?? '{}') as { winningHash?: string }).winningHash ?? rec.hash;
      assert.equal(winner, landed[0], detail);
    } else {
      assert.equal(rec.status, 'failed', detail);
      assert.equal(landed.length, 0, detail);
      assert.equal(paid, 0, 'failed, and nothing paid');
    }
  }
  // The kills did not all miss: each wallet went past its swallowed attempts or stopped on an uncertain signing.
  for (const rec of rows) {
    const attempts = JSON.parse(rec.attempts) as unknown[];
    assert.ok(attempts.length >= 2, `${rec.id} never rebuilt: ${rec.attempts}`);
  }
});
