/**
 * The decision point over a real SQLite store (ledger, decision log, writer), real validated policy documents supplied
 * through the ports, and in-memory PolicySource / HoldResolver implementations.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, test } from 'node:test';
import { encodeFunctionData, erc20Abi } from 'viem';
import { type ChainFacts, NO_CHAIN_FACTS as NO_CHAIN } from '../../chains/domain/policies.ts';
import { extractAuthorizationFacts } from '../../chains/evm/extract-authorization-facts.ts';
import { extractEvmTransactionFacts } from '../../chains/evm/extract-evm-transaction-facts.ts';
import { extractEvmTransferFacts } from '../../chains/evm/extract-evm-transfer-facts.ts';
import { createStore, type Store } from '../../store/index.ts';
import { DECISION_BATCH_MAX_SPAN_MS } from '../../store/policy-decisions-repo.ts';
import type { ActivePolicy } from './policy/evaluate-policies.ts';
import type { HoldOutcome, HoldRequest, HoldResolver, KeyPermissions, PolicySource } from './policy/policy-ports.ts';
import { validatePolicy } from './policy/validate-policy.ts';
import {
  createSignatureGate,
  decisionError,
  type SignatureDecision,
  type SignatureRequest,
} from './signature-policy.ts';

const KEY = 'key-1';
const WALLET = { id: 'w-1', type: 'EVM' as const, projectId: 'p-1' };
const ALICE = '0x1111111111111111111111111111111111111111';
const USDC = '0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48';
const ETH = 10n ** 18n;
const AT = Date.UTC(2026, 0, 2, 13, 30);

/** An in-memory PolicySource: the switch and the active guardrails of one key. */
class Policies implements PolicySource {
  switch: KeyPermissions = { enabled: true, approvals: true };
  active: ActivePolicy[] = [];
  reads = 0;
  permissions(): KeyPermissions {
    return this.switch;
  }
  activeGuardrails(): ActivePolicy[] {
    this.reads += 1;
    return this.active;
  }
  add(id: string, doc: Record<string, unknown>): void {
    const checked = validatePolicy({ name: id, layer: 'guardrail', ...doc });
    assert.ok(checked.valid, JSON.stringify(!checked.valid && checked.errors));
    this.active.push({ id, version: 1, createdAt: this.active.length + 1, document: checked.policy });
  }
}

/** An in-memory HoldResolver: answers what the test sets, and remembers each reference's body. */
class Holds implements HoldResolver {
  outcome: HoldOutcome = { kind: 'required', reviewId: 'rev-1', status: 'pending', expiresAt: '2026-01-03T00:00:00Z' };
  bodies = new Map<string, string>();
  resolved: HoldRequest[] = [];
  checkReference(_apiKeyId: string, reference: string, bodyHash: string): void {
    const held = this.bodies.get(reference);
    if (held !== undefined && held !== bodyHash) {
      throw Object.assign(new Error('this reference is bound to another request'), {
        code: 'CONFLICT',
        httpStatus: 409,
      });
    }
  }
  resolve(request: HoldRequest): HoldOutcome {
    this.resolved.push(request);
    this.bodies.set(request.reference, request.bodyHash);
    return this.outcome;
  }
  restored: Array<{ hold: { caseId?: string; reviewId?: string }; usedAt: number }> = [];
  restore(_apiKeyId: string, hold: { caseId?: string; reviewId?: string }, usedAt: number): void {
    this.restored.push({ hold, usedAt });
  }
}

let store: Store;
let policies: Policies;
let holds: Holds;
let now = AT;
let gate: ReturnType<typeof createSignatureGate>;

beforeEach(() => {
  store = createStore(':memory:');
  policies = new Policies();
  holds = new Holds();
  now = AT;
  gate = createSignatureGate({
    policies,
    holds,
    spend: store.spend,
    decisions: store.policyDecisions,
    writer: store.writer,
    now: () => now,
  });
});
afterEach(() => store.close());

const principal = { keyId: KEY, projectId: 'p-1', environment: 'development' as const };

function req(chain: ChainFacts, extra: Partial<SignatureRequest> = {}): SignatureRequest {
  return {
    principal,
    wallet: WALLET,
    operation: 'sign-transaction',
    rawSignature: false,
    chainId: null,
    facts: () => chain,
    ...extra,
  };
}

let body = 0;
/** A request body of its own, sent without an Idempotency-Key (its reference is its hash). */
function fresh(route = 'sign-transaction') {
  const hash = `h${++body}`;
  return { reference: { idempotencyKey: null, route, bodyHash: () => hash } };
}

