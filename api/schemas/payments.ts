import { Type } from '@sinclair/typebox';
import { INTENT_KINDS, SOLANA_NETWORKS, TRANSACTION_STATUSES, TRANSFER_KINDS } from '../../chains/domain/payments.ts';
import { LIMIT_PATTERN, Paginated, ref, StringEnum } from './common.ts';

export const TransferBody = Type.Object(
  {
    to: Type.String({ minLength: 1, maxLength: 128, description: 'Recipient address.' }),
    value: Type.String({
      minLength: 1,
      maxLength: 80,
      description: 'Positive integer in the smallest unit (wei, lamports, or token units).',
    }),
    chainId: Type.Optional(
      Type.Union([Type.String({ maxLength: 20 }), Type.Integer({ minimum: 1 })], {
        description: 'EVM chain id (required for EVM wallets; refused for SOLANA).',
      }),
    ),
    network: Type.Optional(
      StringEnum(SOLANA_NETWORKS, {
        description: 'SOLANA wallets only; default SOLANA. Development API keys use SOLANA_DEVNET.',
      }),
    ),
    tokenAddress: Type.Optional(
      Type.String({ minLength: 1, maxLength: 128, description: 'ERC-20 contract or SPL mint; omit for native.' }),
    ),
    kind: Type.Optional(
      StringEnum(TRANSFER_KINDS, {
        description: 'Default NATIVE, or the token kind of the wallet type when tokenAddress is given.',
      }),
    ),
    broadcast: Type.Optional(
      Type.Boolean({
        description: 'Default true: build, sign, broadcast and record. false: build and sign only (no record).',
      }),
    ),
    addressScreening: Type.Optional(
      Type.Boolean({ description: 'Address screening is not available on this service: true is refused.' }),
    ),
    autoRetry: Type.Optional(
      Type.Object(
        {
          maxExecutionFeeWei: Type.Optional(
            Type.String({
              maxLength: 78,
              description: 'EVM: the most one attempt may cost (gasLimit × fee per gas), wei.',
            }),
          ),
          maxExecutionFeeLamports: Type.Optional(
            Type.String({
              maxLength: 20,
              description:
                'SOLANA: the most one attempt may cost in fees (base plus priority fee), lamports; the service chooses the priority fee within it.',
            }),
          ),
          expiresAt: Type.Optional(
            Type.String({ maxLength: 40, description: 'ISO 8601 with a time zone, within the next 24 hours.' }),
          ),
        },
        {
          additionalProperties: true,
          description:
            'Send with automatic retries until `expiresAt`: EVM fee replacements within `maxExecutionFeeWei` per attempt; SOLANA rebuilt attempts (a fresh blockhash, a raised priority fee) within `maxExecutionFeeLamports`, each only once the previous one is proven expired. Needs an Idempotency-Key; answers 202 with the record.',
        },
      ),
    ),
    type: Type.Optional(
      Type.Union([Type.Literal(0), Type.Literal(2)], {
        description:
          "EVM only. 0: legacy (`gasPrice`); 2: EIP-1559 (`maxFeePerGas`, `maxPriorityFeePerGas`). Default: implied by the fee fields given, else the chain's.",
      }),
    ),
    nonce: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: Number.MAX_SAFE_INTEGER,
        description:
          "EVM only. Must be the wallet's next nonce (the service's choice when omitted); another is refused with `expectedNonce`.",
      }),
    ),
    gasLimit: Type.Optional(
      Type.String({
        pattern: '^(0|[1-9][0-9]*)$',
        maxLength: 20,
        description: 'EVM only, decimal integer (at least 21000). Kept as given; omitted: estimated plus 20%.',
      }),
    ),
    maxFeePerGas: Type.Optional(
      Type.String({
        pattern: '^(0|[1-9][0-9]*)$',
        maxLength: 78,
        description: 'EVM type 2 only, wei per gas, positive. Kept as given; omitted: twice the base fee plus the tip.',
      }),
    ),
    maxPriorityFeePerGas: Type.Optional(
      Type.String({
        pattern: '^(0|[1-9][0-9]*)$',
        maxLength: 78,
        description:
          "EVM type 2 only, wei per gas, at most maxFeePerGas. Kept as given; omitted: the node's tip (or recent blocks' paid tips).",
      }),
    ),
    gasPrice: Type.Optional(
      Type.String({
        pattern: '^(0|[1-9][0-9]*)$',
        maxLength: 78,
        description:
          "EVM type 0 only, wei per gas, positive. Kept as given; omitted: the greater of the node's price and base fee plus tip.",
      }),
    ),
  },
  {
    additionalProperties: false,
    examples: [{ to: '0x000000000000000000000000000000000000bEEF', value: '1000000000000000', chainId: '8453' }],
  },
);

