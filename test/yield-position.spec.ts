/**
 * `GET /v1/wallets/{walletId}/yield/position` end to end (spec: Yield position, Yield routes): the whole service
 * (real enclave process, real SQLite) against anvil started with Sepolia's chain id, on which the local lending
 * protocol sits at the real Sepolia Pool and USDC addresses (fixtures/lending-protocol.ts): the chains file names
 * only the node, so the service reads its own default market. The node is reached through a fault proxy that
 * counts the round trips of each read and plays a node that is down. Every figure is checked against the chain:
 * the aToken balance, the block's number and timestamp.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { FormatRegistry } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { YieldPosition } from '../api/schemas/yield.ts';
import { encodeLendingCall, type LendingCall } from '../chains/evm/encode-lending-call.ts';
import { formatUsdcAmount } from '../chains/evm/format-usdc-amount.ts';
import { parseUsdcAmount } from '../chains/evm/parse-usdc-amount.ts';
import { type Anvil, startAnvil } from '../fixtures/anvil.ts';
import { mine, rpc, setBalance } from '../fixtures/evm-helpers.ts';
import { installLendingProtocol, type LocalLendingProtocol, SEPOLIA_CHAIN_ID } from '../fixtures/lending-protocol.ts';
import { type RpcFaultProxy, startRpcFaultProxy } from '../fixtures/rpc-fault-proxy.ts';
import { BAD_IDS, type BadCase, runCases } from './helpers/bad-input-matrix.ts';
import { type Partner, startTestService, type TestService, tempDataDir } from './helpers/service.ts';

let anvil: Anvil;
let protocol: LocalLendingProtocol;
let proxy: RpcFaultProxy;
let svc: TestService;
let partner: Partner;

const usdc = (amount: string) => parseUsdcAmount(amount, 'amount');

// What the OpenAPI document's `date-time` promises, for checking answers against the route's schema.
FormatRegistry.Set('date-time', (v) => /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/.test(v));

before(async () => {
  anvil = await startAnvil({ chainId: SEPOLIA_CHAIN_ID });
  protocol = await installLendingProtocol(anvil.rpcUrl);
  // Past the genesis block: anvil runs an eth_call at block 0 with a timestamp of 1, not the one the block has.
  await mine(anvil.rpcUrl, 1);
  proxy = await startRpcFaultProxy(anvil.rpcUrl);
  const dir = tempDataDir('wcs-yield-chains-');
  const chainsFile = path.join(dir, 'chains.json');
  // Sepolia through the proxy, open to development keys; Ethereum mainnet open to production keys only, on a port
  // nothing listens on (a node that is down). Base is not configured.
  fs.writeFileSync(
    chainsFile,
    JSON.stringify({
      evm: [
        { chainId: SEPOLIA_CHAIN_ID, rpcUrl: proxy.url, environment: 'development' },
        { chainId: 1, rpcUrl: 'http://127.0.0.1:1', environment: 'production' },
      ],
    }),
  );
  svc = await startTestService({ CHAINS_FILE: chainsFile });
  fs.rmSync(dir, { recursive: true, force: true });
  partner = await svc.newPartner({ environment: 'development' });
});

after(async () => {
  await svc?.stop();
  await proxy?.close();
  await anvil?.stop();
});

let walletCount = 0;
async function newWallet(type: 'EVM' | 'SOLANA' = 'EVM'): Promise<{ id: string; address: `0x${string}` }> {
  const r = await svc.v1(partner.secret, 'POST', '/wallets', {
    type,
    userIdentifier: `yield-${walletCount++}`,
    userIdentifierType: 'CUSTOM_ID',
  });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  return { id: r.body.id, address: r.body.address };
}

const positionPath = (walletId: string, query: string) => `/wallets/${walletId}/yield/position${query}`;

/**
 * Reads the position over the API; on a 200 checks the body against the route's schema, that the read took exactly
 * one HTTP request to the node (the chain id and the reader's eth_call in one batch), and that the block it names is
 * the chain's, with its timestamp.
 */
