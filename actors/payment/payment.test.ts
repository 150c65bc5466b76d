/**
 * The payment actor, its record and its events, run by the real host on a real SQLite file through the payment
 * service, against a chain double whose node answers the test scripts (the real nodes are in
 * test/transfers-evm.spec.ts and test/transfers-solana.spec.ts). What is proved here is the machine's rule for each
 * node answer, including the ones a real node rarely gives on demand (no answer at all, a crash mid-signing).
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { createChainRegistry } from '../../api/chain-registry.ts';
import type { Principal } from '../../api/plugins/auth.ts';
import { createHoldsAdmin } from '../../api/services/holds-admin.ts';
import { createPaymentService } from '../../api/services/payments.ts';
import { deriveEvmAddress } from '../../chains/evm/derive-address.ts';
import type { EvmPaymentPayload } from '../../chains/evm/evm-payments.ts';
import { extractEvmTransferFacts } from '../../chains/evm/extract-evm-transfer-facts.ts';
import {
  ChainRpcError,
  type Observation,
  type ObserveItem,
  type PaymentChain,
  type TransferIntent,
} from '../../chains/payment-chain.ts';
import type { SolanaPaymentPayload } from '../../chains/solana/solana-payments.ts';
import { type EnclaveClient, EnclaveClientError } from '../../enclave/client.ts';
import type { EnclaveOps } from '../../enclave/protocol.ts';
import { createStore, type Store } from '../../store/index.ts';
import { createActorHost } from '../host/host.ts';
import type { PolicySource } from '../signing/policy/policy-ports.ts';
import { validatePolicy } from '../signing/policy/validate-policy.ts';
import {
  allowAllSignatures,
  createSignatureGate,
  holdsNotWired,
  type SignaturePolicy,
} from '../signing/signature-policy.ts';
import { createWalletSigner } from '../signing/wallet-signer.ts';
import { createChainPoller } from './chain-poller.ts';
import type { PaymentContext, PaymentPayload, SignedPayment } from './payment.machine.ts';
import { cancelPreparedStep, signPreparedStep } from './prepared-step.ts';
import { createReplacementAuthority } from './replacement-authority.ts';
import { createPaymentSigning } from './sign-payment.ts';
import { createStepAuthority } from './step-authority.ts';

/** The payloads of this project's payment families, as the sign effect receives them. */
type Payload = EvmPaymentPayload | SolanaPaymentPayload;

import { createPaymentDefinition } from './payment-definition.ts';

const ADDRESS = '0x00000000000000000000000000000000000000A1';
const principal: Principal = {
  keyId: 'key',
  projectId: 'proj',
  environment: 'development',
  plan: 'enterprise',
  rateLimitPerMinute: 1000,
};

/** A chain whose node answers what the test sets: `broadcastAnswer` per call, `seen` per hash. */
function scriptedChain() {
  const state = {
    broadcasts: [] as string[],
    broadcastAnswer: (): void => undefined,
    seen: new Map<string, Observation>(),
    observed: [] as ObserveItem[][],
    /** What the node says of fees and the wallet's balance when an auto-retry replacement is priced. */
    market: { baseFee: 1_000_000_000n, tip: 1_000_000_000n, gasPrice: 2_000_000_000n, balance: 10n ** 18n },
  };
  const chain: PaymentChain = {
    family: 'EVM',
    key: 'evm:31337',
    environment: 'any',
    async buildTransfer(_from: string, intent: TransferIntent) {
      return {
        family: 'EVM',
        chainId: 31337,
        type: 2,
        to: intent.to,
        value: intent.value,
        data: '0x',
        gasLimit: '25200',
        maxFeePerGas: '2000000000',
        maxPriorityFeePerGas: '1000000000',
      };
    },
    async estimateFee() {
      throw new Error('not used');
    },
    async pendingNonce() {
      return 7;
    },
    async broadcast(signed: string) {
      state.broadcasts.push(signed);
      state.broadcastAnswer();
    },
    async checkPartnerTransaction() {},
    async replacementMarket() {
      return state.market;
    },
    async observe(items: readonly ObserveItem[]) {
      state.observed.push([...items]);
      const observations = new Map<string, Observation>();
      for (const i of items) {
        const o = state.seen.get(i.hash);
        if (o) observations.set(i.hash, o);
      }
      return { observations, roundTrips: 1 };
    },
  };
  return { chain, state };
}

function setup(
  opts: {
    monitorWindowMs?: number;
    sign?: (p: PaymentPayload) => Promise<SignedPayment>;
    file?: string;
    stopDrainMs?: number;
    /**
     * Sign as production does (api/server.ts): the payment signing over the wallet signer over this enclave, for
     * wallet w1 seeded with `walletKey` (public key hex, uncompressed secp256k1).
     */
    enclave?: Pick<EnclaveClient, 'sign'>;
    walletKey?: string;
    /**
     * Auto-retry replacements: asked of this policy (the one decision point) through the replacement authority, as
     * production wires it, for API key `key` of project `proj`; due 20 ms after an attempt's send.
     */
    policy?: SignaturePolicy;
    /** The service's decision point (createSignatureGate) over this store, reading these policies. */
    policies?: PolicySource;
    /** With `policies`: holds resolved by this store's approvals (reviews), as the service wires them. */
    approvals?: boolean;
  } = {},
) {
  const file = opts.file ?? path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'wcs-pay-')), 'service.db');
  const store = createStore(file);
  if (!opts.file) seed(store, opts.walletKey);
  const gate = opts.policies
    ? createSignatureGate({
        policies: opts.policies,
        holds: opts.approvals ? store.approvals : holdsNotWired,
        spend: store.spend,
        decisions: store.policyDecisions,
        writer: store.writer,
      })
    : undefined;
  const policy = opts.policy ?? gate;
  const { chain, state } = scriptedChain();
  const chains = createChainRegistry(
    { evm: [{ chainId: 31337, rpcUrl: 'http://127.0.0.1:1', environment: 'any' }] },
    () => chain,
  );
  const signed: Payload[] = [];
  let n = 0;
  const sign =
    opts.sign ??
    (async (p: PaymentPayload) => {
      signed.push(p as Payload);
      n += 1;
      return { signedTransaction: `0xsigned${n}`, hash: `0xhash${n}` };
    });
  const apiKeys = {
    get: (id: string) =>
      id === 'key'
        ? {
            id,
            projectId: 'proj',
            environment: 'development' as const,
            secretHash: 'h',
            createdAt: 'c',
            rotatedAt: null,
          }
        : undefined,
  };
  const paymentActors = createPaymentDefinition({
    transactions: store.transactions,
    outbox: store.outbox,
    idempotency: store.idempotency,
    sign: opts.enclave
      ? createPaymentSigning(createWalletSigner({ wallets: store.wallets, enclave: opts.enclave }))
      : (i) => sign(i.payload),
    chain: (k) => chains.get(k),
    monitorWindowMs: opts.monitorWindowMs ?? 60_000,
    replacementDelayMs: 20,
    spend: store.spend,
    // A prepared step's SIGN, decided as production wires it (api/server.ts), when a policy is given.
    ...(gate ? { stepAuthority: createStepAuthority({ apiKeys, wallets: store.wallets, policy: gate }) } : {}),
    ...(policy
      ? {
          authority: createReplacementAuthority({
            apiKeys: {
              get: (id) =>
                id === 'key'
                  ? {
                      id,
                      projectId: 'proj',
                      environment: 'development',
                      secretHash: 'h',
                      createdAt: 'c',
                      rotatedAt: null,
                    }
                  : undefined,
            },
            wallets: store.wallets,
            policy,
          }),
        }
      : {}),
  });
  const host = createActorHost({
    store: store.actors,
    log: () => undefined,
    retryBaseMs: 5,
    definitions: [paymentActors],
    ...(opts.stopDrainMs !== undefined ? { stopDrainMs: opts.stopDrainMs } : {}),
  });
  const wallet = store.wallets.getAny('w1')!;
  const payments = createPaymentService({
    store,
    host,
    paymentActors,
    signing: {
      paymentWallet: () => store.wallets.getAny('w1')! as ReturnType<typeof store.wallets.getAny> & { type: 'EVM' },
      signAuthorized: async (...args) => args[6](),
      policy: allowAllSignatures,
    },
    signer: {
      keyOf: () => {
        throw new Error('not used: these payments are broadcast');
      },
    },
    chains,
  });
  const clock = { now: Date.now() };
  const poller = createChainPoller({
    chain,
    transactions: store.transactions,
    host,
    intervalMs: 1_000_000,
    rebroadcastMs: 10_000,
    now: () => clock.now,
  });
  return { store, host, paymentActors, payments, poller, state, chain, signed, wallet, file, clock, gate };
}

function seed(store: Store, publicKey?: string) {
  const at = new Date().toISOString();
  store.projects.insert({ id: 'proj', name: 'p', plan: 'enterprise', createdAt: at });
  store.wallets.insert({
    id: 'w1',
    projectId: 'proj',
    type: 'EVM',
    scheme: 'DKLS',
    status: 'creating',
    userIdentifier: 'user-1',
    userIdentifierType: 'CUSTOM_ID',
    createdAt: at,
    updatedAt: at,
    seq: store.wallets.nextSeq(),
  });
  store.wallets.markReady('w1', {
    address: publicKey ? deriveEvmAddress(publicKey) : ADDRESS,
    publicKey: publicKey ?? '04',
    updatedAt: at,
  });
}

