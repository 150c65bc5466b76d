/**
 * Solana transfers end to end: the whole appliance against two Solana façades over LiteSVM (fixtures/), one as
 * SOLANA_DEVNET and one as SOLANA. Outcomes are checked with @solana/web3.js against the node's own state.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { getAccount, getAssociatedTokenAddressSync } from '@solana/spl-token';
import { Connection, Keypair, PublicKey, SystemProgram, Transaction } from '@solana/web3.js';
import { airdrop, createTestMint, facadeControl, mintTokens } from '../fixtures/solana-facade/facade-client.ts';
import { type SolanaFacade, startSolanaFacade } from '../fixtures/solana-facade.ts';
import { chainsWithDelays } from './helpers/patient-chains.ts';
import { type Partner, startTestService, type TestService, tempDataDir } from './helpers/service.ts';

let devnet: SolanaFacade;
let mainnet: SolanaFacade;
let svc: TestService;
let partner: Partner;
let connection: Connection;

before(async () => {
  [devnet, mainnet] = await Promise.all([startSolanaFacade({ blockhashValidBlocks: 40 }), startSolanaFacade()]);
  const dir = tempDataDir('wcs-chains-');
  const file = path.join(dir, 'chains.json');
  fs.writeFileSync(
    file,
    JSON.stringify({
      solana: [
        { network: 'SOLANA_DEVNET', rpcUrl: devnet.rpcUrl },
        { network: 'SOLANA', rpcUrl: mainnet.rpcUrl, environment: 'any' },
      ],
    }),
  );
  svc = await startTestService(
    { CHAINS_FILE: file, CHAIN_POLL_INTERVAL_MS: '100' },
    // A dropped transaction is proven expired once absent a second after its blockhash died (20 s by default).
    { api: { createChain: chainsWithDelays({ solanaExpiryProofAfterMs: 1_000 }) } },
  );
  fs.rmSync(dir, { recursive: true, force: true });
  partner = await svc.newPartner();
  connection = new Connection(devnet.rpcUrl, 'confirmed');
});

after(async () => {
  await svc?.stop();
  await Promise.all([devnet?.stop(), mainnet?.stop()]);
});

let walletCount = 0;
async function newWallet(lamports = 2_000_000_000): Promise<{ id: string; address: string }> {
  const r = await svc.v1(partner.secret, 'POST', '/wallets', {
    type: 'SOLANA',
    userIdentifier: `sol-${walletCount++}`,
    userIdentifierType: 'CUSTOM_ID',
  });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  if (lamports > 0) await airdrop(connection, new PublicKey(r.body.address), lamports);
  return { id: r.body.id, address: r.body.address };
}

async function settle(walletId: string, transactionId: string, timeoutMs = 20_000) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const r = await svc.v1(partner.secret, 'GET', `/wallets/${walletId}/transactions/${transactionId}`);
    if (r.body.status !== 'submitted' && r.body.status !== 'pending') return r.body;
    if (Date.now() > until) throw new Error(`record still ${r.body.status}`);
    await new Promise((res) => setTimeout(res, 50));
  }
}

test('a SOL transfer is signed by the wallet, accepted by the node and confirmed once finalized', async () => {
  const w = await newWallet();
  const to = Keypair.generate().publicKey;
  const r = await svc.v1(partner.secret, 'POST', `/wallets/${w.id}/transfer`, {
    to: to.toBase58(),
    value: '1500000',
    network: 'SOLANA_DEVNET',
  });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.equal(r.headers.get('x-transaction-id'), r.body.transactionId);
  const tx = Transaction.from(Buffer.from(r.body.signedTransaction, 'base64'));
  assert.equal(tx.feePayer?.toBase58(), w.address);
  assert.ok(tx.verifySignatures(), 'web3.js verifies every signature');
  assert.equal(r.body.txHash, (await import('bs58')).default.encode(tx.signature!));

  const final = await settle(w.id, r.body.transactionId);
  assert.equal(final.status, 'confirmed');
  assert.equal(final.network, 'SOLANA_DEVNET');
  assert.deepEqual([final.to, final.value], [to.toBase58(), '1500000']);
  const status = (await connection.getSignatureStatuses([r.body.txHash], { searchTransactionHistory: true })).value[0];
  assert.equal(status?.confirmationStatus, 'finalized');
  assert.equal(final.blockNumber, String(status?.slot));
  const block = (await (
    await fetch(devnet.rpcUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'getBlock', params: [status?.slot, {}] }),
    })
  ).json()) as { result: { blockhash: string } };
  assert.equal(final.blockHash, block.result.blockhash, "the record names the slot's blockhash");
  assert.equal(await connection.getBalance(to), 1_500_000);
});

test("an SPL transfer creates the recipient's token account and moves the tokens", async () => {
  const w = await newWallet();
  const authority = Keypair.generate();
  await airdrop(connection, authority.publicKey, 1_000_000_000);
  const mint = await createTestMint(connection, authority, { decimals: 6 });
  await mintTokens(connection, authority, mint, new PublicKey(w.address), 9_000_000n);
  const to = Keypair.generate().publicKey;
  const r = await svc.v1(partner.secret, 'POST', `/wallets/${w.id}/transfer`, {
    to: to.toBase58(),
    value: '2500000',
    network: 'SOLANA_DEVNET',
    kind: 'SPL',
    tokenAddress: mint.toBase58(),
  });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const final = await settle(w.id, r.body.transactionId);
  assert.equal(final.status, 'confirmed');
  assert.equal(final.tokenAddress, mint.toBase58());
  const ata = getAssociatedTokenAddressSync(mint, to);
  assert.equal((await getAccount(connection, ata)).amount, 2_500_000n);
});

test('an unfunded wallet fails at broadcast with INSUFFICIENT_NATIVE_BALANCE', async () => {
  const w = await newWallet(0);
  const r = await svc.v1(partner.secret, 'POST', `/wallets/${w.id}/transfer`, {
    to: Keypair.generate().publicKey.toBase58(),
    value: '1',
    network: 'SOLANA_DEVNET',
  });
  assert.equal(r.status, 400, JSON.stringify(r.body));
  assert.equal(r.body.code, 'INSUFFICIENT_NATIVE_BALANCE');
  assert.equal(r.headers.get('x-transaction-id'), r.body.transactionId);
  const rec = await svc.v1(partner.secret, 'GET', `/wallets/${w.id}/transactions/${r.body.transactionId}`);
  assert.deepEqual([rec.body.status, rec.body.failureStage], ['failed', 'broadcast']);
});

test('while a payment is unfinalized the wallet is held (409); the hold ends with finalization', async () => {
  const w = await newWallet();
  const control = facadeControl(devnet.rpcUrl);
  await control.pauseSlots();
  let first: { body: { transactionId: string } };
  try {
    first = await svc.v1(partner.secret, 'POST', `/wallets/${w.id}/transfer`, {
      to: Keypair.generate().publicKey.toBase58(),
      value: '1000000',
      network: 'SOLANA_DEVNET',
    });
    assert.ok(first.body.transactionId, JSON.stringify(first.body));
    const second = await svc.v1(partner.secret, 'POST', `/wallets/${w.id}/transfer`, {
      to: Keypair.generate().publicKey.toBase58(),
      value: '1000000',
      network: 'SOLANA_DEVNET',
    });
    assert.equal(second.status, 409);
    assert.equal(second.body.code, 'WALLET_TRANSACTION_UNRESOLVED');
  } finally {
    await control.resumeSlots();
  }
  assert.equal((await settle(w.id, first.body.transactionId)).status, 'confirmed');
});

test('a transaction that never lands fails TRANSACTION_EXPIRED once its blockhash expired, and releases the wallet', async () => {
  const w = await newWallet();
  const control = facadeControl(devnet.rpcUrl);
  await control.dropNextTransactions(1);
  const r = await svc.v1(partner.secret, 'POST', `/wallets/${w.id}/transfer`, {
    to: Keypair.generate().publicKey.toBase58(),
    value: '1000000',
    network: 'SOLANA_DEVNET',
  });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  // The blockhash is valid for 40 heights here; past them (and finalized) the transaction can never execute.
  await control.advanceSlots(60);
  const final = await settle(w.id, r.body.transactionId);
  assert.deepEqual(
    [final.status, final.failureCode, final.monitoring?.reason],
    ['failed', 'TRANSACTION_EXPIRED', 'expired'],
  );
  const next = await svc.v1(partner.secret, 'POST', `/wallets/${w.id}/transfer`, {
    to: Keypair.generate().publicKey.toBase58(),
    value: '1000000',
    network: 'SOLANA_DEVNET',
  });
  assert.equal(next.status, 200, JSON.stringify(next.body));
});

test("sign-transaction with broadcast: true sends the partner's transaction; a contradicting network is a 400", async () => {
  const w = await newWallet();
  const { blockhash } = await connection.getLatestBlockhash();
  const tx = new Transaction({ feePayer: new PublicKey(w.address), recentBlockhash: blockhash }).add(
    SystemProgram.transfer({
      fromPubkey: new PublicKey(w.address),
      toPubkey: Keypair.generate().publicKey,
      lamports: 1_000_000,
    }),
  );
  const b64 = tx.serialize({ requireAllSignatures: false }).toString('base64');

  const wrong = await svc.v1(partner.secret, 'POST', `/wallets/${w.id}/sign-transaction`, {
    transaction: b64,
    network: 'SOLANA',
    broadcast: true,
  });
  assert.equal(wrong.status, 400, JSON.stringify(wrong.body));
  assert.equal(wrong.body.code, 'INVALID_REQUEST');
  assert.match(wrong.body.message, /network/);

  const r = await svc.v1(partner.secret, 'POST', `/wallets/${w.id}/sign-transaction`, {
    transaction: b64,
    network: 'SOLANA_DEVNET',
    broadcast: true,
  });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.equal(r.headers.get('x-transaction-id'), r.body.transactionId);
  const final = await settle(w.id, r.body.transactionId);
  assert.equal(final.status, 'confirmed');
  assert.equal(final.intentKind, 'sign_transaction');
  assert.deepEqual([final.to, final.value, final.tokenAddress], [undefined, undefined, undefined]);
});

test("a transfer without network uses the key's own environment's network: SOLANA_DEVNET for development keys, SOLANA for production ones", async () => {
  // Development key (the partner above): the beta network, even though SOLANA is open to it too here.
  const w = await newWallet();
  const to = Keypair.generate().publicKey;
  const dev = await svc.v1(partner.secret, 'POST', `/wallets/${w.id}/transfer`, {
    to: to.toBase58(),
    value: '1000000',
  });
  assert.equal(dev.status, 200, JSON.stringify(dev.body));
  const devRecord = await settle(w.id, dev.body.transactionId);
  assert.deepEqual([devRecord.status, devRecord.network], ['confirmed', 'SOLANA_DEVNET']);
  assert.equal(await connection.getBalance(to), 1_000_000, 'the lamports moved on the devnet node');

  // Production key: the production default, SOLANA (here the second façade).
  const production = await svc.newPartner({ environment: 'production' });
  const created = await svc.v1(production.secret, 'POST', '/wallets', {
    type: 'SOLANA',
    userIdentifier: 'sol-production',
    userIdentifierType: 'CUSTOM_ID',
  });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const onMainnet = new Connection(mainnet.rpcUrl, 'confirmed');
  await airdrop(onMainnet, new PublicKey(created.body.address), 2_000_000_000);
  const to2 = Keypair.generate().publicKey;
  const prod = await svc.v1(production.secret, 'POST', `/wallets/${created.body.id}/transfer`, {
    to: to2.toBase58(),
    value: '1000000',
  });
  assert.equal(prod.status, 200, JSON.stringify(prod.body));
  const r = await svc.v1(
    production.secret,
    'GET',
    `/wallets/${created.body.id}/transactions/${prod.body.transactionId}`,
  );
  assert.equal(r.body.network, 'SOLANA');
  assert.equal(await onMainnet.getBalance(to2), 1_000_000, 'the lamports moved on the SOLANA node');
  assert.equal(await connection.getBalance(to2), 0, 'and not on devnet');
});

test('bad Solana transfer input answers 4xx naming the problem', async () => {
  const w = await newWallet(0);
  const to = Keypair.generate().publicKey.toBase58();
  const cases: Array<[Record<string, unknown>, string]> = [
    [{ to: 'not-base58!', value: '1', network: 'SOLANA_DEVNET' }, 'to'],
    [{ to, value: '0', network: 'SOLANA_DEVNET' }, 'value'],
    [{ to, value: '1', network: 'SOLANA_DEVNET', chainId: '1' }, 'chainId'],
    [{ to, value: '1', network: 'SOLANA_DEVNET', kind: 'ERC20', tokenAddress: to }, 'kind'],
    [{ to, value: '1', network: 'SOLANA_DEVNET', kind: 'SPL' }, 'tokenAddress'],
    [{ to, value: '18446744073709551616', network: 'SOLANA_DEVNET' }, 'value'],
  ];
  for (const [body, field] of cases) {
    const r = await svc.v1(partner.secret, 'POST', `/wallets/${w.id}/transfer`, body);
    assert.equal(r.status, 400, `${JSON.stringify(body)} → ${r.status} ${JSON.stringify(r.body)}`);
    assert.match(`${r.body.message} ${r.body.field ?? ''}`, new RegExp(field), JSON.stringify(r.body));
  }
});