async function position(walletId: string, chainId: number = SEPOLIA_CHAIN_ID) {
  const from = proxy.calls.length;
  const r = await svc.v1(partner.secret, 'GET', positionPath(walletId, `?chainId=${chainId}`));
  const calls = proxy.calls.slice(from);
  if (r.status === 200) {
    assert.ok(Value.Check(YieldPosition, r.body), `the answer fits its schema: ${JSON.stringify(r.body)}`);
    assert.equal(new Set(calls.map((c) => c.request)).size, 1, 'one round trip to the node');
    assert.deepEqual(
      calls.map((c) => c.call.method),
      ['eth_chainId', 'eth_call'],
    );
    const block = await rpc<{ timestamp: string }>(anvil.rpcUrl, 'eth_getBlockByNumber', [
      `0x${BigInt(r.body.blockNumber).toString(16)}`,
      false,
    ]);
    assert.equal(r.body.blockTimestamp, new Date(Number(BigInt(block.timestamp)) * 1000).toISOString());
  }
  return r;
}

async function latestBlock(): Promise<string> {
  return BigInt(await rpc<string>(anvil.rpcUrl, 'eth_blockNumber')).toString();
}

/** Sends `call` from `from` (the wallet's own address, impersonated on anvil) and waits for its successful receipt. */
async function sendFrom(from: `0x${string}`, call: LendingCall): Promise<void> {
  const { to, data } = encodeLendingCall(protocol.market, call);
  await rpc(anvil.rpcUrl, 'anvil_impersonateAccount', [from]);
  try {
    const hash = await rpc<string>(anvil.rpcUrl, 'eth_sendTransaction', [{ from, to, data }]);
    for (let i = 0; i < 200; i++) {
      const receipt = await rpc<{ status: string } | null>(anvil.rpcUrl, 'eth_getTransactionReceipt', [hash]);
      if (receipt) {
        assert.equal(receipt.status, '0x1', `${call.kind} from ${from} succeeded`);
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    assert.fail(`${call.kind} from ${from} was not mined`);
  } finally {
    await rpc(anvil.rpcUrl, 'anvil_stopImpersonatingAccount', [from]);
  }
}

/** A wallet with `amount` USDC supplied from its own address (approve, then supply), and its gas money. */
async function suppliedWallet(amount: string) {
  const w = await newWallet();
  await setBalance(anvil.rpcUrl, w.address, 10n ** 18n);
  await protocol.fundUsdc(w.address, usdc(amount));
  await sendFrom(w.address, { kind: 'approve', amount: usdc(amount) });
  await sendFrom(w.address, { kind: 'supply', amount: usdc(amount), onBehalfOf: w.address });
  return w;
}

describe('the position, read from the chain', () => {
  test('before any supply: zeros, at the latest block', async () => {
    const w = await newWallet();
    const r = await position(w.id);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.deepEqual(
      { ...r.body, blockTimestamp: undefined },
      {
        suppliedBalance: '0',
        withdrawal: { availableAmount: '0' },
        blockNumber: await latestBlock(),
        blockTimestamp: undefined,
      },
    );
  });

  test('after a supply from the wallet, then after interest accrues: the aToken balance, all withdrawable', async () => {
    const w = await suppliedWallet('1234.5');
    const supplied = await position(w.id);
    assert.equal(supplied.status, 200, JSON.stringify(supplied.body));
    assert.equal(supplied.body.suppliedBalance, '1234.5');
    assert.deepEqual(supplied.body.withdrawal, { availableAmount: '1234.5' });
    assert.equal(supplied.body.blockNumber, await latestBlock());

    // 2.5% on the liquidity index: 1234.5 × 1.025 = 1265.3625, rounded per balance as the protocol does.
    await protocol.accrueInterest(250n);
    const grown = await position(w.id);
    assert.equal(grown.status, 200, JSON.stringify(grown.body));
    const onChain = await protocol.suppliedBalance(w.address);
    assert.equal(onChain, usdc('1265.3625'));
    assert.equal(grown.body.suppliedBalance, formatUsdcAmount(onChain));
    assert.deepEqual(grown.body.withdrawal, { availableAmount: '1265.3625' });
  });

  test('with debt on the market: the supplied balance, and no withdrawal estimate (null)', async () => {
    const w = await suppliedWallet('100');
    await protocol.setDebt(w.address, 40n * 10n ** 8n);
    try {
      const r = await position(w.id);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.suppliedBalance, formatUsdcAmount(await protocol.suppliedBalance(w.address)));
      assert.deepEqual(r.body.withdrawal, { availableAmount: null });
    } finally {
      await protocol.setDebt(w.address, 0n);
    }
    const repaid = await position(w.id);
    assert.equal(repaid.body.withdrawal.availableAmount, repaid.body.suppliedBalance);
  });

  test('with little liquidity in the reserve: what it can pay out now, not the whole balance', async () => {
    const w = await suppliedWallet('300');
    const liquidity = await protocol.usdcBalance(protocol.aToken);
    await protocol.setAvailableLiquidity(usdc('120.25'));
    try {
      const r = await position(w.id);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.suppliedBalance, formatUsdcAmount(await protocol.suppliedBalance(w.address)));
      assert.deepEqual(r.body.withdrawal, { availableAmount: '120.25' });
    } finally {
      await protocol.setAvailableLiquidity(liquidity);
    }
  });

  test('a paused reserve: nothing withdrawable now; a frozen one still pays out', async () => {
    const w = await suppliedWallet('50');
    const supplied = formatUsdcAmount(await protocol.suppliedBalance(w.address));
    await protocol.setReserve({ paused: true });
    try {
      const r = await position(w.id);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.suppliedBalance, supplied);
      assert.deepEqual(r.body.withdrawal, { availableAmount: '0' });
    } finally {
      await protocol.setReserve({ paused: false });
    }
    await protocol.setReserve({ frozen: true });
    try {
      const r = await position(w.id);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.deepEqual(r.body.withdrawal, { availableAmount: supplied });
    } finally {
      await protocol.setReserve({ frozen: false });
    }
  });
});