const transfer = { to: '0x000000000000000000000000000000000000dEaD', value: '5', chainId: '31337' };

function events(store: Store): Array<{ type: string; data: Record<string, unknown> }> {
  return store.outbox.oldest(100).map((r) => ({ type: r.type, data: JSON.parse(r.data) as Record<string, unknown> }));
}

test('a transfer is recorded, signed with the allocated nonce, broadcast, then confirmed by the poller', async () => {
  const t = setup();
  await t.host.start();
  const answer = await t.payments.transfer(principal, 'w1', transfer);
  assert.ok('transactionId' in answer);
  assert.equal(answer.status, 'submitted');
  assert.equal(answer.txHash, '0xhash1');
  assert.equal(t.state.broadcasts.length, 1);
  const payload = t.signed[0]!;
  assert.equal(payload.family === 'EVM' && payload.transaction.nonce, 7);

  let record = t.store.transactions.getAny(answer.transactionId)!;
  assert.equal(record.status, 'submitted');
  assert.equal(record.unresolved, 1);
  const [attempt] = JSON.parse(record.attempts!) as Array<Record<string, unknown>>;
  assert.deepEqual([attempt!['ordinal'], attempt!['stage'], attempt!['hash']], [0, 'submitted', '0xhash1']);
  assert.equal(attempt!['preparedAt'], record.createdAt);
  assert.equal(typeof attempt!['lastBroadcastAt'], 'string');

  // Not final yet: nothing delivered, the record stays submitted.
  t.state.seen.set('0xhash1', { status: 'included', final: false, success: true, blockNumber: '9', blockHash: '0xb9' });
  assert.equal((await t.poller.pollOnce()).delivered, 0);
  t.state.seen.set('0xhash1', { status: 'included', final: true, success: true, blockNumber: '9', blockHash: '0xb9' });
  const round = await t.poller.pollOnce();
  assert.deepEqual([round.watched, round.delivered], [1, 1]);
  record = t.store.transactions.getAny(answer.transactionId)!;
  assert.deepEqual(
    [record.status, record.blockNumber, record.blockHash, record.unresolved],
    ['confirmed', '9', '0xb9', 0],
  );
  assert.equal((await t.poller.pollOnce()).watched, 0, 'a resolved record is no longer looked up');

  const types = events(t.store).map((e) => e.type);
  assert.deepEqual(types, ['send.broadcasted', 'rest.transaction.confirmed', 'send.confirmed']);
  const confirmed = events(t.store)[1]!.data;
  assert.equal(confirmed['transactionId'], answer.transactionId);
  assert.equal(confirmed['blockNumber'], '9');
  assert.equal(confirmed['partnerId'], 'proj');

  // The next payment takes the next nonce even if the node's pending count lags behind the records.
  const second = await t.payments.transfer(principal, 'w1', transfer);
  assert.ok('transactionId' in second);
  assert.equal(t.signed[1]!.family === 'EVM' && t.signed[1]!.transaction.nonce, 8);
  await t.host.stop();
});

test('one pending payment per wallet and chain: the second is refused with 409, not queued', async () => {
  const t = setup();
  await t.host.start();
  const first = await t.payments.transfer(principal, 'w1', transfer);
  await assert.rejects(
    t.payments.transfer(principal, 'w1', transfer),
    (err: { code?: string; httpStatus?: number; details?: Record<string, unknown> }) => {
      assert.equal(err.code, 'WALLET_TRANSACTION_UNRESOLVED');
      assert.equal(err.httpStatus, 409);
      assert.equal(err.details?.['blockingTransactionId'], 'transactionId' in first ? first.transactionId : undefined);
      return true;
    },
  );
  assert.equal(t.state.broadcasts.length, 1);
  assert.equal(t.store.transactions.list('proj', 'w1', { limit: 10 }).length, 1);
  await t.host.stop();
});

test('two payments sent together for one wallet and chain: one is recorded, the other gets 409 and leaves nothing', async () => {
  const t = setup();
  await t.host.start();
  // Both pass the early check before either is recorded: the check in the recording transaction decides.
  const results = await Promise.allSettled([
    t.payments.transfer(principal, 'w1', transfer),
    t.payments.transfer(principal, 'w1', transfer),
  ]);
  const ok = results.filter((r) => r.status === 'fulfilled');
  const refused = results.filter((r) => r.status === 'rejected') as PromiseRejectedResult[];
  assert.equal(ok.length, 1);
  assert.equal(refused.length, 1);
  assert.equal((refused[0]!.reason as { code?: string }).code, 'WALLET_TRANSACTION_UNRESOLVED');
  assert.equal(t.store.transactions.list('proj', 'w1', { limit: 10 }).length, 1);
  assert.equal(t.signed.length, 1, 'one signature');
  assert.equal(t.state.broadcasts.length, 1);
  await t.host.stop();
});

test('a key another writer already bound to a payment undoes the new record: 409 IDEMPOTENCY_KEY_IN_USE, nothing signed', async () => {
  const t = setup();
  await t.host.start();
  const now = Date.now();
  const name = { projectId: 'proj', key: 'k1', operation: 'transfer', walletId: 'w1', fingerprint: 'f' };
  // What a second writer of the database would have committed first (this process holds no claim for it).
  await t.store.writer.write(() =>
    t.store.idempotency.bind({ ...name, createdAt: now, expiresAt: now + 60_000, transactionId: null }, 'other'),
  );
  const claim = { ...name, createdAt: now, expiresAt: now + 60_000, transactionId: null };
  await assert.rejects(t.payments.transfer(principal, 'w1', transfer, claim), { code: 'IDEMPOTENCY_KEY_IN_USE' });
  assert.equal(t.store.transactions.list('proj', 'w1', { limit: 10 }).length, 0, 'the record went with the key');
  assert.equal(t.store.transactions.holder('w1', 'evm:31337'), undefined, 'nothing holds the wallet');
  assert.equal(t.signed.length, 0);
  assert.equal(claim.transactionId, null);
  await t.host.stop();
});

test("a node's rejection fails the payment at broadcast, with the record id and signed bytes in the answer", async () => {
  const t = setup();
  await t.host.start();
  t.state.broadcastAnswer = () => {
    throw new ChainRpcError('final', 'INSUFFICIENT_NATIVE_BALANCE', 'insufficient funds for gas * price + value');
  };
  const err = (await t.payments.transfer(principal, 'w1', transfer).catch((e: unknown) => e)) as {
    code: string;
    httpStatus: number;
    details: Record<string, unknown>;
  };
  assert.equal(err.code, 'INSUFFICIENT_NATIVE_BALANCE');
  assert.equal(err.httpStatus, 400);
  assert.equal(err.details['failureStage'], 'broadcast');
  assert.equal(err.details['signedTransaction'], '0xsigned1');
  const record = t.store.transactions.getAny(err.details['transactionId'] as string)!;
  assert.deepEqual(
    [record.status, record.failureStage, record.failureCode, record.unresolved],
    ['failed', 'broadcast', 'INSUFFICIENT_NATIVE_BALANCE', 0],
  );
  const failed = events(t.store).find((e) => e.type === 'rest.transaction.failed')!.data;
  assert.deepEqual([failed['status'], failed['failureStage']], ['failed', 'broadcast']);
  assert.ok(events(t.store).some((e) => e.type === 'send.failed'));
  // The hold is released: the wallet can pay again.
  t.state.broadcastAnswer = () => undefined;
  const again = await t.payments.transfer(principal, 'w1', transfer);
  assert.ok('transactionId' in again);
  // The failed payment never consumed its nonce: the next one takes the same.
  assert.equal(t.signed[1]!.family === 'EVM' && t.signed[1]!.transaction.nonce, 7);
  await t.host.stop();
});

test('a node that does not answer leaves the payment pending; the same bytes are sent again until accepted', async () => {
  const t = setup();
  await t.host.start();
  let down = true;
  t.state.broadcastAnswer = () => {
    if (down) throw new ChainRpcError('transient', 'RPC_UNAVAILABLE', 'connection refused');
  };
  const answer = await t.payments.transfer(principal, 'w1', transfer);
  assert.ok('transactionId' in answer);
  assert.equal(answer.status, 'pending');
  assert.equal(t.store.transactions.getAny(answer.transactionId)!.status, 'pending');
  const stage = () =>
    (JSON.parse(t.store.transactions.getAny(answer.transactionId)!.attempts!) as [{ stage: string }])[0].stage;
  assert.equal(stage(), 'submission_unknown', 'sent without a verdict: the node may have it');
  down = false;
  const view = await t.host.waitFor(
    t.paymentActors,
    answer.transactionId,
    (v) => v.value === 'submitted' || (typeof v.value === 'object' && 'submitted' in v.value),
  );
  assert.ok(view);
  assert.deepEqual(new Set(t.state.broadcasts), new Set(['0xsigned1']), 'only the stored bytes are ever sent');
  assert.ok(t.state.broadcasts.length >= 2);
  assert.equal(t.signed.length, 1, 'signed once');
  assert.equal(stage(), 'submitted');
  await t.host.stop();
});

