/**
 * EVM transfers end to end: the whole appliance (real enclave process, real SQLite) against a real anvil node.
 * Every outcome is checked against the chain's own data (receipts, balances, viem's signer recovery).
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import Database from 'better-sqlite3';
import {
  encodeFunctionData,
  keccak256,
  parseTransaction,
  recoverTransactionAddress,
  serializeTransaction,
  type TransactionSerializable,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { type Anvil, startAnvil } from '../fixtures/anvil.ts';
import { type ContractArtifact, deployContract, mine, rpc, setAutomine, setBalance } from '../fixtures/evm-helpers.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../fixtures/webhook-receiver.ts';
import { type Partner, startTestService, type TestService, tempDataDir } from './helpers/service.ts';

const TestToken = JSON.parse(
  fs.readFileSync(path.join(import.meta.dirname, '../fixtures/contracts/TestToken.json'), 'utf8'),
) as ContractArtifact;
const Reverter = JSON.parse(
  fs.readFileSync(path.join(import.meta.dirname, '../fixtures/contracts/Reverter.json'), 'utf8'),
) as ContractArtifact;

let anvil: Anvil;
let svc: TestService;
let partner: Partner;
let receiver: WebhookReceiver;
let token: `0x${string}`;
let reverter: `0x${string}`;
const RECIPIENT = '0x000000000000000000000000000000000000bEEF';

function chainsFile(dir: string, rpcUrl: string): string {
  const file = path.join(dir, 'chains.json');
  fs.writeFileSync(file, JSON.stringify({ evm: [{ chainId: 31337, rpcUrl, environment: 'any' }] }));
  return file;
}

before(async () => {
  anvil = await startAnvil({ slotsInAnEpoch: 1 });
  const dir = tempDataDir('wcs-chains-');
  receiver = await startWebhookReceiver();
  svc = await startTestService(
    { CHAINS_FILE: chainsFile(dir, anvil.rpcUrl), CHAIN_POLL_INTERVAL_MS: '100', WEBHOOK_ALLOW_PRIVATE_TARGETS: '1' },
    { api: { webhooks: { extraCa: receiver.caPem } } },
  );
  fs.rmSync(dir, { recursive: true, force: true });
  partner = await svc.newPartner();
  token = await deployContract(anvil.rpcUrl, anvil.fundedKeys[0]!, TestToken);
  reverter = await deployContract(anvil.rpcUrl, anvil.fundedKeys[0]!, Reverter);
});

after(async () => {
  await svc?.stop();
  await anvil?.stop();
  await receiver?.close();
});

let walletCount = 0;
async function newWallet(fundWei = 10n ** 18n): Promise<{ id: string; address: `0x${string}` }> {
  const r = await svc.v1(partner.secret, 'POST', '/wallets', {
    type: 'EVM',
    userIdentifier: `evm-${walletCount++}`,
    userIdentifierType: 'CUSTOM_ID',
  });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  if (fundWei > 0n) await setBalance(anvil.rpcUrl, r.body.address, fundWei);
  return { id: r.body.id, address: r.body.address };
}

async function record(walletId: string, transactionId: string) {
  return svc.v1(partner.secret, 'GET', `/wallets/${walletId}/transactions/${transactionId}`);
}

/** Mines past finality until the record leaves `submitted` (the poller runs every 100 ms). */
async function settle(walletId: string, transactionId: string, timeoutMs = 15_000) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const r = await record(walletId, transactionId);
    if (r.body.status !== 'submitted' && r.body.status !== 'pending') return r.body;
    if (Date.now() > until) throw new Error(`record still ${r.body.status}`);
    await mine(anvil.rpcUrl, 1);
    await new Promise((res) => setTimeout(res, 50));
  }
}