/** estimate-fee's answer for an EVM wallet. */
export const EvmFeeEstimate = Type.Object(
  {
    family: Type.Literal('EVM'),
    chainId: Type.String(),
    type: Type.Union([Type.Literal(0), Type.Literal(2)]),
    gasLimit: Type.String({ description: 'Estimated gas plus the 20% buffer.' }),
    maxFeePerGas: Type.Optional(Type.String()),
    maxPriorityFeePerGas: Type.Optional(Type.String()),
    gasPrice: Type.Optional(Type.String()),
    baseFeePerGas: Type.Optional(Type.String()),
    maxFee: Type.String({ description: 'gasLimit × (maxFeePerGas or gasPrice), wei: the most the fee can be.' }),
    expectedFee: Type.String({ description: 'gasLimit × (base fee + tip, or gasPrice), wei, at current prices.' }),
  },
  { $id: 'EvmFeeEstimate' },
);

/** estimate-fee's answer for a SOLANA wallet. */
export const SolanaFeeEstimate = Type.Object(
  {
    family: Type.Literal('SOLANA'),
    network: Type.String(),
    baseFee: Type.String({ description: 'Lamports per signature × signatures.' }),
    computeUnitLimit: Type.String(),
    computeUnitPriceMicroLamports: Type.String(),
    priorityFee: Type.String({ description: 'computeUnitLimit × price / 10^6, rounded up, lamports.' }),
    accountCreationRent: Type.String({
      description: "Rent of the recipient's token account when the transfer creates it (not a fee), lamports.",
    }),
    totalFee: Type.String({ description: 'baseFee + priorityFee, lamports.' }),
  },
  { $id: 'SolanaFeeEstimate' },
);

/** estimate-fee's answer, by the wallet's family (`family`). */
export const FeeEstimate = Type.Union([ref(EvmFeeEstimate), ref(SolanaFeeEstimate)], { $id: 'FeeEstimate' });

/** A transaction record (spec: Transaction record). */
/** An attempt of an auto-retry payment (spec: `autoRetry.attempts`). */
const AutoRetryAttempt = Type.Object(
  {
    ordinal: Type.Integer({
      minimum: 0,
      maximum: 3,
      description: '0: the original; 1-3: replacements (EVM) or rebuilt attempts (Solana).',
    }),
    stage: Type.String({
      description:
        'prepared, signing, rejected, signed, submission_unknown, submitted. `signing` after a stop is uncertain and never signed again.',
    }),
    preparedAt: Type.String({ format: 'date-time' }),
    hash: Type.Union([Type.String(), Type.Null()]),
    lastBroadcastAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    lastValidBlockHeight: Type.Optional(
      Type.Integer({
        minimum: 0,
        description: "Solana only: the last block height at which the attempt's blockhash is accepted.",
      }),
    ),
  },
  { additionalProperties: false },
);