test('after the monitor window the record says failed/monitor_timeout without an event, and a later confirmation wins', async () => {
  const t = setup({ monitorWindowMs: 200 });
  await t.host.start();
  const answer = await t.payments.transfer(principal, 'w1', transfer);
  assert.ok('transactionId' in answer);
  await t.host.waitFor(t.paymentActors, answer.transactionId, (v) =>
    typeof v.value === 'object' ? 'watching' in v.value : v.value === 'watching',
  );
  let record = t.store.transactions.getAny(answer.transactionId)!;
  assert.deepEqual([record.status, record.failureStage, record.unresolved], ['failed', 'monitor_timeout', 1]);
  assert.ok(!events(t.store).some((e) => e.type === 'rest.transaction.failed'), 'no failed event for a timeout');
  await assert.rejects(t.payments.transfer(principal, 'w1', transfer), { code: 'WALLET_TRANSACTION_UNRESOLVED' });

  t.state.seen.set('0xhash1', {
    status: 'included',
    final: true,
    success: false,
    blockNumber: '12',
    blockHash: '0xbc',
  });
  await t.poller.pollOnce();
  record = t.store.transactions.getAny(answer.transactionId)!;
  assert.deepEqual(
    [record.status, record.blockNumber, record.unresolved, record.failureStage],
    ['reverted', '12', 0, null],
  );
  const failed = events(t.store).find((e) => e.type === 'rest.transaction.failed')!.data;
  assert.equal(failed['status'], 'reverted');
  await t.host.stop();
});

test('the poller sends the stored bytes again while the node does not show them, and stops once it does', async () => {
  const t = setup();
  await t.host.start();
  const answer = await t.payments.transfer(principal, 'w1', transfer);
  assert.ok('transactionId' in answer);
  assert.equal(t.state.broadcasts.length, 1);
  assert.equal((await t.poller.pollOnce()).resent, 0, 'first seen missing: not yet');
  t.clock.now += 9_000;
  assert.equal((await t.poller.pollOnce()).resent, 0, 'not missing for 10 s yet');
  t.clock.now += 1_000;
  assert.equal((await t.poller.pollOnce()).resent, 1);
  assert.deepEqual(t.state.broadcasts, ['0xsigned1', '0xsigned1'], 'the same bytes, never new ones');
  assert.equal((await t.poller.pollOnce()).resent, 0, 'sent again only every 10 s');
  t.state.seen.set('0xhash1', { status: 'included', final: false, success: true, blockNumber: '3', blockHash: '0xb3' });
  t.clock.now += 20_000;
  assert.equal((await t.poller.pollOnce()).resent, 0, 'the node shows it: nothing is sent');
  assert.equal(t.signed.length, 1, 'signed once');
  await t.host.stop();
});

test('a transaction proven unable to execute fails with TRANSACTION_EXPIRED and releases the wallet', async () => {
  const t = setup();
  await t.host.start();
  const answer = await t.payments.transfer(principal, 'w1', transfer);
  assert.ok('transactionId' in answer);
  t.state.seen.set('0xhash1', { status: 'dropped', reason: 'expired' });
  await t.poller.pollOnce();
  const record = t.store.transactions.getAny(answer.transactionId)!;
  assert.deepEqual(
    [record.status, record.failureCode, record.unresolved, JSON.parse(record.monitoring!).reason],
    ['failed', 'TRANSACTION_EXPIRED', 0, 'expired'],
  );
  await t.host.stop();
});

test('a signer that refuses leaves the attempt rejected (no signature exists); a timeout leaves it uncertain', async () => {
  for (const [code, stage] of [
    ['WALLET_CLAIMED', 'rejected'],
    ['ENCLAVE_TIMEOUT', 'signing'],
  ] as const) {
    const t = setup({
      sign: async () => {
        throw Object.assign(new Error(`refused: ${code}`), { code });
      },
    });
    await t.host.start();
    await assert.rejects(t.payments.transfer(principal, 'w1', transfer), { code });
    const [row] = t.store.transactions.list('proj', 'w1', { limit: 1 });
    assert.equal(row!.status, 'failed');
    assert.equal((JSON.parse(row!.attempts!) as [{ stage: string }])[0].stage, stage, code);
    await t.host.stop();
  }
});

test('a signing interrupted by a stop is never signed again: the payment fails at mpc_sign on the next start', async () => {
  let calls = 0;
  const t = setup({
    // The signature never comes: the stop gives up waiting for it.
    stopDrainMs: 50,
    sign: () => {
      calls += 1;
      return new Promise<SignedPayment>(() => undefined);
    },
  });
  await t.host.start();
  const pending = t.payments.transfer(principal, 'w1', transfer).catch((e: unknown) => e);
  while (t.store.transactions.list('proj', 'w1', { limit: 1 }).length === 0) await new Promise((r) => setTimeout(r, 5));
  await t.host.stop();
  void pending;
  t.store.close();

  const again = setup({ file: t.file });
  await again.host.start();
  const [row] = again.store.transactions.list('proj', 'w1', { limit: 1 });
  const view = await again.host.waitFor(again.paymentActors, row!.id, (v) => v.status === 'done');
  assert.equal(view.value, 'failed');
  const record = again.store.transactions.getAny(row!.id)!;
  assert.deepEqual(
    [record.status, record.failureStage, record.failureCode, record.unresolved],
    ['failed', 'mpc_sign', 'SIGNING_INTERRUPTED', 0],
  );
  // The attempt stays `signing`: whether a signature exists is unknown, which is why it is never asked again.
  assert.equal((JSON.parse(record.attempts!) as [{ stage: string }])[0].stage, 'signing');
  assert.equal(calls, 1);
  assert.equal(again.signed.length, 0, 'the new start did not sign');
  assert.equal(again.state.broadcasts.length, 0, 'nothing was broadcast');
  await again.host.stop();
});

/** An enclave double that signs as the enclave does (a digest as is, low s, recovery id) and records each request. */
function recordingEnclave() {
  const secret = secp256k1.utils.randomSecretKey();
  const calls: Array<EnclaveOps['sign']['params']> = [];
  let refuse = false;
  const enclave = {
    async sign(params: EnclaveOps['sign']['params']): Promise<EnclaveOps['sign']['result']> {
      calls.push(params);
      if (refuse) {
        throw new EnclaveClientError('ALREADY_SIGNED', 'effect key already used to sign another message', {
          httpStatus: 409,
          transient: false,
        });
      }
      const recovered = secp256k1.sign(Buffer.from(params.message, 'base64'), secret, {
        prehash: false,
        format: 'recovered',
      });
      return { signature: Buffer.from(recovered.subarray(1)).toString('hex'), recovery: recovered[0] as 0 | 1 };
    },
  } satisfies Pick<EnclaveClient, 'sign'>;
  return {
    enclave,
    calls,
    publicKey: Buffer.from(secp256k1.getPublicKey(secret, false)).toString('hex'),
    refuseAsAlreadySigned() {
      refuse = true;
    },
  };
}

test("the sign effect hands its durable key to the enclave: the effect key is the payment's sign intent", async () => {
  const double = recordingEnclave();
  const t = setup({ enclave: double.enclave, walletKey: double.publicKey });
  await t.host.start();
  try {
    const answer = await t.payments.transfer(principal, 'w1', transfer);
    assert.ok('transactionId' in answer);
    assert.equal(answer.status, 'submitted');
    assert.equal(double.calls.length, 1);
    // The host's key of the effect the spawn's step (1) made first (0): `<actorId>:<step>:<n>`.
    assert.equal(double.calls[0]!.effectKey, `${answer.transactionId}:1:0`);
    assert.equal(double.calls[0]!.walletId, 'w1');
    assert.equal(t.state.broadcasts.length, 1);

    // Each payment signs under its own key.
    t.state.seen.set(answer.txHash, {
      status: 'included',
      final: true,
      success: true,
      blockNumber: '9',
      blockHash: '0xb9',
    });
    await t.poller.pollOnce();
    const second = await t.payments.transfer(principal, 'w1', transfer);
    assert.ok('transactionId' in second);
    assert.equal(double.calls[1]!.effectKey, `${second.transactionId}:1:0`);
  } finally {
    await t.host.stop();
  }
});