describe('refusals: a 4xx with its code, and the node never asked', () => {
  test('a chainId outside the three, malformed, missing or with company; a yield chain not configured', async () => {
    const w = await newWallet();
    const from = proxy.calls.length;
    const cases: Array<[string, number, string, string | undefined]> = [
      ['?chainId=137', 400, 'INVALID_REQUEST', 'querystring.chainId'],
      ['?chainId=abc', 400, 'INVALID_REQUEST', 'querystring.chainId'],
      ['?chainId=011155111', 400, 'INVALID_REQUEST', 'querystring.chainId'],
      ['?chainId=11155111.0', 400, 'INVALID_REQUEST', 'querystring.chainId'],
      ['?chainId=', 400, 'INVALID_REQUEST', 'querystring.chainId'],
      ['', 400, 'INVALID_REQUEST', 'querystring.chainId'],
      ['?chainId=11155111&chainId=1', 400, 'INVALID_REQUEST', 'querystring.chainId'],
      ['?chainId=11155111&asset=usdc', 400, 'INVALID_REQUEST', 'querystring.asset'],
      ['?chainId=8453', 400, 'CHAIN_NOT_CONFIGURED', 'querystring.chainId'],
    ];
    for (const [query, status, code, field] of cases) {
      const r = await svc.v1(partner.secret, 'GET', positionPath(w.id, query));
      assert.equal(r.status, status, `${query}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.code, code, query);
      assert.equal(r.body.field, field, query);
      assert.ok(typeof r.body.message === 'string' && r.body.message.length > 0, query);
    }
    const notConfigured = await svc.v1(partner.secret, 'GET', positionPath(w.id, '?chainId=8453'));
    assert.deepEqual(notConfigured.body.availableChains, [
      { type: 'EVM', chainId: '1' },
      { type: 'EVM', chainId: String(SEPOLIA_CHAIN_ID) },
    ]);
    const chainId = await svc.v1(partner.secret, 'GET', positionPath(w.id, '?chainId=137'));
    assert.match(chainId.body.message, /querystring\.chainId must be one of: 1, 8453, 11155111/);
    assert.equal(proxy.calls.length, from, 'the node was not asked');
  });

  test('a matrix of malformed queries and wallet ids: every answer a 4xx envelope', async () => {
    const w = await newWallet();
    const from = proxy.calls.length;
    const headers = { 'x-api-key': partner.secret };
    const queries = [
      'chainId=1e0',
      'chainId=0x1',
      'chainId=-1',
      'chainId=%201',
      'chainId=1%00',
      'chainId=%EF%BC%91',
      `chainId=${'9'.repeat(400)}`,
      'chainId[]=1',
      'chainId',
      'chainid=11155111',
      'CHAINID=11155111',
      '__proto__=1',
      'chainId=11155111&chainId=11155111',
    ];
    const cases: BadCase[] = [
      ...queries.map((q) => ({
        name: q.slice(0, 40),
        method: 'GET',
        path: `/v1${positionPath(w.id, `?${q}`)}`,
        headers,
        status: 400,
        code: 'INVALID_REQUEST',
      })),
      ...BAD_IDS.map(({ name, segment }) => ({
        name: `wallet id: ${name}`,
        method: 'GET',
        path: `/v1${positionPath(segment, `?chainId=${SEPOLIA_CHAIN_ID}`)}`,
        headers,
      })),
    ];
    const failures = await runCases(svc.url, cases, { forbidden: [partner.secret] });
    assert.deepEqual(failures, []);
    assert.equal(proxy.calls.length, from, 'the node was not asked');
  });

  test('wallets a yield route does not serve: SOLANA, claimed, pre-generated without its share, unknown, not ours', async () => {
    const solana = await newWallet('SOLANA');
    const claimed = await newWallet();
    assert.equal((await svc.admin('POST', `/wallets/${claimed.id}/claim`)).status, 200);
    const pregen = await svc.admin('POST', `/projects/${partner.projectId}/pregenerated-wallets`, {
      type: 'EVM',
      userIdentifier: 'yield-pregen',
      userIdentifierType: 'CUSTOM_ID',
    });
    assert.equal(pregen.status, 201, JSON.stringify(pregen.body));
    const other = await svc.newPartner();
    const foreign = await svc.v1(other.secret, 'POST', '/wallets', {
      type: 'EVM',
      userIdentifier: 'yield-foreign',
      userIdentifierType: 'CUSTOM_ID',
    });
    assert.equal(foreign.status, 201);

    const from = proxy.calls.length;
    const cases: Array<[string, string, number, string]> = [
      ['a SOLANA wallet', solana.id, 400, 'UNSUPPORTED_OPERATION'],
      ['a claimed wallet', claimed.id, 403, 'WALLET_CLAIMED'],
      [
        'a pre-generated wallet whose user share is not migrated',
        pregen.body.wallet.id,
        403,
        'WALLET_SHARE_NOT_MIGRATED',
      ],
      ['an unknown wallet', '00000000-0000-4000-8000-000000000000', 404, 'WALLET_NOT_FOUND'],
      ["another partner's wallet", foreign.body.id, 404, 'WALLET_NOT_FOUND'],
    ];
    for (const [name, walletId, status, code] of cases) {
      const r = await svc.v1(partner.secret, 'GET', positionPath(walletId, `?chainId=${SEPOLIA_CHAIN_ID}`));
      assert.equal(r.status, status, `${name}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.code, code, name);
    }
    const anonymous = await svc.v1(undefined, 'GET', positionPath(claimed.id, `?chainId=${SEPOLIA_CHAIN_ID}`));
    assert.equal(anonymous.status, 401);
    assert.equal(anonymous.body.code, 'API_KEY_REQUIRED');
    assert.equal(proxy.calls.length, from, 'the node was not asked');
  });
});