/** The spec's `autoRetry` object, on the single-record lookup of an auto-retry transfer. */
export const AutoRetryView = Type.Object(
  {
    state: Type.String({
      description: 'active, stopped or resolved: retry processing only (the outcome is `status`).',
    }),
    reason: Type.Union([Type.String(), Type.Null()], {
      description:
        'The latest stop or wait reason: DEADLINE_REACHED, ATTEMPT_LIMIT_REACHED, FEE_CEILING_REACHED, SIGNING_AUTHORITY_ENDED, POLICY_DENIED, POLICY_REVIEW_REQUIRED, SIGNING_UNCERTAIN, SIGNING_FAILED, INSUFFICIENT_FUNDS_FOR_REPLACEMENT (Solana), or the code of a first send the node refused (stops); INSUFFICIENT_FUNDS_FOR_REPLACEMENT (EVM), BASE_FEE_ABOVE_CEILING, RPC_UNAVAILABLE (waits); RECOVERY_NONCE_CONSUMED, CANCELLED (resolved, EVM). A Solana payment whose every attempt expired is resolved with the reason no further attempt was made (its failureCode is TRANSACTION_EXPIRED).',
    }),
    network: Type.Optional(Type.String({ description: 'Solana only: SOLANA or SOLANA_DEVNET, chosen at admission.' })),
    maxExecutionFeeWei: Type.Optional(
      Type.String({ description: 'EVM only: the fee ceiling of each attempt, as admitted (wei).' }),
    ),
    maxExecutionFeeLamports: Type.Optional(
      Type.String({ description: 'Solana only: the fee ceiling of each attempt, as admitted (lamports).' }),
    ),
    expiresAt: Type.String({ format: 'date-time' }),
    nonce: Type.Optional(
      Type.Union([Type.Integer(), Type.Null()], { description: 'EVM only: the saved payment nonce.' }),
    ),
    bumpCount: Type.Integer({ minimum: 0, maximum: 3 }),
    latestAttemptHash: Type.Union([Type.String(), Type.Null()]),
    attempts: Type.Array(AutoRetryAttempt),
  },
  { additionalProperties: false },
);

export const TransactionRecord = Type.Object(
  {
    transactionId: Type.String(),
    intentKind: Type.String({ description: 'transfer, sign_transaction or yield.' }),
    type: Type.String({ description: 'Wallet type: EVM or SOLANA.' }),
    status: Type.String({
      description: 'pending, submitted, confirmed, reverted, failed. Treat values you do not know as non-terminal.',
    }),
    hash: Type.Union([Type.String(), Type.Null()]),
    blockNumber: Type.Optional(Type.String()),
    blockHash: Type.Optional(Type.String()),
    failureStage: Type.Optional(Type.String()),
    failureCode: Type.Optional(Type.String()),
    failureMessage: Type.Optional(Type.String()),
    monitoring: Type.Optional(Type.Object({}, { additionalProperties: true })),
    chainId: Type.Optional(Type.String()),
    network: Type.Optional(Type.String()),
    to: Type.Optional(Type.String()),
    value: Type.Optional(Type.String()),
    tokenAddress: Type.Optional(Type.String()),
    autoRetry: Type.Optional(AutoRetryView),
    createdAt: Type.String({ format: 'date-time' }),
  },
  { additionalProperties: false, $id: 'TransactionRecord' },
);

export const TransactionList = Paginated(TransactionRecord, 'TransactionList');

export const ListTransactionsQuery = Type.Object(
  {
    status: Type.Optional(StringEnum(TRANSACTION_STATUSES)),
    intentKind: Type.Optional(StringEnum(INTENT_KINDS)),
    cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    limit: Type.Optional(Type.String({ pattern: LIMIT_PATTERN, description: 'Page size 1-100; default 20.' })),
  },
  { additionalProperties: false },
);

export const TransactionParams = Type.Object({
  walletId: Type.String({ minLength: 1, maxLength: 128 }),
  transactionId: Type.String({ minLength: 1, maxLength: 128 }),
});
