/**
 * Signing policies on transfers the service builds, against a real anvil node and the service's own stores: a cap
 * that allows ten of twenty parallel transfers lets exactly ten be signed; a broadcast over a daily cap is refused at
 * admission, leaving no record and no hold; gas never counts; an ERC-20 `transfer` counts in its token while its
 * `approve` does not; a destination outside an allow-list is refused before anything reaches the node.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { encodeFunctionData, recoverTransactionAddress } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { type Anvil, startAnvil } from '../fixtures/anvil.ts';
import {
  type ContractArtifact,
  deployContract,
  mine,
  rpc,
  sendRawTransaction,
  setBalance,
} from '../fixtures/evm-helpers.ts';
import { type Partner, startTestService, type TestService, tempDataDir } from './helpers/service.ts';
import { createActivePolicy } from './helpers/spec-steps.ts';

const TestToken = JSON.parse(
  fs.readFileSync(path.join(import.meta.dirname, '../fixtures/contracts/TestToken.json'), 'utf8'),
) as ContractArtifact;

const BASE = '/permissions-v2';
const RECIPIENT = '0x000000000000000000000000000000000000bEEF';
const ELSEWHERE = '0x000000000000000000000000000000000000dEaD';
let anvil: Anvil;
let svc: TestService;
let token: `0x${string}`;

before(async () => {
  anvil = await startAnvil({ slotsInAnEpoch: 1 });
  const dir = tempDataDir('wcs-chains-');
  const chains = path.join(dir, 'chains.json');
  fs.writeFileSync(chains, JSON.stringify({ evm: [{ chainId: 31337, rpcUrl: anvil.rpcUrl, environment: 'any' }] }));
  svc = await startTestService({ CHAINS_FILE: chains, CHAIN_POLL_INTERVAL_MS: '100' });
  fs.rmSync(dir, { recursive: true, force: true });
  token = await deployContract(anvil.rpcUrl, anvil.fundedKeys[0]!, TestToken);
});

after(async () => {
  await svc?.stop();
  await anvil?.stop();
});

/** A key with permissions on and `rules` active on EVM chain 31337, and a wallet of it holding 10 ETH. */
async function setUp(name: string, rules: unknown[]) {
  const partner: Partner = await svc.newPartner();
  assert.equal(
    (await svc.admin('PUT', `/api-keys/${partner.keyId}/permissions`, { enabled: true, approvals: false })).status,
    200,
  );
  const policy = { name, layer: 'guardrail', scope: { walletType: 'EVM', networks: ['eip155:31337'] }, rules };
  const created = await createActivePolicy(svc, partner.secret, policy);
  const w = await svc.v1(partner.secret, 'POST', '/wallets', {
    type: 'EVM',
    userIdentifier: name,
    userIdentifierType: 'CUSTOM_ID',
  });
  assert.equal(w.status, 201, JSON.stringify(w.body));
  await setBalance(anvil.rpcUrl, w.body.address, 10n * 10n ** 18n);
  const transfer = (body: Record<string, unknown>) =>
    svc.v1(partner.secret, 'POST', `/wallets/${w.body.id}/transfer`, { chainId: '31337', ...body });
  const usage = async () => {
    const u = await svc.v1(
      partner.secret,
      'GET',
      `${BASE}/wallets/${w.body.id}/policies/${created.id}/usage?network=eip155:31337`,
    );
    assert.equal(u.status, 200, JSON.stringify(u.body));
    return u.body.meters as Array<{ ruleId: string; asset: string; used: string; limit: string }>;
  };
  return {
    partner,
    policyId: created.id as string,
    wallet: w.body as { id: string; address: string },
    transfer,
    usage,
  };
}