const native = (value: bigint, chainId = 1) => extractEvmTransactionFacts({ chainId, to: ALICE, value });
const erc20 = (fn: 'transfer' | 'approve', amount: bigint) =>
  extractEvmTransactionFacts({
    chainId: 1,
    to: USDC,
    data: encodeFunctionData({ abi: erc20Abi, functionName: fn, args: [ALICE, amount] }),
  });

function capPolicy(asset: string, limit: bigint, window = '24h') {
  policies.add('cap', {
    scope: { walletType: 'EVM', networks: ['eip155:1'] },
    rules: [
      {
        id: 'daily-cap',
        effect: 'deny',
        actions: ['sign_transaction', 'transfer'],
        conditions: [{ spend: { asset, window }, op: 'gt', value: limit.toString() }],
      },
    ],
  });
}

const decide = async (r: SignatureRequest) => gate.decide(r);
const used = (asset: string, windowMs = 86_400_000) =>
  store.spend.windowTotal(
    {
      apiKeyId: KEY,
      walletId: WALLET.id,
      network: 'eip155:1',
      asset,
      windowMs,
      windowStart: Math.floor(now / windowMs) * windowMs,
    },
    { materialize: false },
  );
/** The decision log, once every write queued so far is committed (log rows of answers that waited for none). */
const logged = async () => {
  await gate.flush();
  await store.writer.write(() => undefined);
  return store.policyDecisions.between(KEY, 0, Number.MAX_SAFE_INTEGER, 1000);
};

describe('step 0: permissions off', () => {
  test('allows without reading policies, and writes nothing', async () => {
    policies.switch = { enabled: false, approvals: false };
    capPolicy('native', 0n);
    const d = gate.decide(req(native(5n * ETH), fresh()));
    assert.deepEqual(d, { effect: 'allow' }, 'answered at once, not through a write');
    assert.equal(policies.reads, 0);
    assert.equal((await logged()).length, 0);
    assert.equal(used('native'), 0n);
  });
});

describe('denials and their answers', () => {
  test('a deny rule: 403 POLICY_DENIED with deniedBy[0] and policyId/ruleId at the top, logged with its facts', async () => {
    policies.add('limits', {
      scope: { walletType: 'EVM', networks: ['eip155:1'] },
      rules: [
        {
          id: 'big',
          effect: 'deny',
          actions: ['sign_transaction'],
          conditions: [{ fact: 'value', op: 'gt', value: ETH.toString() }],
        },
      ],
    });
    const d = await decide(req(native(2n * ETH), fresh()));
    assert.deepEqual(d, { effect: 'deny', reason: 'denied-by-rule', policyId: 'limits', ruleId: 'big' });
    const err = decisionError(d)!;
    assert.equal(err.httpStatus, 403);
    assert.equal(err.code, 'POLICY_DENIED');
    assert.deepEqual(err.details, {
      deniedBy: [{ reason: 'denied-by-rule', policyId: 'limits', ruleId: 'big' }],
      policyId: 'limits',
      ruleId: 'big',
    });
    // Another chain id is outside the selector: allowed.
    assert.deepEqual(await decide(req(native(2n * ETH, 8453), fresh())), { effect: 'allow' });
    const log = await logged();
    assert.equal(log.length, 2);
    const denied = log.find((r) => r.effect === 'deny')!;
    assert.equal(denied.reason, 'denied-by-rule');
    assert.deepEqual((denied.trace as { facts: unknown }).facts, { value: (2n * ETH).toString() });
    assert.equal((denied.request as { chain: { network: string } }).chain.network, 'eip155:1');
    assert.ok(log.some((r) => r.effect === 'allow'));
  });

  test('fact-unavailable names the fact: a contract creation against a destination rule', async () => {
    policies.add('dest', {
      scope: { walletType: 'EVM' },
      rules: [
        {
          id: 'not-bob',
          effect: 'deny',
          actions: ['sign_transaction'],
          conditions: [{ fact: 'to', op: 'eq', value: ALICE }],
        },
      ],
    });
    const creation = extractEvmTransactionFacts({ chainId: 1, to: null, value: 0n, data: '0x6000' });
    const d = await decide(req(creation, fresh()));
    assert.deepEqual(decisionError(d)!.details!['deniedBy'], [
      { reason: 'fact-unavailable', policyId: 'dest', ruleId: 'not-bob', fact: 'to' },
    ]);
  });

  test('with permissions on and no policy, a raw signature is refused: raw-signature-not-allowed', async () => {
    const d = await decide(
      req(
        { network: null, facts: {}, spend: { moved: [], complete: false } },
        {
          operation: 'sign-raw',
          rawSignature: true,
          ...fresh('sign-raw'),
        },
      ),
    );
    assert.deepEqual(decisionError(d)!.details!['deniedBy'], [{ reason: 'raw-signature-not-allowed' }]);
  });

  test('an EIP-7702 authorization with chain id 0 is caught by an eip155:1 rule', async () => {
    policies.add('no-7702', {
      scope: { walletType: 'EVM', networks: ['eip155:1'] },
      rules: [{ id: 'deny-auth', effect: 'deny', actions: ['sign_authorization'] }],
    });
    const facts = (chainId: number) => extractAuthorizationFacts({ address: ALICE, chainId });
    const op = { operation: 'sign-authorization' as const };
    assert.equal((await decide(req(facts(0), { ...op, ...fresh('sign-authorization') }))).effect, 'deny');
    assert.equal((await decide(req(facts(1), { ...op, ...fresh('sign-authorization') }))).effect, 'deny');
    assert.equal((await decide(req(facts(8453), { ...op, ...fresh('sign-authorization') }))).effect, 'allow');
  });
});

