/**
 * The webhook events this service sends, as the public OpenAPI document's `webhooks` show them: the envelope
 * `{id, type, createdAt, data}` and each event's `data`, field for field what the emitters write (actors/ and
 * api/services/, through the outbox). Every test service checks the events it wrote against the document when it
 * stops (test/helpers/event-contract-check.ts).
 */
import { type TSchema, Type } from '@sinclair/typebox';
import { EVENT_TYPES, type EventType } from '../../chains/domain/events.ts';
import { FAILURE_STAGES, INTENT_KINDS, PAYMENT_FAMILIES } from '../../chains/domain/payments.ts';
import { WALLET_TYPES } from '../../chains/domain/wallets.ts';
import { ref, StringEnum } from './common.ts';

const Timestamp = (description: string) => Type.String({ format: 'date-time', description });
const UserId = Type.String({
  description:
    "The wallet's id: this service keeps no user records, and never sends the wallet's userIdentifier (it may be an e-mail address or a phone number). For a claim, the user id the operator gave, else the wallet's id.",
});
const WalletId = Type.String({ description: 'The wallet.' });
const WalletAddress = Type.String({ description: "The wallet's address." });
const WalletType = StringEnum(WALLET_TYPES, { description: 'The wallet type.' });
const Family = StringEnum(PAYMENT_FAMILIES, { description: "The wallet's type: EVM or SOLANA." });

/** The fields every `send.*` event carries: a transfer and the chain it is on. */
const sendFields = {
  userId: UserId,
  walletId: WalletId,
  txHash: Type.Union([Type.String(), Type.Null()], {
    description: 'EVM transaction hash or Solana signature; null for a transfer that failed before it was signed.',
  }),
  type: Family,
  evmChainId: Type.Optional(Type.String({ description: 'EVM chain id; absent for SOLANA.' })),
  isDevnet: Type.Boolean({ description: 'The chain serves development keys: Solana devnet or a test EVM chain.' }),
};

/** The fields every `rest.transaction.*` event carries: the transaction record it resolves. */
const recordFields = {
  transactionId: Type.String({ description: 'The transaction record (`transactionId` of the broadcasting call).' }),
  walletId: WalletId,
  partnerId: Type.String({ description: 'The project.' }),
  intentKind: StringEnum(INTENT_KINDS, { description: 'What wrote the record.' }),
  type: Family,
};