test('the enclave answering ALREADY_SIGNED fails the payment at mpc_sign like an interrupted signing; never signed again', async () => {
  const double = recordingEnclave();
  double.refuseAsAlreadySigned();
  const t = setup({ enclave: double.enclave, walletKey: double.publicKey });
  await t.host.start();
  let id: string;
  try {
    await assert.rejects(t.payments.transfer(principal, 'w1', transfer), (err: unknown) => {
      const e = err as { code?: string; httpStatus?: number; details?: Record<string, unknown> };
      assert.equal(e.code, 'SIGNING_INTERRUPTED');
      assert.equal(e.httpStatus, 503);
      assert.equal(e.details?.['failureStage'], 'mpc_sign');
      return true;
    });
    id = t.store.transactions.list('proj', 'w1', { limit: 1 })[0]!.id;
    const record = t.store.transactions.getAny(id)!;
    assert.deepEqual(
      [record.status, record.failureStage, record.failureCode, record.unresolved, record.signedTransaction],
      ['failed', 'mpc_sign', 'SIGNING_INTERRUPTED', 0, null],
    );
    assert.match(record.failureMessage!, /already signed another message for this signing step/);
    assert.equal(double.calls.length, 1);
    assert.equal(double.calls[0]!.effectKey, `${id}:1:0`);
    assert.equal(t.state.broadcasts.length, 0, 'nothing was broadcast');
  } finally {
    await t.host.stop();
    t.store.close();
  }

  // A new start leaves it failed: nothing signs it again.
  const again = setup({ file: t.file, enclave: double.enclave });
  await again.host.start();
  try {
    assert.equal(again.host.read(id)?.value, 'failed');
    assert.equal(double.calls.length, 1);
  } finally {
    await again.host.stop();
  }
});

test('a payment stored by machine v1 (nonce only inside the payload) is migrated on load and carries on', async () => {
  const t = setup();
  await t.host.start();
  const answer = await t.payments.transfer(principal, 'w1', transfer);
  assert.ok('transactionId' in answer);
  await t.host.stop();
  // Rewrite the stored state as v1 wrote it: the same context without `nonce` (nor v3's `acceptedAt`).
  const row = t.store.sqlite
    .prepare('select snapshot from actor_snapshots where actor_id = ?')
    .get(answer.transactionId) as { snapshot: string };
  const stored = JSON.parse(row.snapshot) as { value: unknown; context: Record<string, unknown> };
  assert.equal(stored.context['nonce'], 7);
  delete stored.context['nonce'];
  delete stored.context['acceptedAt'];
  delete stored.context['attempts'];
  delete stored.context['preparedAt'];
  t.store.sqlite
    .prepare('update actor_snapshots set snapshot = ?, machine_version = 1 where actor_id = ?')
    .run(JSON.stringify(stored), answer.transactionId);
  t.store.close();

  const again = setup({ file: t.file });
  again.host.checkStoredVersions();
  await again.host.start();
  // It runs on: the confirmation is applied and the state is written back as v3, with the payload's nonce, and as
  // accepted when it was broadcast (it was submitted).
  again.state.seen.set('0xhash1', {
    status: 'included',
    final: true,
    success: true,
    blockNumber: '4',
    blockHash: '0xb4',
  });
  await again.poller.pollOnce();
  const migrated = again.store.sqlite
    .prepare('select snapshot, machine_version as v from actor_snapshots where actor_id = ?')
    .get(answer.transactionId) as { snapshot: string; v: number };
  assert.equal(migrated.v, 4);
  const context = (JSON.parse(migrated.snapshot) as { context: PaymentContext }).context;
  assert.equal(context.nonce, 7);
  assert.equal(context.acceptedAt, context.broadcastAt);
  assert.notEqual(context.acceptedAt, null);
  const record = again.store.transactions.getAny(answer.transactionId)!;
  assert.equal(record.status, 'confirmed');
  // v4's attempt 0, from the v1 state: prepared when the record was made, submitted (a node took it).
  assert.equal(context.preparedAt, Date.parse(record.createdAt));
  assert.deepEqual(JSON.parse(record.attempts!), [
    {
      ordinal: 0,
      stage: 'submitted',
      preparedAt: record.createdAt,
      hash: '0xhash1',
      lastBroadcastAt: new Date(context.broadcastAt!).toISOString(),
    },
  ]);
  await again.host.stop();
});

const meta = { actorId: 'no-such-record' };

test('the v1 migration reads an EVM payload nonce and gives a Solana one null', () => {
  const def = setup().paymentActors;
  const up = def.migrations![0]!.up;
  assert.equal(
    up({ value: 'submitted', context: { payload: { family: 'EVM', transaction: { nonce: 3 } } } }, meta).context[
      'nonce'
    ],
    3,
  );
  assert.equal(
    up({ value: 'submitted', context: { payload: { family: 'SOLANA', transaction: 'AAAA' } } }, meta).context['nonce'],
    null,
  );
});

test('the v2 migration counts a submitted payment as accepted when broadcast, and any other as not yet accepted', () => {
  const def = setup().paymentActors;
  const up = def.migrations!.find((m) => m.from === 2)!.up;
  assert.equal(up({ value: 'submitted', context: { broadcastAt: 5 } }, meta).context['acceptedAt'], 5);
  assert.equal(up({ value: 'watching', context: { broadcastAt: 5 } }, meta).context['acceptedAt'], null);
  assert.equal(up({ value: 'retrying', context: { broadcastAt: 5 } }, meta).context['acceptedAt'], null);
});

test('the v3 migration gives a payment its attempt 0, at the stage its state tells', () => {
  const def = setup().paymentActors;
  const up = def.migrations!.find((m) => m.from === 3)!.up;
  const base = { hash: '0xh', acceptedAt: null, unansweredBroadcasts: 0, failure: null, broadcastAt: 9 };
  const stage = (value: string, context: Record<string, unknown>) =>
    (up({ value, context: { ...base, ...context } }, meta).context['attempts'] as Array<{ stage: string }>)[0]!.stage;
  assert.equal(stage('signing', { hash: null, broadcastAt: null }), 'signing');
  assert.equal(
    stage('failed', { hash: null, failure: { stage: 'mpc_sign', code: 'SIGNING_INTERRUPTED', message: '' } }),
    'signing',
    'an interrupted signing may have signed: uncertain, never rejected',
  );
  assert.equal(
    stage('failed', { hash: null, failure: { stage: 'mpc_sign', code: 'WALLET_CLAIMED', message: '' } }),
    'rejected',
  );
  assert.equal(stage('broadcasting', {}), 'signed');
  assert.equal(stage('released', {}), 'signed');
  assert.equal(stage('retrying', { unansweredBroadcasts: 2 }), 'submission_unknown');
  assert.equal(stage('submitted', { acceptedAt: 9 }), 'submitted');
  assert.equal(stage('confirmed', {}), 'submitted');
  // Without its record (none is found for this id), the preparation time falls back to the first broadcast.
  assert.equal(up({ value: 'submitted', context: base }, meta).context['preparedAt'], 9);
});

test('operator release: a submitted payment keeps its status and stays watched; one being signed is refused for now', async () => {
  let releaseSigning: () => void = () => undefined;
  let signing = 0;
  const t = setup({
    sign: async (p) => {
      signing += 1;
      if (signing === 2) await new Promise<void>((res) => (releaseSigning = res));
      void p;
      return { signedTransaction: `0xsigned-${signing}`, hash: `0xhash-${signing}` };
    },
  });
  const holds = createHoldsAdmin({ store: t.store, host: t.host });
  await t.host.start();
  const first = await t.payments.transfer(principal, 'w1', transfer);
  assert.ok('transactionId' in first);
  assert.equal(first.status, 'submitted');
  await assert.rejects(
    holds.release('w1', { chainKey: 'evm:1', reason: 'r', releasedBy: 'op' }),
    (e: { code?: string }) => e.code === 'HOLD_NOT_FOUND',
  );
  await assert.rejects(
    holds.release('nobody', { chainKey: 'evm:31337', reason: 'r', releasedBy: 'op' }),
    (e: { code?: string }) => e.code === 'WALLET_NOT_FOUND',
  );
  const released = await holds.release('w1', { chainKey: 'evm:31337', reason: 'never mined', releasedBy: 'op' });
  assert.deepEqual(
    [released.transactionId, released.status, released.reason, released.releasedBy],
    [first.transactionId, 'submitted', 'never mined', 'op'],
  );
  let row = t.store.transactions.getAny(first.transactionId)!;
  assert.deepEqual([row.status, row.unresolved, row.watched], ['submitted', 0, 1]);
  assert.equal(JSON.parse(row.monitoring!).operatorRelease.reason, 'never mined');
  assert.deepEqual(
    events(t.store).map((e) => e.type),
    ['send.broadcasted'],
    'a release is no outcome: nothing is sent',
  );

  // The wallet pays again at once; while that payment is being signed, its hold cannot be released.
  const second = t.payments.transfer(principal, 'w1', transfer);
  await new Promise((res) => setTimeout(res, 50));
  await assert.rejects(
    holds.release('w1', { chainKey: 'evm:31337', reason: 'r', releasedBy: 'op' }),
    (e: { code?: string; httpStatus?: number }) => e.code === 'HOLD_NOT_RELEASABLE' && e.httpStatus === 409,
  );
  releaseSigning();
  const secondAnswer = await second;
  assert.ok('status' in secondAnswer);
  assert.equal(secondAnswer.status, 'submitted');

  // The released one is still watched, and still not resent: the chain's answer settles it.
  const broadcasts = t.state.broadcasts.length;
  t.clock.now += 60_000;
  await t.poller.pollOnce();
  t.clock.now += 60_000;
  await t.poller.pollOnce();
  assert.ok(
    t.state.broadcasts.slice(broadcasts).every((b) => b !== '0xsigned-1'),
    'the released payment is not sent again',
  );
  t.state.seen.set('0xhash-1', {
    status: 'included',
    final: true,
    success: true,
    blockNumber: '3',
    blockHash: '0xb3',
  });
  await t.poller.pollOnce();
  row = t.store.transactions.getAny(first.transactionId)!;
  assert.deepEqual([row.status, row.watched, row.blockNumber], ['confirmed', 0, '3']);
  assert.deepEqual(
    events(t.store).map((e) => e.type),
    ['send.broadcasted', 'send.broadcasted', 'rest.transaction.confirmed', 'send.confirmed'],
  );
  await t.host.stop();
});