/** A broadcasting sign-transaction of the wallet's `nonce` that calls the Reverter: mined, and reverted. */
async function broadcastReverting(walletId: string, nonce: number) {
  const gasPrice = BigInt(await rpc<string>(anvil.rpcUrl, 'eth_gasPrice'));
  return svc.v1(partner.secret, 'POST', `/wallets/${walletId}/sign-transaction`, {
    broadcast: true,
    transaction: {
      to: reverter,
      value: '0',
      chainId: 31337,
      type: 2,
      nonce,
      gasLimit: '100000',
      maxFeePerGas: String(gasPrice * 3n),
      maxPriorityFeePerGas: '1',
      data: '0x12345678',
    },
  });
}

async function balanceOf(tokenAddress: string, owner: string): Promise<bigint> {
  const data = encodeFunctionData({
    abi: TestToken.abi as never,
    functionName: 'balanceOf',
    args: [owner],
  } as never);
  return BigInt(await rpc<string>(anvil.rpcUrl, 'eth_call', [{ to: tokenAddress, data }, 'latest']));
}

test('a native transfer is signed by the wallet, accepted by anvil and confirmed with the chain data', async () => {
  const w = await newWallet();
  const before = BigInt(await rpc<string>(anvil.rpcUrl, 'eth_getBalance', [RECIPIENT, 'latest']));
  const r = await svc.v1(partner.secret, 'POST', `/wallets/${w.id}/transfer`, {
    to: RECIPIENT,
    value: '1000',
    chainId: '31337',
  });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.equal(r.headers.get('x-transaction-id'), r.body.transactionId);
  assert.equal(r.body.status, 'submitted');
  const signed = r.body.signedTransaction as `0x${string}`;
  assert.equal(await recoverTransactionAddress({ serializedTransaction: signed as never }), w.address);
  const tx = parseTransaction(signed);
  assert.equal(tx.to?.toLowerCase(), RECIPIENT.toLowerCase());
  assert.equal(tx.value, 1000n);
  assert.equal(tx.nonce, 0);

  const final = await settle(w.id, r.body.transactionId);
  const receipt = await rpc<{ blockNumber: string; blockHash: string; status: string }>(
    anvil.rpcUrl,
    'eth_getTransactionReceipt',
    [r.body.txHash],
  );
  assert.equal(final.status, 'confirmed');
  assert.equal(final.hash, r.body.txHash);
  assert.equal(final.blockNumber, String(BigInt(receipt.blockNumber)));
  assert.equal(final.blockHash, receipt.blockHash);
  assert.deepEqual(
    [final.intentKind, final.type, final.chainId, final.to, final.value],
    ['transfer', 'EVM', '31337', RECIPIENT, '1000'],
  );
  const afterBalance = BigInt(await rpc<string>(anvil.rpcUrl, 'eth_getBalance', [RECIPIENT, 'latest']));
  assert.equal(afterBalance - before, 1000n);
});

/** The enclave's effect records of a wallet (key store schema 3), read on a read-only connection of the test's own. */
function effectRecordsOf(walletId: string): Array<{ effect_key: string; message_sha256: Buffer }> {
  const db = new Database(path.join(svc.dataDir, 'enclave', 'keys.db'), { readonly: true });
  try {
    return db
      .prepare('SELECT effect_key, message_sha256 FROM effect_signatures WHERE wallet_id = ? ORDER BY effect_key')
      .all(walletId) as Array<{ effect_key: string; message_sha256: Buffer }>;
  } finally {
    db.close();
  }
}