/** Mines until the payment's record leaves `submitted` (the poller runs every 100 ms). */
async function settle(partner: Partner, walletId: string, transactionId: string) {
  const until = Date.now() + 20_000;
  for (;;) {
    const r = await svc.v1(partner.secret, 'GET', `/wallets/${walletId}/transactions/${transactionId}`);
    if (r.body.status !== 'submitted' && r.body.status !== 'pending') return r.body;
    if (Date.now() > until) throw new Error(`record still ${r.body.status}`);
    await mine(anvil.rpcUrl, 1);
    await new Promise((res) => setTimeout(res, 50));
  }
}

const capRule = (asset: string, limit: bigint) => ({
  id: `cap-${asset.slice(0, 8)}`,
  effect: 'deny',
  actions: ['transfer', 'sign_transaction'],
  conditions: [{ spend: { asset, window: '24h' }, op: 'gt', value: limit.toString() }],
});

test('twenty parallel sign-only transfers against a cap that allows ten: exactly ten signed, ten refused', async () => {
  const { wallet, transfer, usage } = await setUp('parallel-cap', [capRule('native', 10_000n)]);
  // Twenty different transfers (one recipient each): an identical body would be the same request, whose replays
  // the ledger never counts twice (they are the same signature: same nonce, same bytes).
  const answers = await Promise.all(
    Array.from({ length: 20 }, (_, i) =>
      transfer({ to: `0x${(0xbee00 + i).toString(16).padStart(40, '0')}`, value: '1000', broadcast: false }),
    ),
  );
  const signed = answers.filter((r) => r.status === 200);
  const refused = answers.filter((r) => r.status === 403);
  assert.equal(signed.length, 10, JSON.stringify(answers.map((r) => r.status)));
  assert.equal(refused.length, 10);
  for (const r of refused) assert.equal(r.body.deniedBy[0].reason, 'denied-by-rule');
  for (const r of signed) {
    assert.equal(await recoverTransactionAddress({ serializedTransaction: r.body.signedTransaction }), wallet.address);
  }
  const [meter] = await usage();
  assert.equal(meter!.used, '10000', 'ten values counted; the gas each one may pay never is');
});

test('the same sign-only transfer body sent again after its first signature landed is a new signature: it counts again', async () => {
  const { wallet, transfer, usage } = await setUp('resend-cap', [capRule('native', 1000n)]);
  const body = { to: RECIPIENT, value: '1000', broadcast: false };
  const first = await transfer(body);
  assert.equal(first.status, 200, JSON.stringify(first.body));
  const again = await transfer(body);
  assert.equal(again.status, 200, 'the same body, the same nonce: the same signature, counted once');
  assert.equal(again.body.signedTransaction, first.body.signedTransaction);
  // The partner broadcasts the first signature itself; the wallet's next nonce is now 1.
  await sendRawTransaction(anvil.rpcUrl, first.body.signedTransaction);
  await mine(anvil.rpcUrl, 1);
  const afterLanding = await transfer(body);
  assert.equal(afterLanding.status, 403, `a second 1000 wei would pass the cap: ${JSON.stringify(afterLanding.body)}`);
  assert.equal(afterLanding.body.code, 'POLICY_DENIED');
  const [meter] = await usage();
  assert.equal(meter!.used, '1000');
  assert.equal(
    BigInt(await rpc<string>(anvil.rpcUrl, 'eth_getTransactionCount', [wallet.address, 'latest'])),
    1n,
    'one transfer moved',
  );
});

test('a broadcast over the daily cap is refused at admission: no record, no hold, nothing sent; the wallet pays again under it', async () => {
  const { wallet, transfer, usage, partner } = await setUp('broadcast-cap', [capRule('native', 10n ** 18n)]);
  const first = await transfer({ to: RECIPIENT, value: (6n * 10n ** 17n).toString() });
  assert.equal(first.status, 200, JSON.stringify(first.body));
  await settle(partner, wallet.id, first.body.transactionId);

  const over = await transfer({ to: RECIPIENT, value: (6n * 10n ** 17n).toString() });
  assert.equal(over.status, 403, JSON.stringify(over.body));
  assert.equal(over.body.code, 'POLICY_DENIED');
  assert.equal(over.headers.get('x-transaction-id'), null);
  const list = await svc.v1(partner.secret, 'GET', `/wallets/${wallet.id}/transactions`);
  assert.equal(list.body.data.length, 1, 'only the first payment has a record');

  const under = await transfer({ to: RECIPIENT, value: (3n * 10n ** 17n).toString() });
  assert.equal(under.status, 200, `the wallet is not held by the refusal: ${JSON.stringify(under.body)}`);
  const [meter] = await usage();
  assert.equal(meter!.used, (9n * 10n ** 17n).toString());
});