test('a payment no send of which was answered, first seen confirmed: send.broadcasted still goes out, and the stale send error is gone', async () => {
  const t = setup();
  t.state.broadcastAnswer = () => {
    throw new ChainRpcError('transient', 'RPC_UNAVAILABLE', 'request timed out');
  };
  await t.host.start();
  const answer = await t.payments.transfer(principal, 'w1', transfer);
  assert.ok('transactionId' in answer);
  assert.equal(answer.status, 'pending');
  assert.equal(JSON.parse(t.store.transactions.getAny(answer.transactionId)!.monitoring!).error, 'request timed out');
  t.state.seen.set('0xhash1', { status: 'included', final: true, success: true, blockNumber: '5', blockHash: '0xb5' });
  await t.poller.pollOnce();
  const record = t.store.transactions.getAny(answer.transactionId)!;
  assert.deepEqual([record.status, record.monitoring, record.failureStage], ['confirmed', null, null]);
  assert.deepEqual(
    events(t.store).map((e) => e.type),
    ['send.broadcasted', 'rest.transaction.confirmed', 'send.confirmed'],
  );
  await t.host.stop();
});

test('a released payment stays watched across a restart: its bytes executing later confirm it, with no second failed event', async () => {
  const t = setup();
  await t.host.start();
  t.state.broadcastAnswer = () => {
    throw new ChainRpcError('final', 'INSUFFICIENT_NATIVE_BALANCE', 'insufficient funds for gas * price + value');
  };
  const err = (await t.payments.transfer(principal, 'w1', transfer).catch((e: unknown) => e)) as {
    details: Record<string, unknown>;
  };
  const id = err.details['transactionId'] as string;
  let record = t.store.transactions.getAny(id)!;
  assert.deepEqual([record.status, record.unresolved, record.watched], ['failed', 0, 1]);
  await t.host.stop();
  t.store.close();

  const again = setup({ file: t.file });
  await again.host.start();
  again.state.seen.set('0xhash1', {
    status: 'included',
    final: true,
    success: true,
    blockNumber: '8',
    blockHash: '0xb8',
  });
  const round = await again.poller.pollOnce();
  assert.deepEqual([round.watched, round.resent], [1, 0], 'watched, never resent');
  record = again.store.transactions.getAny(id)!;
  assert.deepEqual([record.status, record.watched, record.failureCode], ['confirmed', 0, null]);
  assert.deepEqual(
    events(again.store).map((e) => e.type),
    // No send.broadcasted for a payment that was released as failed: the partner already heard send.failed.
    ['rest.transaction.failed', 'send.failed', 'rest.transaction.confirmed', 'send.confirmed'],
  );
  await again.host.stop();
});

/** Admits an auto-retry transfer of wallet w1 (as the payment service does once its checks passed); its id. */
async function admitAutoRetry(t: ReturnType<typeof setup>): Promise<string> {
  const id = randomUUID();
  const gate = t.gate;
  await t.host.spawn(t.paymentActors, id, {
    // With the service's decision point: decided in the transaction of the record, counted under the payment's id.
    ...(gate
      ? {
          decide: (transactionId: string) =>
            gate.decideWithin({
              principal: { keyId: 'key', projectId: 'proj', environment: 'development' },
              wallet: t.wallet,
              operation: 'transfer',
              rawSignature: false,
              chainId: '31337',
              facts: () => extractEvmTransferFacts('31337', { to: transfer.to, value: transfer.value, kind: 'NATIVE' }),
              spendRef: transactionId,
            }),
        }
      : {}),
    apiKeyId: 'key',
    wallet: t.wallet,
    chain: t.chain,
    chainRef: '31337',
    intentKind: 'transfer',
    signs: {
      kind: 'transfer',
      unsigned: await t.chain.buildTransfer(t.wallet.address!, {
        to: transfer.to,
        value: transfer.value,
        kind: 'NATIVE',
      }),
      pendingNonce: 7,
    },
    record: { to: transfer.to, value: transfer.value, tokenAddress: null },
    idempotency: null,
    autoRetry: { ceiling: String(25_200n * 20_000_000_000n), expiresAt: Date.now() + 60_000 },
  });
  return id;
}

/** The record's `autoRetry` and attempts, as the single-record lookup shows them. */
function retryOf(t: ReturnType<typeof setup>, id: string) {
  const row = t.store.transactions.getAny(id)!;
  return {
    row,
    retry: JSON.parse(row.autoRetry!) as { state: string; reason: string | null; bumpCount: number },
    attempts: JSON.parse(row.attempts!) as Array<{ ordinal: number; stage: string; hash: string | null }>,
  };
}

test('auto-retry: the first signature refused or uncertain fails the payment at mpc_sign, stops the retry and releases the wallet', async () => {
  for (const [code, stage, reason] of [
    ['WALLET_CLAIMED', 'rejected', 'SIGNING_AUTHORITY_ENDED'],
    ['POLICY_DENIED', 'rejected', 'SIGNING_AUTHORITY_ENDED'],
    ['ENCLAVE_UNAVAILABLE', 'rejected', 'SIGNING_FAILED'],
    ['ENCLAVE_TIMEOUT', 'signing', 'SIGNING_UNCERTAIN'],
  ] as const) {
    const t = setup({
      sign: async () => {
        throw Object.assign(new Error(`refused: ${code}`), { code });
      },
    });
    await t.host.start();
    const id = await admitAutoRetry(t);
    await t.host.waitFor(t.paymentActors, id, (v) => v.status === 'done');
    const { row, retry, attempts } = retryOf(t, id);
    assert.deepEqual([row.status, row.failureStage, row.failureCode], ['failed', 'mpc_sign', code]);
    assert.deepEqual([retry.state, retry.reason, retry.bumpCount], ['stopped', reason, 0], code);
    assert.deepEqual(
      attempts.map((a) => [a.stage, a.hash]),
      [[stage, null]],
    );
    assert.equal(row.unresolved, 0, 'the wallet is released');
    assert.equal(t.store.transactions.holder('w1', 'evm:31337'), undefined);
    assert.equal(t.state.broadcasts.length, 0, 'nothing was sent');
    await t.host.stop();
  }
});

test('auto-retry: a first send the node refuses fails the payment at broadcast and stops the retry; the bytes stay watched', async () => {
  const t = setup();
  await t.host.start();
  t.state.broadcastAnswer = () => {
    throw new ChainRpcError('final', 'INSUFFICIENT_NATIVE_BALANCE', 'insufficient funds for gas * price + value');
  };
  const id = await admitAutoRetry(t);
  const view = await t.host.waitFor(t.paymentActors, id, (v) => v.value === 'released');
  const { row, retry } = retryOf(t, id);
  assert.deepEqual(
    [row.status, row.failureStage, row.failureCode],
    ['failed', 'broadcast', 'INSUFFICIENT_NATIVE_BALANCE'],
  );
  assert.deepEqual([retry.state, retry.reason, retry.bumpCount], ['stopped', 'INSUFFICIENT_NATIVE_BALANCE', 0]);
  assert.deepEqual([row.unresolved, row.watched], [0, 1], 'released, still watched');
  assert.equal(view.context.wakeAt, null, 'no replacement is prepared');
  await t.host.stop();
});

test('auto-retry: a policy that denies, or asks for a review of, the next replacement stops the retry before it is signed', async () => {
  for (const [decision, reason] of [
    [{ effect: 'deny', reason: 'over the daily cap' }, 'POLICY_DENIED'],
    [{ effect: 'review', details: { reviewId: 'r1' } }, 'POLICY_REVIEW_REQUIRED'],
  ] as const) {
    const asked: string[] = [];
    const t = setup({
      policy: {
        decide: (r) => {
          asked.push(`${r.operation}:${r.chainId}:${r.principal.keyId}`);
          return decision;
        },
      },
    });
    await t.host.start();
    const id = await admitAutoRetry(t);
    const view = await t.host.waitFor(t.paymentActors, id, (v) => v.context.autoRetry?.state !== 'active');
    assert.equal(view.value, 'submitted', 'still watched');
    const { row, retry, attempts } = retryOf(t, id);
    assert.deepEqual([retry.state, retry.reason, retry.bumpCount], ['stopped', reason, 0]);
    assert.deepEqual(
      attempts.map((a) => [a.ordinal, a.stage]),
      [[0, 'submitted']],
    );
    assert.equal(t.signed.length, 1, 'no replacement was signed');
    assert.deepEqual(asked, ['transfer:31337:key'], 'asked once, as a transfer of the key that admitted it');
    assert.equal(row.status, 'submitted');
    assert.equal(row.unresolved, 1, 'the original may still execute: the wallet stays held');
    assert.equal(view.context.wakeAt, null, 'nothing more is prepared');
    await t.host.stop();
  }
});