test("the payment's digest is signed under its sign effect's key, recorded by the enclave; a sign-only transfer has none", async () => {
  const w = await newWallet();
  const r = await svc.v1(partner.secret, 'POST', `/wallets/${w.id}/transfer`, {
    to: RECIPIENT,
    value: '7',
    chainId: '31337',
  });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  // What the enclave signed: the EIP-1559 signing hash of the transaction as broadcast, without its signature.
  const { r: _r, s: _s, v: _v, yParity: _yParity, ...unsigned } = parseTransaction(r.body.signedTransaction);
  const digest = keccak256(serializeTransaction(unsigned as TransactionSerializable));
  const sha256 = createHash('sha256')
    .update(Buffer.from(digest.slice(2), 'hex'))
    .digest();
  // The actor host's key of the sign effect: the payment's id, the spawn's step (1), its first effect (0).
  assert.deepEqual(effectRecordsOf(w.id), [{ effect_key: `${r.body.transactionId}:1:0`, message_sha256: sha256 }]);
  await settle(w.id, r.body.transactionId);

  const signOnly = await svc.v1(partner.secret, 'POST', `/wallets/${w.id}/transfer`, {
    to: RECIPIENT,
    value: '7',
    chainId: '31337',
    broadcast: false,
  });
  assert.equal(signOnly.status, 200, JSON.stringify(signOnly.body));
  assert.equal(effectRecordsOf(w.id).length, 1, 'no actor, no effect key: nothing recorded');
});

test('an ERC-20 transfer moves the tokens; the record carries the token address', async () => {
  const w = await newWallet();
  const mint = encodeFunctionData({
    abi: TestToken.abi as never,
    functionName: 'mint',
    args: [w.address, 5_000_000n],
  } as never);
  const minter = privateKeyToAccount(anvil.fundedKeys[1]!);
  // anvil signs for its own dev accounts.
  await rpc(anvil.rpcUrl, 'eth_sendTransaction', [{ from: minter.address, to: token, data: mint }]);
  await mine(anvil.rpcUrl, 1);
  assert.equal(await balanceOf(token, w.address), 5_000_000n);

  const r = await svc.v1(partner.secret, 'POST', `/wallets/${w.id}/transfer`, {
    to: RECIPIENT,
    value: '1250000',
    chainId: '31337',
    tokenAddress: token,
  });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const final = await settle(w.id, r.body.transactionId);
  assert.equal(final.status, 'confirmed');
  assert.equal(final.tokenAddress, token);
  assert.equal(await balanceOf(token, RECIPIENT), 1_250_000n);
  assert.equal(await balanceOf(token, w.address), 3_750_000n);
});

test('a broadcast sign-transaction that reverts on-chain becomes reverted, with the spec fields of its record', async () => {
  const w = await newWallet();
  const r = await broadcastReverting(w.id, 0);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.equal(r.headers.get('x-transaction-id'), r.body.transactionId);
  const final = await settle(w.id, r.body.transactionId);
  assert.equal(final.status, 'reverted');
  assert.equal(final.failureStage, undefined);
  assert.ok(final.blockNumber);
  assert.deepEqual(
    [final.intentKind, final.chainId, final.to, final.value, final.tokenAddress],
    ['sign_transaction', '31337', reverter, '0', undefined],
  );
  const receipt = await rpc<{ status: string }>(anvil.rpcUrl, 'eth_getTransactionReceipt', [r.body.txHash]);
  assert.equal(receipt.status, '0x0');
});

test('a broadcast sign-transaction must take the next nonce: a used or a future one is refused at admission, with no record', async () => {
  const w = await newWallet();
  for (const nonce of [1, 5]) {
    const r = await broadcastReverting(w.id, nonce);
    assert.equal(r.status, 400, JSON.stringify(r.body));
    assert.equal(r.body.code, 'INVALID_REQUEST');
    assert.equal(r.body.field, 'body.transaction.nonce');
    assert.equal(r.body.expectedNonce, 0);
  }
  const first = await broadcastReverting(w.id, 0);
  assert.equal(first.status, 200, JSON.stringify(first.body));
  await settle(w.id, first.body.transactionId);
  const used = await broadcastReverting(w.id, 0);
  assert.equal(used.status, 400, JSON.stringify(used.body));
  assert.equal(used.body.expectedNonce, 1);
  const list = await svc.v1(partner.secret, 'GET', `/wallets/${w.id}/transactions`);
  assert.equal(list.body.data.length, 1, 'refused admissions leave no record');
});