describe('the decision log', () => {
  test('answers that waited for no write: one batch per key a flush, another when the clock passes the span', async () => {
    const other = { keyId: 'key-2', projectId: 'p-1', environment: 'development' as const };
    const message = (p = principal) =>
      req(NO_CHAIN, { principal: p, operation: 'sign-message', ...fresh('sign-message') });
    for (let i = 0; i < 3; i++) assert.deepEqual(await decide(message()), { effect: 'allow' });
    assert.deepEqual(await decide(message(other)), { effect: 'allow' });
    // Denied without a write: a raw signature with no rule allowing it.
    const raw = await decide(req(NO_CHAIN, { operation: 'sign-raw', rawSignature: true, ...fresh('sign-raw') }));
    assert.equal(raw.effect, 'deny');
    now += DECISION_BATCH_MAX_SPAN_MS + 1;
    assert.deepEqual(await decide(message()), { effect: 'allow' });
    const log = await logged();
    assert.deepEqual(
      store.sqlite
        .prepare(
          'select api_key_id as k, count, first_at - ? as fromAt, last_at - ? as toAt from policy_decision_batches order by id',
        )
        .all(AT, AT),
      [
        { k: KEY, count: 4, fromAt: 0, toAt: 0 },
        { k: KEY, count: 1, fromAt: DECISION_BATCH_MAX_SPAN_MS + 1, toAt: DECISION_BATCH_MAX_SPAN_MS + 1 },
        { k: 'key-2', count: 1, fromAt: 0, toAt: 0 },
      ],
    );
    assert.deepEqual(
      log.map((r) => [r.action, r.effect, r.reason, r.decidedAt - AT]),
      [
        ['sign_message', 'allow', null, 0],
        ['sign_message', 'allow', null, 0],
        ['sign_message', 'allow', null, 0],
        ['sign_raw', 'deny', 'raw-signature-not-allowed', 0],
        ['sign_message', 'allow', null, DECISION_BATCH_MAX_SPAN_MS + 1],
      ],
    );
    assert.ok(log.every((r) => r.spendRef === r.reference && r.reference.startsWith('body:w-1:')));
    assert.equal(new Set(log.map((r) => r.seq)).size, 5);
    assert.equal(store.policyDecisions.between('key-2', 0, Number.MAX_SAFE_INTEGER, 10).length, 1);
    // What simulate replays: the request as the engine read it.
    assert.deepEqual((log[0]!.request as { wallet: unknown }).wallet, { id: 'w-1', type: 'EVM' });
  });
});