/** Each event's meaning and `data`, by event type; the `satisfies` makes the list complete and sent-only. */
const EVENTS = {
  'wallet.created': {
    name: 'WalletCreated',
    meaning:
      "A wallet is ready: its key generation finished. Sent to the endpoint of the key that created it (an operator's pre-generated wallet: to every endpoint of the project).",
    data: {
      userId: UserId,
      walletId: WalletId,
      walletAddress: WalletAddress,
      walletType: WalletType,
      walletCreatedAt: Timestamp('When the wallet was created.'),
    },
  },
  'wallet.pregen_claimed': {
    name: 'WalletPregenClaimed',
    meaning:
      'A pre-generated wallet was claimed by its user: from now on REST signing refuses it. Sent to every endpoint of the project.',
    data: {
      userId: UserId,
      walletId: WalletId,
      walletAddress: WalletAddress,
      walletType: WalletType,
      claimedAt: Timestamp('When the claim was recorded.'),
    },
  },
  'transaction.signed': {
    name: 'TransactionSigned',
    meaning:
      'The service signed for the wallet over REST: sign-message, sign-raw, sign-typed-data, sign-authorization, or sign-transaction without broadcast.',
    data: {
      userId: UserId,
      walletId: WalletId,
      walletAddress: WalletAddress,
      chainId: Type.Union([Type.String(), Type.Null()], {
        description:
          'The chain the signature is for: the EVM chain id (EVM transactions, authorizations, typed data whose domain has a chainId), the Solana network the request named, or the Stellar network passphrase; null otherwise (messages, raw bytes, Sui transactions).',
      }),
      signedAt: Timestamp('When it was signed.'),
    },
  },
  'send.broadcasted': {
    name: 'SendBroadcasted',
    meaning: "A transfer's node accepted the signed transaction.",
    data: { ...sendFields, broadcastedAt: Timestamp('When the node accepted it.') },
  },
  'send.confirmed': {
    name: 'SendConfirmed',
    meaning: 'A transfer is final on-chain and succeeded.',
    data: { ...sendFields, confirmedAt: Timestamp('When the service saw it final.') },
  },
  'send.failed': {
    name: 'SendFailed',
    meaning: 'A transfer failed or reverted on-chain.',
    data: {
      ...sendFields,
      error: Type.Optional(Type.String({ description: 'What went wrong, when known.' })),
      failedAt: Timestamp('When the service saw it fail.'),
    },
  },
  'rest.transaction.confirmed': {
    name: 'RestTransactionConfirmed',
    meaning: 'A transaction record (transfer, sign-transaction with broadcast, or a yield step) is confirmed on-chain.',
    data: {
      ...recordFields,
      hash: Type.String({ description: 'EVM transaction hash or Solana signature.' }),
      blockNumber: Type.String({ description: 'The block (EVM) or slot (Solana) that includes it, decimal.' }),
      blockHash: Type.Union([Type.String(), Type.Null()], {
        description:
          'That block (or slot) hash; null only when the Solana node had already pruned the block when the service saw the transaction final.',
      }),
      resolvedAt: Timestamp('When the service saw it final.'),
    },
  },
  'rest.transaction.failed': {
    name: 'RestTransactionFailed',
    meaning:
      'A transaction record reverted on-chain or failed. A `monitor_timeout` failure does not prove the chain failed it: fetch the record before acting on a late event.',
    data: {
      ...recordFields,
      status: StringEnum(['reverted', 'failed'] as const, { description: 'The final status of the record.' }),
      hash: Type.Union([Type.String(), Type.Null()], {
        description: 'The original transaction hash; null when it failed before it was signed.',
      }),
      resolvedAt: Timestamp('When the service saw it final.'),
      failureStage: Type.Optional(
        StringEnum(FAILURE_STAGES, { description: 'Where it failed (status `failed` only).' }),
      ),
      failureCode: Type.Optional(
        Type.String({ description: 'Why, e.g. INSUFFICIENT_NATIVE_BALANCE, REPLACED (status `failed` only).' }),
      ),
      failureMessage: Type.Optional(Type.String({ description: 'Detail text (status `failed` only).' })),
      winningHash: Type.Optional(
        Type.String({
          description:
            "The transaction that used this one's nonce on the finalized chain (failureCode `REPLACED`), as in the record's `monitoring.winningHash`; `hash` remains the original hash.",
        }),
      ),
    },
  },
  'test.ping': {
    name: 'TestPing',
    meaning:
      'A test an operator asked for (POST /admin/v1/api-keys/{keyId}/webhook/test), whatever events the endpoint selected.',
    data: {
      apiKeyId: Type.String({ description: 'The API key whose endpoint is tested.' }),
      pingedAt: Timestamp('When the test was asked for.'),
    },
  },
} satisfies Record<EventType, { name: string; meaning: string; data: Record<string, TSchema> }>;

/** The envelope of every delivery. */
export const WebhookEvent = Type.Object(
  {
    id: Type.String({ description: 'The event id, `evt_<uuid>`; equals the `webhook-id` header.' }),
    type: StringEnum(EVENT_TYPES, { description: 'The event type: says what `data` holds.' }),
    createdAt: Timestamp('When the event happened.'),
    data: Type.Object(
      {},
      { additionalProperties: true, description: "The event's fields: which ones depends on `type`." },
    ),
  },
  { $id: 'WebhookEvent', description: 'The JSON body of every webhook delivery.' },
);

/** One sent event: what it means, and the named schemas of its `data` and of its whole body. */
export interface EventDocument {
  type: EventType;
  meaning: string;
  data: TSchema;
  event: TSchema;
}

/** Every sent event, in EVENT_TYPES order. */
export const EVENT_DOCUMENTS: readonly EventDocument[] = EVENT_TYPES.map((type) => {
  const { name, meaning, data: fields } = EVENTS[type];
  const data = Type.Object(fields, { $id: `${name}Data`, description: `\`data\` of \`${type}\`.` });
  const event = Type.Intersect([ref(WebhookEvent), Type.Object({ type: Type.Literal(type), data: ref(data) })], {
    $id: `${name}Event`,
    description: `A \`${type}\` delivery. ${meaning}`,
  });
  return { type, meaning, data, event };
});
