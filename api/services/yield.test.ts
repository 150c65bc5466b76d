/**
 * The position use case between its neighbours, with stand-ins for the wallet rows and the chains: which market
 * each chain is read with (the chains file's `yield` entries over the defaults), how a snapshot becomes the answer,
 * and what each refusal and failure answers. The whole path against a node is test/yield-position.spec.ts.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createWalletSigner } from '../../actors/signing/wallet-signer.ts';
import { InternalError, ServiceError } from '../../chains/domain/errors.ts';
import type { LendingMarket } from '../../chains/evm/lending-protocol.ts';
import type { YieldSnapshot } from '../../chains/evm/read-yield-position.ts';
import { DEFAULT_LENDING_MARKETS } from '../../chains/evm/resolve-lending-market.ts';
import { ChainRpcError, type PaymentChain } from '../../chains/payment-chain.ts';
import type { WalletRow } from '../../store/wallets-repo.ts';
import type { Principal } from '../plugins/auth.ts';
import { createYieldService } from './yield.ts';

const ADDRESS = '0x5B38Da6a701c568545dCfcB03FcB875f56beddC4';
const principal: Principal = {
  keyId: 'K',
  projectId: 'P',
  environment: 'development',
  plan: 'enterprise',
  rateLimitPerMinute: 1000,
};

function wallet(id: string, fields: Partial<WalletRow> = {}): WalletRow {
  return {
    id,
    projectId: 'P',
    type: 'EVM',
    scheme: 'DKLS',
    status: 'ready',
    address: ADDRESS,
    publicKey: '04ab',
    userIdentifier: id,
    userIdentifierType: 'CUSTOM_ID',
    cosmosPrefix: null,
    custody: 'managed',
    claimedAt: null,
    claimedByUserId: null,
    shareMigratedAt: null,
    createdAt: '2026-01-01T00:00:00.000Z',
    updatedAt: '2026-01-01T00:00:00.000Z',
    seq: 1,
    ...fields,
  };
}

function snapshot(fields: Partial<YieldSnapshot> = {}): YieldSnapshot {
  return {
    blockNumber: 7_301_822n,
    blockTimestamp: 1_768_383_012n,
    reserve: {
      configurationBitmap: 0n,
      configuration: {
        ltv: 7500,
        liquidationThreshold: 7800,
        decimals: 6,
        active: true,
        frozen: false,
        paused: false,
        supplyCap: 0n,
      },
      liquidityIndex: 10n ** 27n,
      currentLiquidityRate: 0n,
      lastUpdateTimestamp: 0,
      aToken: '0xA7e0000000000000000000000000000000000001',
      variableDebtToken: '0x0000000000000000000000000000000000000000',
      accruedToTreasury: 0n,
    },
    accountData: {
      totalCollateralBase: 0n,
      totalDebtBase: 0n,
      availableBorrowsBase: 0n,
      currentLiquidationThreshold: 0n,
      ltv: 0n,
      healthFactor: 2n ** 256n - 1n,
    },
    suppliedBalance: 1_250_004_211n,
    totalSupplied: 10n ** 12n,
    walletBalance: 0n,
    allowance: 0n,
    nativeBalance: 0n,
    availableLiquidity: 10n ** 12n,
    ...fields,
  };
}

/** A service over `rows`, with EVM chains `chainIds` whose reads answer `read` and are recorded. */
function setup(options: {
  rows?: WalletRow[];
  chainIds?: number[];
  overrides?: { chainId: number; pool: string; usdc: string }[];
  read?: (market: LendingMarket) => Promise<YieldSnapshot>;
  withoutReader?: boolean;
}) {
  const rows = new Map((options.rows ?? [wallet('w')]).map((r) => [r.id, r]));
  const wallets = { get: (projectId: string, id: string) => (projectId === 'P' ? rows.get(id) : undefined) };
  const reads: Array<{ market: LendingMarket; account: string }> = [];
  const chains = new Map<string, PaymentChain>(
    (options.chainIds ?? [1, 8453, 11155111]).map((id) => [
      `evm:${id}`,
      {
        family: 'EVM',
        key: `evm:${id}`,
        environment: 'production',
        ...(options.withoutReader
          ? {}
          : {
              readYieldPosition: async (market: LendingMarket, account: `0x${string}`) => {
                reads.push({ market, account });
                return (options.read ?? (async () => snapshot()))(market);
              },
            }),
      } as unknown as PaymentChain,
    ]),
  );
  const service = createYieldService({
    store: { wallets } as never,
    // Positions only: no operation is admitted here (test/yield-operations.spec.ts runs them).
    host: {} as never,
    yieldActors: {} as never,
    signer: createWalletSigner({ wallets, enclave: { sign: () => assert.fail('nothing is signed') } }),
    chains: { get: (key) => chains.get(key) },
    overrides: options.overrides ?? [],
  });
  return { service, reads };
}

async function refusal(promise: Promise<unknown>) {
  try {
    await promise;
  } catch (err) {
    if (err instanceof ServiceError) {
      return { code: err.code, status: err.httpStatus, transient: err.transient, details: err.details };
    }
    throw err;
  }
  return assert.fail('expected a refusal');
}