describe('a node that does not answer: 503 RPC_UNAVAILABLE with Retry-After', () => {
  const assertUnavailable = (r: { status: number; body: any; headers: Headers }, what: string) => {
    assert.equal(r.status, 503, `${what}: ${JSON.stringify(r.body)}`);
    assert.equal(r.body.code, 'RPC_UNAVAILABLE', what);
    assert.ok(r.headers.get('retry-after'), what);
    assert.doesNotMatch(r.body.message, /127\.0\.0\.1|http:/, `${what}: no RPC URL in the answer`);
  };

  test("a node that is down (mainnet's, whose environment is production: the yield chain ignores it)", async () => {
    const w = await newWallet();
    assertUnavailable(await position(w.id, 1), 'connection refused');
  });

  test('a node that drops the answer, one rate-limiting, one serving another chain; then it answers again', async () => {
    const w = await newWallet();
    const faults = [
      { method: 'eth_call', fault: { kind: 'drop-answer' as const } },
      { method: 'eth_call', fault: { kind: 'error' as const, code: -32005, message: 'rate limit exceeded' } },
      { method: 'eth_chainId', fault: { kind: 'result' as const, result: '0x1' } },
    ];
    for (const rule of faults) {
      const remove = proxy.add(rule);
      try {
        const r = await position(w.id);
        assertUnavailable(r, rule.fault.kind);
        if (rule.method === 'eth_chainId') assert.match(r.body.message, /serves another chain than 11155111/);
      } finally {
        remove();
      }
    }
    const back = await position(w.id);
    assert.equal(back.status, 200, JSON.stringify(back.body));
  });
});