test('an unfunded wallet fails at broadcast with INSUFFICIENT_NATIVE_BALANCE; the answer names the record', async () => {
  const w = await newWallet(0n);
  const r = await svc.v1(partner.secret, 'POST', `/wallets/${w.id}/transfer`, {
    to: RECIPIENT,
    value: '1',
    chainId: '31337',
  });
  assert.equal(r.status, 400, JSON.stringify(r.body));
  assert.equal(r.body.code, 'INSUFFICIENT_NATIVE_BALANCE');
  assert.ok(r.body.transactionId);
  assert.equal(r.headers.get('x-transaction-id'), r.body.transactionId);
  assert.ok(r.body.signedTransaction, 'signed before the node refused it');
  const rec = await record(w.id, r.body.transactionId);
  assert.deepEqual(
    [rec.body.status, rec.body.failureStage, rec.body.failureCode],
    ['failed', 'broadcast', 'INSUFFICIENT_NATIVE_BALANCE'],
  );
});

test('while a payment is pending the wallet is held: 409 WALLET_TRANSACTION_UNRESOLVED, not queued', async () => {
  const w = await newWallet();
  await setAutomine(anvil.rpcUrl, false);
  try {
    const first = await svc.v1(partner.secret, 'POST', `/wallets/${w.id}/transfer`, {
      to: RECIPIENT,
      value: '1',
      chainId: '31337',
    });
    assert.equal(first.status, 200, JSON.stringify(first.body));
    const second = await svc.v1(partner.secret, 'POST', `/wallets/${w.id}/transfer`, {
      to: RECIPIENT,
      value: '2',
      chainId: '31337',
    });
    assert.equal(second.status, 409);
    assert.equal(second.body.code, 'WALLET_TRANSACTION_UNRESOLVED');
    assert.equal(second.body.blockingTransactionId, first.body.transactionId);
    const list = await svc.v1(partner.secret, 'GET', `/wallets/${w.id}/transactions`);
    assert.equal(list.body.data.length, 1, 'the refused transfer left no record');
    await mine(anvil.rpcUrl, 1);
  } finally {
    await setAutomine(anvil.rpcUrl, true);
  }
  const lists = await svc.v1(partner.secret, 'GET', `/wallets/${w.id}/transactions`);
  const final = await settle(w.id, lists.body.data[0].transactionId);
  assert.equal(final.status, 'confirmed');
  const third = await svc.v1(partner.secret, 'POST', `/wallets/${w.id}/transfer`, {
    to: RECIPIENT,
    value: '3',
    chainId: '31337',
  });
  assert.equal(third.status, 200, JSON.stringify(third.body));
  assert.equal(parseTransaction(third.body.signedTransaction).nonce, 1);
});