test("each chain is read with its market: the defaults, or the chains file's yield entry (checksummed)", async () => {
  const { service, reads } = setup({
    overrides: [
      {
        chainId: 8453,
        pool: '0x1111111111111111111111111111111111111111',
        usdc: '0xabcdefabcdefabcdefabcdefabcdefabcdefabcd',
      },
    ],
  });
  for (const chainId of [1, 8453, 11155111]) await service.position(principal, 'w', chainId);
  assert.deepEqual(reads, [
    { market: { chainId: 1, ...DEFAULT_LENDING_MARKETS[1] }, account: ADDRESS },
    {
      market: {
        chainId: 8453,
        pool: '0x1111111111111111111111111111111111111111',
        usdc: '0xABcdEFABcdEFabcdEfAbCdefabcdeFABcDEFabCD',
      },
      account: ADDRESS,
    },
    { market: { chainId: 11155111, ...DEFAULT_LENDING_MARKETS[11155111] }, account: ADDRESS },
  ]);
});

test('the answer: decimal USDC strings, the block as a decimal string and its time as ISO 8601', async () => {
  const { service } = setup({});
  assert.deepEqual(await service.position(principal, 'w', 1), {
    suppliedBalance: '1250.004211',
    withdrawal: { availableAmount: '1250.004211' },
    blockNumber: '7301822',
    blockTimestamp: '2026-01-14T09:30:12.000Z',
  });
  const withDebt = setup({
    read: async () => snapshot({ accountData: { ...snapshot().accountData, totalDebtBase: 1n } }),
  });
  assert.deepEqual((await withDebt.service.position(principal, 'w', 1)).withdrawal, { availableAmount: null });
  const short = setup({ read: async () => snapshot({ availableLiquidity: 1n }) });
  assert.deepEqual((await short.service.position(principal, 'w', 1)).withdrawal, { availableAmount: '0.000001' });
});

test('wallets: unknown, not EVM, claimed, not ready, pre-generated without its share; the chain is not read', async () => {
  const { service, reads } = setup({
    rows: [
      wallet('solana', { type: 'SOLANA', scheme: 'ED25519', claimedAt: '2026-01-02T00:00:00.000Z' }),
      wallet('claimed', { claimedAt: '2026-01-02T00:00:00.000Z' }),
      wallet('creating', { status: 'creating', address: null, publicKey: null }),
      wallet('pregen', { custody: 'pregen' }),
    ],
  });
  const cases: Array<[string, string, number]> = [
    ['missing', 'WALLET_NOT_FOUND', 404],
    ['solana', 'UNSUPPORTED_OPERATION', 400],
    ['claimed', 'WALLET_CLAIMED', 403],
    ['creating', 'WALLET_NOT_READY', 400],
    ['pregen', 'WALLET_SHARE_NOT_MIGRATED', 403],
  ];
  for (const [id, code, status] of cases) {
    const r = await refusal(service.position(principal, id, 11155111));
    assert.deepEqual([r.code, r.status], [code, status], id);
  }
  assert.equal(reads.length, 0);
});

test('a chain that is not one of the three, or has no evm entry: 400 naming the query field', async () => {
  const { service, reads } = setup({ chainIds: [11155111, 1, 31337] });
  const other = await refusal(service.position(principal, 'w', 137));
  assert.deepEqual(
    [other.code, other.status, other.details],
    ['INVALID_REQUEST', 400, { field: 'querystring.chainId' }],
  );
  const absent = await refusal(service.position(principal, 'w', 8453));
  assert.deepEqual([absent.code, absent.status], ['CHAIN_NOT_CONFIGURED', 400]);
  assert.deepEqual(absent.details, {
    field: 'querystring.chainId',
    availableChains: [
      { type: 'EVM', chainId: '1' },
      { type: 'EVM', chainId: '11155111' },
    ],
  });
  const none = setup({ chainIds: [31337] });
  const empty = await refusal(none.service.position(principal, 'w', 1));
  assert.deepEqual(empty.details?.['availableChains'], []);
  assert.equal(reads.length, 0);
});

test("the node's failures: transient ones are 503 RPC_UNAVAILABLE; a wrong market stays internal", async () => {
  const down = setup({
    read: async () => {
      throw new ChainRpcError('transient', 'RPC_UNAVAILABLE', "the chain's RPC node did not answer in time");
    },
  });
  const r = await refusal(down.service.position(principal, 'w', 11155111));
  assert.deepEqual([r.code, r.status, r.transient], ['RPC_UNAVAILABLE', 503, true]);

  const absurd = setup({ read: async () => snapshot({ blockTimestamp: 2n ** 64n }) });
  const t = await refusal(absurd.service.position(principal, 'w', 11155111));
  assert.deepEqual([t.code, t.status], ['RPC_UNAVAILABLE', 503]);

  const wrong = setup({
    read: async () => {
      throw new InternalError('LENDING_MARKET_INVALID', 'USDC is not listed on the lending pool');
    },
  });
  await assert.rejects(wrong.service.position(principal, 'w', 11155111), { code: 'LENDING_MARKET_INVALID' });

  const readerless = setup({ withoutReader: true });
  await assert.rejects(readerless.service.position(principal, 'w', 11155111), { code: 'YIELD_READER_MISSING' });
});