test('an ERC-20 transfer counts in its token; an approve of the same token does not', async () => {
  const tokenAsset = token.toLowerCase();
  const { wallet, transfer, usage, partner } = await setUp('token-cap', [capRule(tokenAsset, 1_000_000n)]);
  const mint = encodeFunctionData({
    abi: TestToken.abi as never,
    functionName: 'mint',
    args: [wallet.address, 5_000_000n],
  } as never);
  // anvil signs for its own dev accounts.
  const minter = privateKeyToAccount(anvil.fundedKeys[1]!);
  await rpc(anvil.rpcUrl, 'eth_sendTransaction', [{ from: minter.address, to: token, data: mint }]);
  await mine(anvil.rpcUrl, 3);

  const sent = await transfer({ to: RECIPIENT, value: '700000', tokenAddress: token, broadcast: false });
  assert.equal(sent.status, 200, JSON.stringify(sent.body));
  const over = await transfer({ to: ELSEWHERE, value: '700000', tokenAddress: token, broadcast: false });
  assert.equal(over.status, 403, JSON.stringify(over.body));
  assert.equal(over.body.code, 'POLICY_DENIED');

  const approve = encodeFunctionData({
    abi: [
      {
        type: 'function',
        name: 'approve',
        stateMutability: 'nonpayable',
        inputs: [
          { name: 'spender', type: 'address' },
          { name: 'amount', type: 'uint256' },
        ],
        outputs: [{ type: 'bool' }],
      },
    ],
    functionName: 'approve',
    args: [RECIPIENT, 5_000_000n],
  });
  const approved = await svc.v1(partner.secret, 'POST', `/wallets/${wallet.id}/sign-transaction`, {
    transaction: {
      to: token,
      data: approve,
      value: '0',
      chainId: 31337,
      type: 2,
      nonce: 9,
      gasLimit: '60000',
      maxFeePerGas: '30000000000',
      maxPriorityFeePerGas: '1000000000',
    },
  });
  assert.equal(approved.status, 200, `an approve moves nothing: ${JSON.stringify(approved.body)}`);
  const meter = (await usage()).find((m) => m.asset === tokenAsset);
  assert.equal(meter?.used, '700000');
});

test('a destination outside the allow-list is refused before anything reaches the node', async () => {
  const { transfer, partner, wallet } = await setUp('payees', [
    {
      id: 'payees',
      effect: 'allow',
      actions: ['transfer'],
      conditions: [{ fact: 'to', op: 'in', value: [RECIPIENT] }],
    },
  ]);
  const ok = await transfer({ to: RECIPIENT.toLowerCase(), value: '5' });
  assert.equal(ok.status, 200, JSON.stringify(ok.body));
  assert.equal((await settle(partner, wallet.id, ok.body.transactionId)).status, 'confirmed');
  const refused = await transfer({ to: ELSEWHERE, value: '5' });
  assert.equal(refused.status, 403, JSON.stringify(refused.body));
  assert.equal(refused.body.deniedBy[0].reason, 'outside-boundary');
  assert.equal(refused.body.signedTransaction, undefined);
  const pending = await rpc<{ pending: Record<string, unknown> }>(anvil.rpcUrl, 'txpool_content');
  const sentTo = JSON.stringify(pending).toLowerCase();
  assert.ok(!sentTo.includes(ELSEWHERE.slice(2).toLowerCase()), 'nothing to the refused address reached the node');
});