describe('the spend ledger', () => {
  test('twenty parallel decisions against a cap that allows ten: exactly ten are allowed and reserved', async () => {
    capPolicy('native', 10n * ETH);
    const all = await Promise.all(Array.from({ length: 20 }, () => decide(req(native(ETH), fresh()))));
    assert.equal(all.filter((d) => d.effect === 'allow').length, 10);
    assert.equal(all.filter((d) => d.effect === 'deny').length, 10);
    assert.equal(used('native'), 10n * ETH);
    assert.equal((await logged()).length, 20);
  });

  test('gas is never counted: a transfer of 0 value with any fees reserves nothing', async () => {
    capPolicy('native', ETH);
    const tx = extractEvmTransactionFacts({ chainId: 1, to: ALICE, value: 0n });
    for (let i = 0; i < 3; i++) assert.equal((await decide(req(tx, fresh()))).effect, 'allow');
    assert.equal(used('native'), 0n);
  });

  test('an ERC-20 transfer counts its amount of the token; an approve counts nothing', async () => {
    capPolicy(USDC, 1_000n);
    assert.equal((await decide(req(erc20('approve', 10n ** 30n), fresh()))).effect, 'allow');
    assert.equal(used(USDC), 0n);
    assert.equal((await decide(req(erc20('transfer', 600n), fresh()))).effect, 'allow');
    assert.equal(used(USDC), 600n);
    const over = await decide(req(erc20('transfer', 500n), fresh()));
    assert.equal(over.effect, 'deny');
    assert.equal(used(USDC), 600n, 'a denied request reserves nothing');
  });

  test('a replay (same reference) is re-checked but never counted twice', async () => {
    capPolicy('native', 3n * ETH);
    const same = fresh();
    for (let i = 0; i < 5; i++) assert.equal((await decide(req(native(2n * ETH), same))).effect, 'allow');
    assert.equal(used('native'), 2n * ETH);
    // The same body with an Idempotency-Key is another reference: counted, and over the cap.
    const keyed = { reference: { idempotencyKey: 'k1', route: 'sign-transaction', bodyHash: () => 'h-same' } };
    assert.equal((await decide(req(native(2n * ETH), keyed))).effect, 'deny');
    // The cap tightened under the replay: re-checked, it is denied now.
    policies.active = [];
    capPolicy('native', ETH);
    assert.equal((await decide(req(native(2n * ETH), same))).effect, 'deny');
  });

  test('windows are aligned to the epoch: the 24h window resets at 00:00 UTC', async () => {
    capPolicy('native', ETH);
    now = Date.UTC(2026, 0, 2, 23, 59);
    assert.equal((await decide(req(native(ETH), fresh()))).effect, 'allow');
    assert.equal((await decide(req(native(1n), fresh()))).effect, 'deny');
    now = Date.UTC(2026, 0, 3, 0, 0);
    assert.equal((await decide(req(native(ETH), fresh()))).effect, 'allow');
  });

  test('an auto-retry payment: counted once across replacements under its id, released when nothing usable exists', async () => {
    capPolicy('native', 3n * ETH);
    const transfer = extractEvmTransferFacts('1', { kind: 'NATIVE', to: ALICE, value: (2n * ETH).toString() });
    const admission = req(transfer, { operation: 'transfer', ...fresh('transfer') });
    const admitted = await store.writer.write(() => gate.decideWithin({ ...admission, spendRef: 'tx-1' }));
    assert.equal(admitted.effect, 'allow');
    assert.equal(used('native'), 2n * ETH);
    // Three replacements: decided again, the same payment: not counted again.
    for (let i = 0; i < 3; i++) {
      const d = await decide(req(transfer, { operation: 'transfer', spendRef: 'tx-1', continuation: true }));
      assert.equal(d.effect, 'allow');
    }
    assert.equal(used('native'), 2n * ETH);
    // Stopped before signing (no usable signature): released, and the room is there again.
    await store.writer.write(() => store.spend.release(KEY, 'tx-1', now));
    assert.equal(used('native'), 0n);
    assert.equal(
      (await decide(req(transfer, { operation: 'transfer', ...fresh('transfer'), spendRef: 'tx-2' }))).effect,
      'allow',
    );
  });

  test('a window read for the first time is made from the ledger (a policy activated mid-window counts the day)', async () => {
    // No policy yet: the signature is counted all the same (permissions on).
    assert.equal((await decide(req(native(2n * ETH), fresh()))).effect, 'allow');
    capPolicy('native', 3n * ETH);
    assert.equal((await decide(req(native(2n * ETH), fresh()))).effect, 'deny');
    assert.equal((await decide(req(native(ETH), fresh()))).effect, 'allow');
    assert.equal(used('native'), 3n * ETH);
  });
});

