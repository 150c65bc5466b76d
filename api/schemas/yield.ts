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
