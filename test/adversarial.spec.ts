/**
 * Issue 9's adversarial bodies (fixtures/adversarial-bodies.ts) against the real appliance: each answers what the
 * caps promise (a 400 naming the field, or, for the costliest accepted inputs, a signature), and while they arrive
 * together another tenant's requests are still answered. No timing is asserted: `npm run bench:adversarial`
 * measures the costs.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { verifyTypedData } from 'viem';
import { type AdversarialCase, adversarialCases } from '../fixtures/adversarial-bodies.ts';
import { EIP712_MAIL } from '../fixtures/eip712-mail.ts';
import { startTestService, type TestService } from './helpers/service.ts';

let svc: TestService;
let attacker: { secret: string };
let other: { secret: string };
const wallets: Record<string, { id: string; address: string }> = {};
let otherWallet: { id: string; address: string };
let cases: AdversarialCase[] = [];

async function createWallet(secret: string, type: string) {
  const r = await svc.v1(secret, 'POST', '/wallets', {
    type,
    userIdentifier: `adv-${type}-${Math.random().toString(36).slice(2)}`,
    userIdentifierType: 'CUSTOM_ID',
  });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  return r.body as { id: string; address: string };
}

const send = (c: AdversarialCase) =>
  svc.v1(attacker.secret, 'POST', `/wallets/${wallets[c.walletType]!.id}/${c.route}`, c.body);

function assertAnswer(c: AdversarialCase, r: { status: number; body: any; headers: Headers }): void {
  const context = `${c.name}: ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`;
  assert.equal(r.status, c.expect.status, context);
  if (c.expect.status === 200) {
    assert.ok(
      typeof r.body.signature === 'string' || typeof r.body.signedTransaction === 'string',
      `a signature: ${context}`,
    );
    return;
  }
  assert.equal(r.body.code, c.expect.code, context);
  assert.equal(typeof r.body.requestId, 'string', context);
  const field = c.expect.field;
  if (field.endsWith('…')) assert.ok(String(r.body.field).startsWith(field.slice(0, -1)), context);
  else assert.equal(r.body.field, field, context);
}

before(async () => {
  svc = await startTestService();
  attacker = await svc.newPartner({ plan: 'enterprise', rateLimitPerMinute: 1_000_000 });
  other = await svc.newPartner({ plan: 'enterprise', rateLimitPerMinute: 1_000_000 });
  for (const type of ['EVM', 'COSMOS', 'SOLANA', 'STELLAR', 'SUI'])
    wallets[type] = await createWallet(attacker.secret, type);
  otherWallet = await createWallet(other.secret, 'EVM');
  cases = adversarialCases({ SOLANA: { address: wallets['SOLANA']!.address } });
});
after(async () => {
  await svc.stop();
});

describe('adversarial bodies, one at a time', () => {
  // The cases are built in before(): the wallets' addresses shape some bodies. One test walks them all, each
  // failure naming its case.
  test('each is refused with a 400 naming its field, or signed when within the caps', async () => {
    assert.ok(cases.length >= 30);
    for (const c of cases) assertAnswer(c, await send(c));
  });
});

describe('adversarial bodies all at once', () => {
  test("another tenant's signature and /healthz are still answered, and every adversarial body as alone", async () => {
    const refusedCases = cases.filter((c) => c.expect.status === 400);
    const attacks = Promise.all(refusedCases.map(async (c) => [c, await send(c)] as const));
    const typedData = { ...EIP712_MAIL, message: { ...EIP712_MAIL.message, contents: 'beside the attack' } };
    const [signed, health] = await Promise.all([
      svc.v1(other.secret, 'POST', `/wallets/${otherWallet.id}/sign-typed-data`, { typedData }),
      fetch(`${svc.url}/healthz`),
    ]);
    assert.equal(health.status, 200);
    assert.equal(signed.status, 200, JSON.stringify(signed.body));
    const valid = await verifyTypedData({
      ...(typedData as unknown as Parameters<typeof verifyTypedData>[0]),
      address: otherWallet.address as `0x${string}`,
      signature: `0x${signed.body.signature}`,
    });
    assert.equal(valid, true);
    for (const [c, r] of await attacks) assertAnswer(c, r);
  });
});