test('auto-retry: a replacement whose signature is refused for the policy stops the retry; the original keeps the hold', async () => {
  let n = 0;
  const t = setup({
    policy: allowAll(),
    sign: async () => {
      n += 1;
      if (n === 1) return { signedTransaction: '0xsigned1', hash: '0xhash1' };
      throw Object.assign(new Error('needs an approval'), { code: 'POLICY_REVIEW_REQUIRED' });
    },
  });
  await t.host.start();
  const id = await admitAutoRetry(t);
  await t.host.waitFor(t.paymentActors, id, (v) => v.context.autoRetry?.state !== 'active');
  const { row, retry, attempts } = retryOf(t, id);
  assert.deepEqual([retry.state, retry.reason, retry.bumpCount], ['stopped', 'SIGNING_AUTHORITY_ENDED', 1]);
  assert.deepEqual(
    attempts.map((a) => [a.ordinal, a.stage, a.hash]),
    [
      [0, 'submitted', '0xhash1'],
      [1, 'rejected', null],
    ],
  );
  assert.deepEqual([row.status, row.unresolved], ['submitted', 1]);
  assert.deepEqual(t.state.broadcasts, ['0xsigned1'], 'only the original was sent');
  await t.host.stop();
});

function allowAll(): SignaturePolicy {
  return { decide: () => ({ effect: 'allow' }) };
}

/** Permissions on for key `key`, with one active guardrail: at most `cap` wei a day on chain 31337. */
function capped(cap: bigint): PolicySource {
  const checked = validatePolicy({
    name: 'cap',
    layer: 'guardrail',
    scope: { walletType: 'EVM', networks: ['eip155:31337'] },
    rules: [
      {
        id: 'daily',
        effect: 'deny',
        actions: ['transfer'],
        conditions: [{ spend: { asset: 'native', window: '24h' }, op: 'gt', value: cap.toString() }],
      },
    ],
  });
  assert.ok(checked.valid);
  return {
    permissions: () => ({ enabled: true, approvals: false }),
    activeGuardrails: () => [{ id: 'cap', version: 1, createdAt: 1, document: checked.policy }],
  };
}

/** What the day's window of wallet w1 on chain 31337 has counted of the native coin. */
function spentToday(t: ReturnType<typeof setup>): bigint {
  const day = 86_400_000;
  return t.store.spend.windowTotal(
    {
      apiKeyId: 'key',
      walletId: 'w1',
      network: 'eip155:31337',
      asset: 'native',
      windowMs: day,
      windowStart: Math.floor(Date.now() / day) * day,
    },
    { materialize: false },
  );
}

test('signing policies: an auto-retry payment is decided before each replacement and counted once across them', async () => {
  const t = setup({ policies: capped(12n) });
  await t.host.start();
  const id = await admitAutoRetry(t);
  const view = await t.host.waitFor(t.paymentActors, id, (v) => (v.context.autoRetry?.bumpCount ?? 0) >= 2);
  assert.ok(view.context.autoRetry!.bumpCount >= 2);
  assert.equal(spentToday(t), 5n, 'the transfer of 5 wei, once');
  const entries = t.store.spend.entriesOf('key', id);
  assert.deepEqual(
    entries.map((e) => [e.network, e.asset, e.amount, e.releasedAt]),
    [['eip155:31337', 'native', '5', null]],
  );
  const log = t.store.policyDecisions.between('key', 0, Number.MAX_SAFE_INTEGER, 100);
  assert.ok(log.length >= 3, 'the admission and each replacement were decided');
  assert.ok(log.every((r) => r.effect === 'allow' && r.spendRef === id));
  await t.host.stop();
});

test('signing policies: a replacement over the cap stops the retry with POLICY_DENIED; the admitted amount stays counted', async () => {
  // 5 is counted at admission; the replacement re-checks 5 + 0 (its own amount is not counted twice) against 4.
  let cap = 12n;
  const source = capped(12n);
  const t = setup({
    policies: { permissions: source.permissions, activeGuardrails: () => capped(cap).activeGuardrails('key') },
  });
  await t.host.start();
  const id = await admitAutoRetry(t);
  cap = 4n;
  await t.host.waitFor(t.paymentActors, id, (v) => v.context.autoRetry?.state !== 'active');
  const { retry } = retryOf(t, id);
  assert.deepEqual([retry.state, retry.reason, retry.bumpCount], ['stopped', 'POLICY_DENIED', 0]);
  assert.equal(spentToday(t), 5n, 'attempt 0 was signed and may land: still counted');
  await t.host.stop();
});

test('signing policies: a payment refused at signing (no usable signature) is released; the room is there again', async () => {
  const t = setup({
    policies: capped(12n),
    sign: async () => {
      throw Object.assign(new Error('refused: SIGNING_FAILED'), { code: 'SIGNING_FAILED' });
    },
  });
  await t.host.start();
  const id = await admitAutoRetry(t);
  const view = await t.host.waitFor(t.paymentActors, id, (v) => v.status === 'done');
  assert.equal(view.context.failure?.stage, 'mpc_sign');
  assert.equal(spentToday(t), 0n);
  assert.notEqual(t.store.spend.entriesOf('key', id)[0]!.releasedAt, null);
  await t.host.stop();
});

test('signing policies: a payment refused at its first send stays counted while its bytes may execute; its nonce proven taken by another transaction releases it', async () => {
  const t = setup({ policies: capped(12n) });
  await t.host.start();
  try {
    t.state.broadcastAnswer = () => {
      throw new ChainRpcError('final', 'INSUFFICIENT_NATIVE_BALANCE', 'insufficient funds for gas * price + value');
    };
    const id = await admitAutoRetry(t);
    await t.host.waitFor(t.paymentActors, id, (v) => v.value === 'released');
    assert.equal(spentToday(t), 5n, 'the signed bytes exist and may still execute: counted');
    t.state.seen.set('0xhash1', { status: 'dropped', reason: 'nonce_consumed', winningHash: '0xother' });
    await t.poller.pollOnce();
    const view = await t.host.waitFor(t.paymentActors, id, (v) => v.status === 'done');
    assert.equal(view.context.failure?.code, 'INSUFFICIENT_NATIVE_BALANCE', 'the refusal stands');
    assert.equal(view.context.monitoring?.reason, 'nonce_consumed');
    assert.equal(spentToday(t), 0n, 'no signature of it can execute: released');
    assert.notEqual(t.store.spend.entriesOf('key', id)[0]!.releasedAt, null);
  } finally {
    await t.host.stop();
  }
});

test('signing policies: a payment over the cap is refused at admission with 403 POLICY_DENIED; no record, the decision logged', async () => {
  const t = setup({ policies: capped(4n) });
  await t.host.start();
  await assert.rejects(
    admitAutoRetry(t),
    (err: { code?: string; httpStatus?: number; details?: { deniedBy?: unknown } }) => {
      assert.equal(err.code, 'POLICY_DENIED');
      assert.equal(err.httpStatus, 403);
      assert.deepEqual(err.details?.deniedBy, [{ reason: 'denied-by-rule', policyId: 'cap', ruleId: 'daily' }]);
      return true;
    },
  );
  assert.equal(t.store.transactions.holder('w1', 'evm:31337'), undefined, 'nothing holds the wallet');
  const log = t.store.policyDecisions.between('key', 0, Number.MAX_SAFE_INTEGER, 100);
  assert.deepEqual(
    log.map((r) => [r.effect, r.reason]),
    [['deny', 'denied-by-rule']],
  );
  assert.equal(spentToday(t), 0n);
  await t.host.stop();
});

// --- Prepared steps (yield steps): admitted with their record, nonce and hold, signed only on a durable SIGN.

/** The lending pool a yield step calls (the protocol's Sepolia pool). */
const POOL = '0x6Ae43d3271ff6888e7Fc43Fd7321a503ff738951';
/** ERC-20 `approve(POOL, 1 USDC)`: what a deposit's approval step signs. */
const APPROVE_CALLDATA = `0x095ea7b3${POOL.slice(2).toLowerCase().padStart(64, '0')}${(1_000_000).toString(16).padStart(64, '0')}`;

/**
 * Admits a prepared yield step of wallet w1 on chain 31337 (nonce from the node's pending count: 7). `reserve`: the
 * admission itself is decided (and counts `reserve` wei) by the setup's policy gate, in the record's transaction.
 */
