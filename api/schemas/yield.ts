import { Type } from '@sinclair/typebox';
import { YIELD_CHAIN_IDS } from '../../chains/domain/yield.ts';
import { StringEnum } from './common.ts';

/** A yield chain id in a query string: one of the spec's three, written as a decimal integer. */
const YieldChainIdQuery = StringEnum(
  YIELD_CHAIN_IDS.map((id) => String(id)) as unknown as readonly ['1', '8453', '11155111'],
  {
    description:
      'The chain: 1 (Ethereum mainnet, native USDC), 8453 (Base, native USDC) or 11155111 (Sepolia, the lending protocol test USDC). It must have an `evm` entry in the chains file; it is chosen independently of the API key environment.',
  },
);

/** `GET /v1/wallets/{walletId}/yield/position`'s query. */
export const YieldPositionQuery = Type.Object({ chainId: YieldChainIdQuery }, { additionalProperties: false });

/** A USDC amount as the yield routes write it: a decimal string with at most six places (`"1.5"`, `"0.000001"`). */
const UsdcAmount = (description: string) =>
  Type.String({ pattern: '^(0|[1-9][0-9]*)(\\.[0-9]{0,5}[1-9])?$', description });

/** A wallet's position in the lending market of one chain (spec: Yield position). */
export const YieldPosition = Type.Object(
  {
    suppliedBalance: UsdcAmount(
      'USDC supplied to the lending market, with the supply interest accrued up to the snapshot (the aToken balance); not historical earnings.',
    ),
    withdrawal: Type.Object(
      {
        availableAmount: Type.Union([UsdcAmount('USDC that a withdrawal could take now.'), Type.Null()], {
          description:
            'Advisory: the supplied balance, capped by what the market can pay out now; "0" while the market is paused or inactive. Null when the wallet has debt on the market: what it may withdraw then depends on its health factor.',
        }),
      },
      { additionalProperties: false },
    ),
    blockNumber: Type.String({ description: 'The block whose state every figure is read from, decimal.' }),
    blockTimestamp: Type.String({ format: 'date-time', description: "That block's timestamp." }),
  },
  {
    additionalProperties: false,
    $id: 'YieldPosition',
    examples: [
      {
        suppliedBalance: '1250.004211',
        withdrawal: { availableAmount: '1250.004211' },
        blockNumber: '7301822',
        blockTimestamp: '2026-01-14T09:30:12.000Z',
      },
    ],
  },
);

/** A deposit's or withdrawal's body (spec: Yield routes). */
const yieldBody = (action: 'deposit' | 'withdrawal') =>
  Type.Object(
    {
      chainId: Type.Integer({
        description:
          'The chain: 1 (Ethereum mainnet, native USDC), 8453 (Base, native USDC) or 11155111 (Sepolia, the lending protocol test USDC). It must have an `evm` entry in the chains file; it is chosen independently of the API key environment, and mainnet uses real funds.',
        examples: [11155111],
      }),
      amount: Type.String({
        minLength: 1,
        maxLength: 80,
        description:
          action === 'deposit'
            ? 'USDC to deposit: a positive decimal string with at most six decimal places ("1.5", "0.000001").'
            : 'USDC to withdraw: a positive decimal string with at most six decimal places, or `all` for the whole supplied balance (the pool reads it as 2^256 − 1, and so do policies).',
        examples: [action === 'deposit' ? '250.5' : 'all'],
      }),
    },
    { additionalProperties: false },
  );

export const YieldDepositBody = yieldBody('deposit');
export const YieldWithdrawalBody = yieldBody('withdrawal');

export const YieldOperationParams = Type.Object({
  walletId: Type.String({ minLength: 1, maxLength: 128 }),
  operationId: Type.String({ minLength: 1, maxLength: 128 }),
});

/** One transaction of an operation. */
const YieldStep = Type.Object(
  {
    type: StringEnum(['approve', 'supply', 'withdraw'] as const, {
      description: "`approve`: the pool's USDC allowance, of exactly the amount; `supply` or `withdraw`: the pool.",
    }),
    transactionId: Type.String({
      description:
        'Its record in transaction history (`intentKind` `yield`), with its own `rest.transaction.*` events.',
    }),
    status: Type.String({
      description:
        "The record's status: `pending`, `submitted`, `confirmed` (final on the chain), `reverted`, `failed`. Unknown values are non-terminal.",
    }),
    hash: Type.Union([Type.String(), Type.Null()], { description: 'Null until it is signed.' }),
    error: Type.Optional(
      Type.Object(
        { code: Type.String({ description: "The record's failure code, for example NONCE_CONSUMED." }) },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);

/** The spec's Yield operation. */
export const YieldOperation = Type.Object(
  {
    id: Type.String({ description: 'The operation id.' }),
    walletId: Type.String(),
    chainId: Type.Integer(),
    action: StringEnum(['deposit', 'withdraw'] as const),
    amount: Type.String({ description: 'Decimal USDC as requested (normalized), or `all`.' }),
    status: StringEnum(['pending', 'submitted', 'confirmed', 'failed', 'requires_action', 'cancelled'] as const, {
      description:
        '`pending` until a transaction is signed (also while it waits for another operation of the wallet, or retries after the node did not answer); `submitted` once signed bytes are stored; `confirmed` at two confirmations of the final transaction on the canonical chain (not finality); `failed` (a revert, a nonce consumed without a receipt: `NONCE_CONSUMED`); `requires_action` (`LENDING_SUPPLY_CAP_EXCEEDED`, `POLICY_REVIEW_REQUIRED` with `reviewId`: send the same POST with the same key and body again once fixed); `cancelled`.',
    }),
    transactions: Type.Array(YieldStep, {
      description: 'Its transactions, in order: an approval if one was needed, then the lending call.',
    }),
    error: Type.Union(
      [
        Type.Object(
          {
            code: Type.String(),
            message: Type.String(),
            reviewId: Type.Optional(Type.String()),
            caseId: Type.Optional(Type.String()),
          },
          { additionalProperties: false },
        ),
        Type.Null(),
      ],
      { description: 'Why it failed or waits for action; null otherwise.' },
    ),
    createdAt: Type.String({ format: 'date-time' }),
    updatedAt: Type.String({ format: 'date-time' }),
  },
  {
    additionalProperties: false,
    $id: 'YieldOperation',
    examples: [
      {
        id: '6f1c2a8e-4d0b-4a53-9d4e-1f7e0b8c2d11',
        walletId: 'b1e7…',
        chainId: 11155111,
        action: 'deposit',
        amount: '250.5',
        status: 'submitted',
        transactions: [
          { type: 'approve', transactionId: '2c9f…', status: 'confirmed', hash: '0x5e…' },
          { type: 'supply', transactionId: '8d41…', status: 'submitted', hash: '0x91…' },
        ],
        error: null,
        createdAt: '2026-11-28T09:30:00.000Z',
        updatedAt: '2026-11-28T09:30:41.000Z',
      },
    ],
  },
);

/** The operator's incident switch of one yield chain (admin API). */
export const YieldSwitch = Type.Object(
  {
    chainId: Type.Integer(),
    enabled: Type.Boolean({ description: 'False: new yield operations on the chain answer 409 YIELD_DISABLED.' }),
    reason: Type.Union([Type.String(), Type.Null()], {
      description: "The operator's note, shown in the 409's message.",
    }),
    updatedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  },
  { additionalProperties: false, $id: 'YieldSwitch' },
);

/** Every yield chain's switch (admin API). */
export const YieldSwitchList = Type.Array(YieldSwitch, { $id: 'YieldSwitchList' });