describe('a sign-only signature that fails', () => {
  /** A signature the test finishes: `resolve` it (made) or `reject` it (the enclave failed). */
  function pendingSignature() {
    let resolve!: (v: string) => void;
    let reject!: (e: Error) => void;
    const promise = new Promise<string>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    let started!: () => void;
    const began = new Promise<void>((r) => {
      started = r;
    });
    return {
      sign: () => {
        started();
        return promise;
      },
      began,
      resolve: () => resolve('0xsig'),
      reject: () => reject(new Error('the enclave failed')),
    };
  }
  const enclaveFails = () => Promise.reject(new Error('the enclave failed'));

  test('releases what it counted: the cap is whole again, and the same request counts again when resent', async () => {
    capPolicy('native', 3n * ETH);
    const same = fresh();
    await assert.rejects(gate.signIfAllowed(req(native(2n * ETH), same), enclaveFails), /the enclave failed/);
    assert.equal(used('native'), 0n, 'no usable signature exists: released');
    // Without the release, 2 of the 3 would stay counted and this 3 would be refused.
    assert.equal(await gate.signIfAllowed(req(native(3n * ETH), fresh()), async () => 'ok'), 'ok');
    assert.equal(used('native'), 3n * ETH);
    await assert.rejects(
      gate.signIfAllowed(req(native(2n * ETH), same), async () => 'never'),
      (e: { code?: string }) => e.code === 'POLICY_DENIED',
      'resent, the failed request counts again, over the cap',
    );
  });

  test('a refusal throws its 403 and never signs', async () => {
    capPolicy('native', ETH);
    let signed = false;
    await assert.rejects(
      gate.signIfAllowed(req(native(2n * ETH), fresh()), async () => {
        signed = true;
        return 'x';
      }),
      (e: { code?: string }) => e.code === 'POLICY_DENIED',
    );
    assert.equal(signed, false);
  });

  test('keeps the amount when the same request was signed before it', async () => {
    capPolicy('native', 3n * ETH);
    const same = fresh();
    assert.equal(await gate.signIfAllowed(req(native(2n * ETH), same), async () => 'first'), 'first');
    await assert.rejects(gate.signIfAllowed(req(native(2n * ETH), same), enclaveFails));
    assert.equal(used('native'), 2n * ETH, 'the first signature exists and can move the value: still counted');
  });

  test('keeps the amount when an identical request in flight beside it signs', async () => {
    capPolicy('native', 3n * ETH);
    const same = fresh();
    const a = pendingSignature();
    const b = pendingSignature();
    const first = gate.signIfAllowed(req(native(2n * ETH), same), a.sign);
    await a.began;
    const second = gate.signIfAllowed(req(native(2n * ETH), same), b.sign);
    await b.began;
    assert.equal(used('native'), 2n * ETH, 'counted once for the two');
    // The one that counted fails while the other is still signing; the other then signs.
    a.reject();
    await assert.rejects(first);
    assert.equal(used('native'), 2n * ETH, 'the other is still signing: not released');
    b.resolve();
    assert.equal(await second, '0xsig');
    assert.equal(used('native'), 2n * ETH);
  });

  test('released by the last of identical requests when none of them signed', async () => {
    capPolicy('native', 3n * ETH);
    const same = fresh();
    const a = pendingSignature();
    const b = pendingSignature();
    const first = gate.signIfAllowed(req(native(2n * ETH), same), a.sign);
    await a.began;
    const second = gate.signIfAllowed(req(native(2n * ETH), same), b.sign);
    await b.began;
    b.reject();
    await assert.rejects(second);
    assert.equal(used('native'), 2n * ETH, 'the first is still signing');
    a.reject();
    await assert.rejects(first);
    assert.equal(used('native'), 0n, 'neither signed: released');
  });

  test('an approval it used is restored; one whose signature was made stays used', async () => {
    policies.add('approve', {
      scope: { walletType: 'EVM' },
      rules: [{ id: 'big', effect: 'require_approval', actions: ['sign_transaction'], conditions: [] }],
    });
    holds.outcome = { kind: 'proceed', reviewId: 'rev-9' };
    await assert.rejects(gate.signIfAllowed(req(native(ETH), fresh()), enclaveFails));
    assert.deepEqual(holds.restored, [{ hold: { reviewId: 'rev-9' }, usedAt: now }]);
    assert.equal(await gate.signIfAllowed(req(native(ETH), fresh()), async () => 'ok'), 'ok');
    assert.equal(holds.restored.length, 1, 'a signature was made: its approval stays used');
  });

  test('with permissions off it signs and writes nothing', async () => {
    policies.switch = { enabled: false, approvals: false };
    capPolicy('native', ETH);
    assert.equal(await gate.signIfAllowed(req(native(5n * ETH), fresh()), async () => 'ok'), 'ok');
    assert.equal(used('native'), 0n);
    assert.equal(policies.reads, 0);
  });
});