async function prepareStep(t: ReturnType<typeof setup>, id: string = randomUUID(), reserve?: string): Promise<string> {
  const gate = t.gate;
  const view = await t.host.spawn(t.paymentActors, id, {
    ...(gate && reserve
      ? {
          decide: (transactionId: string) =>
            gate.decideWithin({
              principal: { keyId: 'key', projectId: 'proj', environment: 'development' },
              wallet: t.wallet,
              operation: 'transfer',
              rawSignature: false,
              chainId: '31337',
              facts: () => extractEvmTransferFacts('31337', { to: POOL, value: reserve, kind: 'NATIVE' }),
              spendRef: transactionId,
            }),
        }
      : {}),
    apiKeyId: 'key',
    wallet: t.wallet,
    chain: t.chain,
    chainRef: '31337',
    intentKind: 'yield',
    signs: {
      kind: 'transfer',
      unsigned: {
        family: 'EVM',
        chainId: 31337,
        type: 2,
        to: POOL,
        value: '0',
        data: APPROVE_CALLDATA,
        gasLimit: '60000',
        maxFeePerGas: '3000000000',
        maxPriorityFeePerGas: '1000000000',
      },
      pendingNonce: 7,
    },
    record: { to: POOL, value: '0', tokenAddress: null },
    idempotency: null,
    prepared: { operation: 'yield_deposit' },
  });
  assert.equal(view.value, 'prepared');
  assert.equal(view.cancellable, true);
  return id;
}

/** What a prepared step's record shows: its status, hold, hash, nonce and attempt 0's stage. */
function stepRecord(t: ReturnType<typeof setup>, id: string) {
  const row = t.store.transactions.getAny(id)!;
  const [attempt] = JSON.parse(row.attempts!) as [{ stage: string; hash: string | null }];
  return { row, attempt, holder: t.store.transactions.holder('w1', 'evm:31337') };
}

test('prepared step: admitted with its record, nonce and hold, unsigned; SIGN signs exactly that payload, then broadcast and confirmed', async () => {
  const t = setup();
  await t.host.start();
  try {
    // A prepared step keeps one payload under its nonce: auto-retry terms are refused, and nothing is left behind.
    await assert.rejects(
      t.host.spawn(t.paymentActors, randomUUID(), {
        apiKeyId: 'key',
        wallet: t.wallet,
        chain: t.chain,
        chainRef: '31337',
        intentKind: 'yield',
        signs: {
          kind: 'transfer',
          unsigned: await t.chain.buildTransfer(ADDRESS, { to: POOL, value: '0', kind: 'NATIVE' }),
          pendingNonce: 7,
        },
        record: { to: POOL, value: '0', tokenAddress: null },
        idempotency: null,
        prepared: { operation: 'yield_deposit' },
        autoRetry: { ceiling: '1000000000000000', expiresAt: Date.now() + 60_000 },
      }),
      /a prepared step is an EVM payment without auto-retry/,
    );
    assert.equal(t.store.transactions.holder('w1', 'evm:31337'), undefined);
    const id = await prepareStep(t);
    let r = stepRecord(t, id);
    assert.deepEqual(
      [r.row.intentKind, r.row.status, r.row.nonce, r.row.unresolved, r.row.hash, r.attempt.stage, r.holder],
      ['yield', 'pending', 7, 1, null, 'prepared', id],
    );
    // It holds the wallet like any payment: another one is refused, nothing queued.
    await assert.rejects(t.payments.transfer(principal, 'w1', transfer), { code: 'WALLET_TRANSACTION_UNRESOLVED' });
    await new Promise((res) => setTimeout(res, 50));
    assert.equal(t.signed.length, 0, 'nothing is signed on spawn');
    assert.equal(t.state.broadcasts.length, 0);
    const prepared = t.host.read(id)!.context as unknown as PaymentContext;

    const sign = await signPreparedStep(t.host, t.paymentActors, id, { eventId: 'sign-1' });
    assert.equal(sign.outcome, 'signing');
    assert.equal(sign.view.cancellable, false);
    const view = await t.host.waitFor(t.paymentActors, id, (v) => v.value === 'submitted');
    assert.equal(t.signed.length, 1);
    assert.deepEqual(t.signed[0], prepared.payload, 'the exact prepared payload: transaction, nonce and fees');
    assert.equal(t.signed[0]!.family === 'EVM' && t.signed[0]!.transaction.nonce, 7);
    assert.equal(view.context.hash, '0xhash1');
    assert.deepEqual(t.state.broadcasts, ['0xsigned1']);
    // The same SIGN delivered again (same id) and another SIGN once signing: nothing more is signed.
    assert.equal((await signPreparedStep(t.host, t.paymentActors, id, { eventId: 'sign-1' })).outcome, 'signing');
    assert.equal((await signPreparedStep(t.host, t.paymentActors, id)).outcome, 'signing');

    t.state.seen.set('0xhash1', {
      status: 'included',
      final: true,
      success: true,
      blockNumber: '9',
      blockHash: '0xb9',
    });
    await t.poller.pollOnce();
    r = stepRecord(t, id);
    assert.deepEqual(
      [r.row.status, r.row.blockNumber, r.row.unresolved, r.attempt.stage, r.holder],
      ['confirmed', '9', 0, 'submitted', undefined],
    );
    assert.equal(t.signed.length, 1);
    // A yield step's record is heard of by its rest.transaction.* events only (no send.* events).
    const heard = events(t.store);
    assert.deepEqual(
      heard.map((e) => e.type),
      ['rest.transaction.confirmed'],
    );
    assert.deepEqual([heard[0]!.data['transactionId'], heard[0]!.data['intentKind']], [id, 'yield']);
  } finally {
    await t.host.stop();
  }
});

test('prepared step: a host restart leaves it prepared and unsigned; the SIGN after it signs once', async () => {
  const t = setup();
  await t.host.start();
  const id = await prepareStep(t);
  // What a crash at this point would leave: the prepared state, durable, and no effect for a restart to run.
  const row = t.store.actors.get(id)!;
  assert.deepEqual([row.state, row.wakeAt], ['prepared', null]);
  assert.deepEqual(t.store.actors.effectsOf(id), []);
  await t.host.stop();
  t.store.close();

  const again = setup({ file: t.file });
  await again.host.start();
  try {
    await new Promise((res) => setTimeout(res, 50));
    assert.equal(again.host.read(id)!.value, 'prepared');
    const r = stepRecord(again, id);
    assert.deepEqual([r.row.status, r.attempt.stage, r.row.hash, r.holder], ['pending', 'prepared', null, id]);
    assert.equal(t.signed.length + again.signed.length, 0, 'nothing was signed by either start');

    assert.equal((await signPreparedStep(again.host, again.paymentActors, id)).outcome, 'signing');
    await again.host.waitFor(again.paymentActors, id, (v) => v.value === 'submitted');
    assert.equal(again.signed.length, 1);
    assert.equal(again.signed[0]!.family === 'EVM' && again.signed[0]!.transaction.nonce, 7);
    assert.equal(again.state.broadcasts.length, 1);
  } finally {
    await again.host.stop();
  }
});

test('prepared step: CANCEL before SIGN ends it unsigned and frees its nonce and wallet; a later SIGN signs nothing', async () => {
  const t = setup({ policies: capped(1_000n) });
  await t.host.start();
  try {
    const id = await prepareStep(t, randomUUID(), '5');
    assert.equal(spentToday(t), 5n, 'the admission counted its amount');
    const cancel = await cancelPreparedStep(t.host, t.paymentActors, id, { reason: 'the operation was cancelled' });
    assert.equal(cancel.cancelled, true);
    assert.equal(cancel.view.status, 'done');
    const r = stepRecord(t, id);
    assert.deepEqual(
      [r.row.status, r.row.failureStage, r.row.failureCode, r.row.unresolved, r.row.hash, r.attempt.stage, r.holder],
      ['failed', 'mpc_sign', 'CANCELLED_BEFORE_SIGNING', 0, null, 'rejected', undefined],
    );
    // Cancelled again: the same answer. SIGN after it: nothing signed.
    assert.equal((await cancelPreparedStep(t.host, t.paymentActors, id)).cancelled, true);
    assert.equal((await signPreparedStep(t.host, t.paymentActors, id)).outcome, 'ended');
    assert.equal(t.signed.length, 0, 'the signer was never called');
    assert.equal(spentToday(t), 0n, 'no signature of it can exist: its amount is released');
    assert.notEqual(t.store.spend.entriesOf('key', id)[0]!.releasedAt, null);
    const failed = events(t.store).find((e) => e.type === 'rest.transaction.failed')!;
    assert.deepEqual(
      [failed.data['transactionId'], failed.data['intentKind'], failed.data['failureCode'], failed.data['hash']],
      [id, 'yield', 'CANCELLED_BEFORE_SIGNING', null],
    );

    // The next payment of the wallet takes the nonce the step had.
    const next = await t.payments.transfer(principal, 'w1', transfer);
    assert.ok('transactionId' in next);
    assert.equal(t.signed.length, 1);
    assert.equal(t.signed[0]!.family === 'EVM' && t.signed[0]!.transaction.nonce, 7);
  } finally {
    await t.host.stop();
  }
});