test('history: newest first, filters, cursor; another partner sees a 404 identical to a missing record', async () => {
  const w = await newWallet();
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) {
    const r = await svc.v1(partner.secret, 'POST', `/wallets/${w.id}/transfer`, {
      to: RECIPIENT,
      value: String(i + 1),
      chainId: '31337',
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    ids.push(r.body.transactionId);
    await settle(w.id, r.body.transactionId);
  }
  const page1 = await svc.v1(partner.secret, 'GET', `/wallets/${w.id}/transactions?limit=2`);
  assert.equal(page1.status, 200);
  assert.deepEqual(
    page1.body.data.map((d: { transactionId: string }) => d.transactionId),
    [ids[2], ids[1]],
  );
  assert.equal(page1.body.pagination.hasMore, true);
  const page2 = await svc.v1(
    partner.secret,
    'GET',
    `/wallets/${w.id}/transactions?limit=2&cursor=${page1.body.pagination.cursor}`,
  );
  assert.deepEqual(
    page2.body.data.map((d: { transactionId: string }) => d.transactionId),
    [ids[0]],
  );
  assert.equal(page2.body.pagination.hasMore, false);
  const filtered = await svc.v1(
    partner.secret,
    'GET',
    `/wallets/${w.id}/transactions?status=confirmed&intentKind=transfer`,
  );
  assert.equal(filtered.body.data.length, 3);
  const none = await svc.v1(partner.secret, 'GET', `/wallets/${w.id}/transactions?intentKind=sign_transaction`);
  assert.equal(none.body.data.length, 0);

  const other = await svc.newPartner();
  const theirs = await svc.v1(other.secret, 'GET', `/wallets/${w.id}/transactions/${ids[0]}`);
  const missing = await svc.v1(
    partner.secret,
    'GET',
    `/wallets/${w.id}/transactions/00000000-0000-4000-8000-000000000000`,
  );
  assert.equal(theirs.status, 404);
  assert.equal(missing.status, 404);
  const strip = (b: Record<string, unknown>) => ({ ...b, requestId: undefined });
  assert.deepEqual(strip(theirs.body), strip(missing.body));
});

test('bad transfer input answers 4xx naming the problem and records nothing', async () => {
  const w = await newWallet();
  const cases: Array<[Record<string, unknown>, number, string]> = [
    [{ to: '0x1234', value: '1', chainId: '31337' }, 400, 'to'],
    [{ to: RECIPIENT, value: '0', chainId: '31337' }, 400, 'value'],
    [{ to: RECIPIENT, value: '-1', chainId: '31337' }, 400, 'value'],
    [{ to: RECIPIENT, value: '1.5', chainId: '31337' }, 400, 'value'],
    [{ to: RECIPIENT, value: '1', chainId: '999999' }, 400, 'chainId'],
    [{ to: RECIPIENT, value: '1' }, 400, 'chainId'],
    [{ to: RECIPIENT, value: '1', chainId: '31337', kind: 'ERC20' }, 400, 'tokenAddress'],
    [{ to: RECIPIENT, value: '1', chainId: '31337', kind: 'SPL', tokenAddress: token }, 400, 'kind'],
    [{ to: RECIPIENT, value: '1', chainId: '31337', network: 'SOLANA_DEVNET' }, 400, 'network'],
    [{ to: RECIPIENT, value: '1', chainId: '31337', tokenAddress: '0xnot' }, 400, 'tokenAddress'],
    // An auto-retry transfer needs an Idempotency-Key (the terms are checked after it: test/transfers-auto-retry).
    [{ to: RECIPIENT, value: '1', chainId: '31337', autoRetry: {} }, 400, 'idempotency-key'],
  ];
  for (const [body, status, field] of cases) {
    const r = await svc.v1(partner.secret, 'POST', `/wallets/${w.id}/transfer`, body);
    assert.equal(r.status, status, `${JSON.stringify(body)} → ${r.status} ${JSON.stringify(r.body)}`);
    assert.match(`${r.body.message} ${r.body.field ?? ''}`, new RegExp(field), JSON.stringify(r.body));
  }
  const list = await svc.v1(partner.secret, 'GET', `/wallets/${w.id}/transactions`);
  assert.equal(list.body.data.length, 0);
});

test('broadcast: false builds and signs a transfer only: no record, nothing sent, nothing held', async () => {
  const w = await newWallet();
  const r = await svc.v1(partner.secret, 'POST', `/wallets/${w.id}/transfer`, {
    to: RECIPIENT,
    value: '5',
    chainId: '31337',
    broadcast: false,
  });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.deepEqual(Object.keys(r.body), ['signedTransaction']);
  assert.equal(r.headers.get('x-transaction-id'), null);
  assert.equal(await recoverTransactionAddress({ serializedTransaction: r.body.signedTransaction }), w.address);
  const hash = keccak256(r.body.signedTransaction);
  assert.equal(await rpc(anvil.rpcUrl, 'eth_getTransactionByHash', [hash]), null, 'not broadcast');
  const list = await svc.v1(partner.secret, 'GET', `/wallets/${w.id}/transactions`);
  assert.equal(list.body.data.length, 0);
});

test('estimate-fee previews the EVM fees of a transfer without signing or recording', async () => {
  const w = await newWallet();
  const r = await svc.v1(partner.secret, 'POST', `/wallets/${w.id}/estimate-fee`, {
    to: RECIPIENT,
    value: '1000',
    chainId: '31337',
  });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.equal(r.body.family, 'EVM');
  assert.equal(r.body.gasLimit, '25200', '21,000 gas plus the 20% buffer');
  assert.equal(BigInt(r.body.maxFee), 25200n * BigInt(r.body.maxFeePerGas ?? r.body.gasPrice));
  const list = await svc.v1(partner.secret, 'GET', `/wallets/${w.id}/transactions`);
  assert.equal(list.body.data.length, 0);
});

test('the partner hears send.* and rest.transaction.* webhooks for a confirmed transfer and a reverted broadcast', async () => {
  const cfg = await svc.admin('PUT', `/api-keys/${partner.keyId}/webhook`, {
    url: receiver.url,
    events: [
      'send.broadcasted',
      'send.confirmed',
      'send.failed',
      'rest.transaction.confirmed',
      'rest.transaction.failed',
    ],
  });
  assert.equal(cfg.status, 200, JSON.stringify(cfg.body));
  const w = await newWallet();
  const sent = await svc.v1(partner.secret, 'POST', `/wallets/${w.id}/transfer`, {
    to: RECIPIENT,
    value: '1000',
    chainId: '31337',
  });
  assert.equal(sent.status, 200, JSON.stringify(sent.body));
  const final = await settle(w.id, sent.body.transactionId);
  const reverted = await broadcastReverting(w.id, 1);
  assert.equal(reverted.status, 200, JSON.stringify(reverted.body));
  await settle(w.id, reverted.body.transactionId);
  await receiver.waitFor(
    (r) => r.some((d) => JSON.parse(d.rawBody).type === 'rest.transaction.failed'),
    'rest.transaction.failed',
  );
  const events = receiver.received.map((d) => JSON.parse(d.rawBody) as { type: string; data: Record<string, any> });
  const ofTransfer = events.filter(
    (e) => e.data.transactionId === sent.body.transactionId || e.data.txHash === sent.body.txHash,
  );
  assert.deepEqual(ofTransfer.map((e) => e.type).sort(), [
    'rest.transaction.confirmed',
    'send.broadcasted',
    'send.confirmed',
  ]);
  const confirmed = ofTransfer.find((e) => e.type === 'rest.transaction.confirmed')!;
  assert.deepEqual(
    [
      confirmed.data.walletId,
      confirmed.data.intentKind,
      confirmed.data.hash,
      confirmed.data.blockNumber,
      confirmed.data.blockHash,
    ],
    [w.id, 'transfer', sent.body.txHash, final.blockNumber, final.blockHash],
  );
  assert.equal(ofTransfer.find((e) => e.type === 'send.broadcasted')!.data.evmChainId, '31337');
  const failed = events.find((e) => e.type === 'rest.transaction.failed')!;
  assert.equal(failed.data.transactionId, reverted.body.transactionId);
  assert.equal(failed.data.status, 'reverted');
  assert.equal(failed.data.intentKind, 'sign_transaction');
});

test('a transfer keeps the EVM fields it fixes and the chain fills the others (type, gasLimit, fees)', async () => {
  const w = await newWallet();
  const block = await rpc<{ baseFeePerGas: string }>(anvil.rpcUrl, 'eth_getBlockByNumber', ['latest', false]);
  const baseFee = BigInt(block.baseFeePerGas);
  // Type 0, everything given: signed exactly so.
  const legacy = await svc.v1(partner.secret, 'POST', `/wallets/${w.id}/transfer`, {
    to: RECIPIENT,
    value: '10',
    chainId: '31337',
    gasPrice: String(baseFee * 3n + 7n),
    gasLimit: '30000',
  });
  assert.equal(legacy.status, 200, JSON.stringify(legacy.body));
  const tx0 = parseTransaction(legacy.body.signedTransaction);
  assert.equal(tx0.type, 'legacy');
  assert.equal(tx0.gasPrice, baseFee * 3n + 7n);
  assert.equal(tx0.gas, 30000n);
  assert.equal((await settle(w.id, legacy.body.transactionId)).status, 'confirmed');
  // Type 2 with only a tip: kept; the cap is the chain's (twice the base fee plus the tip); the gas limit estimated.
  const tip = await svc.v1(partner.secret, 'POST', `/wallets/${w.id}/transfer`, {
    to: RECIPIENT,
    value: '11',
    chainId: '31337',
    maxPriorityFeePerGas: '1234',
  });
  assert.equal(tip.status, 200, JSON.stringify(tip.body));
  const tx2 = parseTransaction(tip.body.signedTransaction);
  assert.equal(tx2.type, 'eip1559');
  assert.equal(tx2.maxPriorityFeePerGas, 1234n);
  // The cap is twice a recent block's base fee plus the tip (the fee data may be a second old: the quote is shared).
  const head = Number(await rpc<string>(anvil.rpcUrl, 'eth_blockNumber'));
  const recent = new Set<bigint>();
  for (let n = Math.max(0, head - 30); n <= head; n++) {
    const b = await rpc<{ baseFeePerGas: string }>(anvil.rpcUrl, 'eth_getBlockByNumber', [
      `0x${n.toString(16)}`,
      false,
    ]);
    recent.add(BigInt(b.baseFeePerGas));
  }
  assert.ok(recent.has((tx2.maxFeePerGas! - 1234n) / 2n), `${tx2.maxFeePerGas} is 2 × a recent base fee + 1234`);
  assert.equal(tx2.gas, (21000n * 6n + 4n) / 5n, 'estimated 21000 plus 20%');
  assert.equal(tx2.nonce, 1);
  assert.equal((await settle(w.id, tip.body.transactionId)).status, 'confirmed');
  // estimate-fee prices the same body.
  const est = await svc.v1(partner.secret, 'POST', `/wallets/${w.id}/estimate-fee`, {
    to: RECIPIENT,
    value: '1',
    chainId: '31337',
    type: 2,
    maxFeePerGas: '5000000000',
    maxPriorityFeePerGas: '2',
    gasLimit: '50000',
  });
  assert.equal(est.status, 200, JSON.stringify(est.body));
  assert.equal(est.body.maxFeePerGas, '5000000000');
  assert.equal(est.body.gasLimit, '50000');
  assert.equal(est.body.maxFee, String(50000n * 5000000000n));
});

test("a transfer's nonce must be the wallet's next one; mixed fee models are refused before anything is signed", async () => {
  const w = await newWallet();
  const send = (extra: object) =>
    svc.v1(partner.secret, 'POST', `/wallets/${w.id}/transfer`, {
      to: RECIPIENT,
      value: '3',
      chainId: '31337',
      ...extra,
    });
  const ahead = await send({ nonce: 5 });
  assert.equal(ahead.status, 400);
  assert.equal(ahead.body.field, 'body.nonce');
  assert.equal(ahead.body.expectedNonce, 0);
  for (const [extra, field] of [
    [{ type: 2, gasPrice: '1' }, 'body.gasPrice'],
    [{ type: 0, maxFeePerGas: '1' }, 'body.maxFeePerGas'],
    [{ maxFeePerGas: '5', maxPriorityFeePerGas: '6' }, 'body.maxPriorityFeePerGas'],
    [{ gasLimit: '100' }, 'body.gasLimit'],
  ] as const) {
    const r = await send(extra);
    assert.equal(r.status, 400, JSON.stringify(extra));
    assert.equal(r.body.field, field, JSON.stringify(r.body));
  }
  assert.equal((await svc.v1(partner.secret, 'GET', `/wallets/${w.id}/transactions`)).body.data.length, 0);
  const next = await send({ nonce: 0 });
  assert.equal(next.status, 200, JSON.stringify(next.body));
  assert.equal(parseTransaction(next.body.signedTransaction).nonce, 0);
  assert.equal((await settle(w.id, next.body.transactionId)).status, 'confirmed');
});