describe('holds', () => {
  beforeEach(() => {
    policies.add('approve-big', {
      scope: { walletType: 'EVM' },
      rules: [
        {
          id: 'big',
          effect: 'require_approval',
          actions: ['transfer'],
          conditions: [{ fact: 'value', op: 'gte', value: ETH.toString() }],
        },
      ],
    });
  });
  const transfer = extractEvmTransferFacts('1', { kind: 'NATIVE', to: ALICE, value: ETH.toString() });
  const keyed = (key: string, hash: string) => ({
    operation: 'transfer' as const,
    reference: { idempotencyKey: key, route: 'transfer', bodyHash: () => hash },
    initiatorUserId: 'u-1',
  });

  test('a review: 403 POLICY_REVIEW_REQUIRED with reviewId, status, expiresAt; the resolver got the request', async () => {
    const d = await decide(req(transfer, keyed('k1', 'h1')));
    const err = decisionError(d)!;
    assert.equal(err.code, 'POLICY_REVIEW_REQUIRED');
    assert.equal(err.httpStatus, 403);
    assert.equal(err.details!['reviewId'], 'rev-1');
    assert.equal(err.details!['status'], 'pending');
    assert.equal(err.details!['expiresAt'], '2026-01-03T00:00:00Z');
    const asked = holds.resolved[0]!;
    assert.equal(asked.reference, 'key:k1');
    assert.equal(asked.bodyHash, 'h1');
    assert.equal(asked.policyId, 'approve-big');
    assert.equal(asked.ruleId, 'big');
    assert.equal(asked.initiatorUserId, 'u-1');
    assert.equal(asked.approval, undefined);
    assert.equal((await logged())[0]!.effect, 'hold');
  });

  test('the same key with another body: 409 CONFLICT, nothing logged', async () => {
    await decide(req(transfer, keyed('k1', 'h1')));
    await assert.rejects(decide(req(transfer, keyed('k1', 'h2'))), { code: 'CONFLICT', httpStatus: 409 });
    assert.equal((await logged()).length, 1);
  });

  test('approved: allowed, reserved; rejected: review-rejected; unbound: FORBIDDEN', async () => {
    holds.outcome = { kind: 'proceed', reviewId: 'rev-1' };
    assert.equal((await decide(req(transfer, keyed('k1', 'h1')))).effect, 'allow');
    assert.equal(used('native'), ETH);
    holds.outcome = { kind: 'rejected', caseId: 'case-9' };
    const rejected = decisionError(await decide(req(transfer, keyed('k2', 'h2'))))!;
    assert.equal(rejected.code, 'POLICY_DENIED');
    assert.deepEqual(rejected.details!['deniedBy'], [
      { reason: 'review-rejected', policyId: 'approve-big', ruleId: 'big' },
    ]);
    assert.equal(rejected.details!['caseId'], 'case-9');
    holds.outcome = { kind: 'forbidden' };
    const forbidden = decisionError(await decide(req(transfer, keyed('k3', 'h3'))))!;
    assert.equal(forbidden.code, 'FORBIDDEN');
    assert.equal(forbidden.httpStatus, 403);
  });

  test('a replacement the rule holds goes on only when its admission went through an approval of that rule', async () => {
    holds.outcome = { kind: 'proceed', caseId: 'case-1' };
    const admitted = await store.writer.write(() =>
      gate.decideWithin({ ...req(transfer, keyed('k1', 'h1')), spendRef: 'tx-1' }),
    );
    assert.equal(admitted.effect, 'allow');
    const replacement = req(transfer, { operation: 'transfer', spendRef: 'tx-1', continuation: true });
    assert.equal((await decide(replacement)).effect, 'allow');
    assert.equal(holds.resolved.length, 1, 'a replacement opens no case');
    const other = await decide({ ...replacement, spendRef: 'tx-2' });
    assert.equal(other.effect, 'review');
    assert.equal(used('native'), ETH, 'counted once');
  });
});

test('a decision and its writes roll back with the transaction that holds them', async () => {
  capPolicy('native', 10n * ETH);
  await assert.rejects(
    store.writer.write(() => {
      const d: SignatureDecision = gate.decideWithin(req(native(ETH), fresh()));
      assert.equal(d.effect, 'allow');
      throw new Error('the payment record could not be written');
    }),
  );
  assert.equal(used('native'), 0n);
  assert.equal((await logged()).length, 0);
});