test('prepared step: CANCEL once its SIGN was taken is refused (not cancellable), while signing and after', async () => {
  let release!: () => void;
  const started: PaymentPayload[] = [];
  const t = setup({
    sign: async (p) => {
      started.push(p);
      await new Promise<void>((res) => {
        release = res;
      });
      return { signedTransaction: '0xsigned1', hash: '0xhash1' };
    },
  });
  await t.host.start();
  try {
    const id = await prepareStep(t);
    assert.equal((await signPreparedStep(t.host, t.paymentActors, id)).outcome, 'signing');
    // The SIGN step is committed; the signature is under way.
    const during = await cancelPreparedStep(t.host, t.paymentActors, id);
    assert.deepEqual([during.cancelled, during.view.cancellable, during.view.value], [false, false, 'signing']);
    while (started.length === 0) await new Promise((res) => setTimeout(res, 5));
    release();
    await t.host.waitFor(t.paymentActors, id, (v) => v.value === 'submitted');
    const after = await cancelPreparedStep(t.host, t.paymentActors, id);
    assert.deepEqual([after.cancelled, after.view.value], [false, 'submitted']);
    const r = stepRecord(t, id);
    assert.deepEqual([r.row.status, r.row.failureCode, r.row.unresolved, r.holder], ['submitted', null, 1, id]);
    assert.equal(started.length, 1);
  } finally {
    await t.host.stop();
  }
});

/** Permissions on for key `key`, with one guardrail rule of `effect` on deposits to the pool. */
function onDeposits(effect: 'deny' | 'require_approval'): PolicySource {
  const checked = validatePolicy({
    name: 'deposits',
    layer: 'guardrail',
    scope: { walletType: 'EVM', networks: ['eip155:31337'] },
    rules: [{ id: 'pool', effect, actions: ['yield_deposit'], conditions: [{ fact: 'tx.to', op: 'eq', value: POOL }] }],
  });
  assert.ok(checked.valid, JSON.stringify(checked));
  return {
    permissions: () => ({ enabled: true, approvals: true }),
    activeGuardrails: () => [{ id: 'deposits', version: 1, createdAt: 1, document: checked.policy }],
  };
}

test('prepared step: a SIGN the policy denies signs nothing and fails the step with POLICY_DENIED; the wallet is free', async () => {
  const t = setup({ policies: onDeposits('deny') });
  await t.host.start();
  try {
    const id = await prepareStep(t);
    const sign = await signPreparedStep(t.host, t.paymentActors, id);
    assert.equal(sign.outcome, 'denied');
    assert.ok(sign.outcome === 'denied');
    assert.deepEqual([sign.refusal.code, sign.refusal.httpStatus], ['POLICY_DENIED', 403]);
    assert.deepEqual(sign.refusal.details?.['deniedBy'], [
      { reason: 'denied-by-rule', policyId: 'deposits', ruleId: 'pool' },
    ]);
    const r = stepRecord(t, id);
    assert.deepEqual(
      [r.row.status, r.row.failureStage, r.row.failureCode, r.row.unresolved, r.attempt.stage, r.holder],
      ['failed', 'mpc_sign', 'POLICY_DENIED', 0, 'rejected', undefined],
    );
    assert.equal(t.signed.length, 0, 'nothing was signed');
    const log = t.store.policyDecisions.between('key', 0, Number.MAX_SAFE_INTEGER, 100);
    assert.deepEqual(
      log.map((l) => [l.action, l.effect, l.spendRef]),
      [['yield_deposit', 'deny', id]],
    );
    assert.equal((await cancelPreparedStep(t.host, t.paymentActors, id)).cancelled, false);
  } finally {
    await t.host.stop();
  }
});

test('prepared step: a SIGN held for review signs nothing and keeps the step prepared; after approval a SIGN signs the same payload', async () => {
  const t = setup({ policies: onDeposits('require_approval'), approvals: true });
  await t.host.start();
  try {
    const id = await prepareStep(t);
    const before = t.host.read(id)!.context as unknown as PaymentContext;
    const reference = { idempotencyKey: 'yield-key-1', route: 'yield/deposits', bodyHash: 'a'.repeat(64) };
    const held = await signPreparedStep(t.host, t.paymentActors, id, { reference });
    assert.ok(held.outcome === 'held', held.outcome);
    assert.deepEqual([held.refusal.code, held.refusal.httpStatus], ['POLICY_REVIEW_REQUIRED', 403]);
    const reviewId = held.refusal.details?.['reviewId'];
    assert.equal(typeof reviewId, 'string');
    assert.equal(held.view.value, 'prepared');
    assert.equal(held.view.cancellable, true, 'a held step can still be cancelled');
    let r = stepRecord(t, id);
    assert.deepEqual([r.row.status, r.attempt.stage, r.holder, r.row.nonce], ['pending', 'prepared', id, 7]);
    assert.equal(t.signed.length, 0, 'nothing was signed');

    // A decision its sender puts in the SIGN is not the decision: the step decides again, and holds.
    await t.host.deliver(id, { type: 'SIGN', reference, decision: { effect: 'allow' } });
    assert.equal(t.host.read(id)!.value, 'prepared');
    assert.equal(t.signed.length, 0);
    // Not approved yet: held again, the same review.
    const again = await signPreparedStep(t.host, t.paymentActors, id, { reference });
    assert.ok(again.outcome === 'held');
    assert.equal(again.refusal.details?.['reviewId'], reviewId);
    assert.equal(t.signed.length, 0);

    t.store.approvals.decideReview(reviewId as string, 'approve', Date.now());
    const approved = await signPreparedStep(t.host, t.paymentActors, id, { reference });
    assert.equal(approved.outcome, 'signing');
    await t.host.waitFor(t.paymentActors, id, (v) => v.value === 'submitted');
    assert.equal(t.signed.length, 1);
    assert.deepEqual(t.signed[0], before.payload, 'exactly the prepared payload: the same nonce and fees');
    r = stepRecord(t, id);
    assert.deepEqual([r.row.status, r.row.nonce, r.attempt.stage], ['submitted', 7, 'submitted']);
    const view = t.host.read(id)!.context as unknown as PaymentContext;
    assert.equal(view.signRefusal, null, 'the refusal is cleared once signed');
    const log = t.store.policyDecisions.between('key', 0, Number.MAX_SAFE_INTEGER, 100);
    assert.deepEqual(
      log.map((l) => [l.action, l.effect]),
      [
        ['yield_deposit', 'hold'],
        ['yield_deposit', 'hold'],
        ['yield_deposit', 'hold'],
        ['yield_deposit', 'allow'],
      ],
    );
  } finally {
    await t.host.stop();
  }
});

test('a nonce consumed without a receipt fails a yield step with NONCE_CONSUMED, and a transfer still with REPLACED', async () => {
  const t = setup();
  await t.host.start();
  try {
    const step = await prepareStep(t);
    await signPreparedStep(t.host, t.paymentActors, step);
    await t.host.waitFor(t.paymentActors, step, (v) => v.value === 'submitted');
    t.state.seen.set('0xhash1', { status: 'dropped', reason: 'nonce_consumed', winningHash: '0xother' });
    await t.poller.pollOnce();
    let r = stepRecord(t, step);
    assert.deepEqual(
      [r.row.status, r.row.failureStage, r.row.failureCode, r.row.unresolved, JSON.parse(r.row.monitoring!)],
      ['failed', 'monitor', 'NONCE_CONSUMED', 0, { reason: 'nonce_consumed', winningHash: '0xother' }],
    );
    const failed = events(t.store).find((e) => e.type === 'rest.transaction.failed')!;
    assert.deepEqual(
      [failed.data['transactionId'], failed.data['intentKind'], failed.data['failureCode']],
      [step, 'yield', 'NONCE_CONSUMED'],
    );

    const payment = await t.payments.transfer(principal, 'w1', transfer);
    assert.ok('transactionId' in payment);
    t.state.seen.set('0xhash2', { status: 'dropped', reason: 'nonce_consumed', winningHash: '0xother2' });
    await t.poller.pollOnce();
    r = stepRecord(t, payment.transactionId);
    assert.deepEqual([r.row.status, r.row.failureStage, r.row.failureCode], ['failed', 'monitor', 'REPLACED']);
  } finally {
    await t.host.stop();
  }
});

test('prepared step: the operator releasing its hold ends it as a cancellation (nothing signed, its nonce free)', async () => {
  const t = setup();
  const holds = createHoldsAdmin({ store: t.store, host: t.host });
  await t.host.start();
  try {
    const id = await prepareStep(t);
    const released = await holds.release('w1', { chainKey: 'evm:31337', reason: 'stuck', releasedBy: 'op' });
    assert.deepEqual([released.transactionId, released.status, released.reason], [id, 'failed', 'stuck']);
    const r = stepRecord(t, id);
    assert.deepEqual(
      [r.row.status, r.row.failureCode, r.row.unresolved, r.attempt.stage, r.holder],
      ['failed', 'CANCELLED_BEFORE_SIGNING', 0, 'rejected', undefined],
    );
    assert.equal((await signPreparedStep(t.host, t.paymentActors, id)).outcome, 'ended');
    assert.equal(t.signed.length, 0);
    const next = await t.payments.transfer(principal, 'w1', transfer);
    assert.ok('transactionId' in next);
    assert.equal(t.signed[0]!.family === 'EVM' && t.signed[0]!.transaction.nonce, 7);
  } finally {
    await t.host.stop();
  }
});
