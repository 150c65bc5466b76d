import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ok, RATE_LIMIT_HEADERS, TRANSACTION_ID_HEADER } from '../../schemas/common.ts';
import { PAYMENT, partnerErrors, partnerPostErrors, SIGNING } from '../../schemas/errors.ts';
import {
  FeeEstimate,
  ListTransactionsQuery,
  TransactionList,
  TransactionParams,
  TransactionRecord,
  TransferBody,
} from '../../schemas/payments.ts';
import { TransferResult } from '../../schemas/signature-results.ts';
import { WalletIdParams } from '../../schemas/wallets.ts';
import { type PaymentService, recordLocation } from '../../services/payments.ts';
import type { PolicyContext } from '../../services/signing.ts';

/** The header naming the person who initiated a request (POLICIES.md §2: named on the approval case a hold opens). */
const INITIATOR_HEADER = 'x-initiator-user-id';

/** What the signing-policy decision point reads of a request beside its body: its key, its body, its initiator. */
export function policyContextOf(req: FastifyRequest): PolicyContext {
  const initiator = req.headers[INITIATOR_HEADER];
  return {
    idempotency: req.idempotency,
    body: req.body,
    initiatorUserId:
      typeof initiator === 'string' && initiator.length > 0 && initiator.length <= 256 ? initiator : null,
  };
}

/** 409: another payment holds the wallet on the chain; 503: the chain's node or the enclave did not answer. */
const PAYMENT_ERRORS = partnerPostErrors(...PAYMENT);
const FEE_ERRORS = partnerPostErrors(
  ...SIGNING,
  'CHAIN_NOT_CONFIGURED',
  'CHAIN_NOT_ALLOWED',
  'RPC_UNAVAILABLE',
  'INVALID_TOKEN',
  'EXECUTION_FAILED',
  'INSUFFICIENT_NATIVE_BALANCE',
  'INSUFFICIENT_TOKEN_BALANCE',
  'AUTO_RETRY_NOT_SUPPORTED',
  'ADDRESS_SCREENING_UNAVAILABLE',
);
const READ_ERRORS = partnerErrors('WALLET_NOT_FOUND', 'TRANSACTION_NOT_FOUND', 'INVALID_CURSOR');

/**
 * Runs a broadcasting use case and sets `x-transaction-id` on its answer, success or failure: once the record
 * exists, a failure answer carries its id too (spec: transaction history routes).
 */
export async function withTransactionId<T extends object>(reply: FastifyReply, run: () => Promise<T>): Promise<T> {
  try {
    const result = await run();
    const id = (result as { transactionId?: unknown }).transactionId;
    if (typeof id === 'string') reply.header('x-transaction-id', id);
    return result;
  } catch (err) {
    const id = (err as { details?: { transactionId?: unknown } }).details?.transactionId;
    if (typeof id === 'string') reply.header('x-transaction-id', id);
    throw err;
  }
}

/** `transfer`, `estimate-fee` and the transaction history of EVM and Solana wallets. */
export const paymentRoutes: FastifyPluginAsyncTypebox<{ payments: PaymentService }> = async (app, { payments }) => {
  app.post(
    '/wallets/:walletId/transfer',
    {
      schema: {
        tags: ['transfers'],
        operationId: 'transfer',
        summary: 'Build, sign and broadcast a transfer (EVM, SOLANA)',
        description:
          'Native or token (ERC-20, SPL) transfer. The answer comes once the node accepted the signed bytes (status submitted) or did not answer (status pending; the service keeps sending the same bytes). A node rejection answers 4xx with the failure code (for example INSUFFICIENT_NATIVE_BALANCE), transactionId and signedTransaction. 409 WALLET_TRANSACTION_UNRESOLVED while another payment of the wallet on the chain is unresolved.',
        security: [{ apiKey: [] }],
        params: WalletIdParams,
        body: TransferBody,
        response: {
          200: ok(
            TransferResult,
            'Broadcast: the signed transaction, its hash, status and `transactionId` (header `x-transaction-id`). With `broadcast: false`: the signed transaction only.',
            { ...RATE_LIMIT_HEADERS, ...TRANSACTION_ID_HEADER },
          ),
          202: ok(
            TransactionRecord,
            'With `autoRetry` (EVM): accepted; the service signs, sends and replaces it until it lands, the deadline passes or a stop reason says why not. The record with its `autoRetry` object (`hash` may be null); `Location` is the record. A replay with the same Idempotency-Key answers its current state, 202 again.',
            {
              ...RATE_LIMIT_HEADERS,
              ...TRANSACTION_ID_HEADER,
              location: { type: 'string', description: 'The record: /v1/wallets/{walletId}/transactions/{id}.' },
            },
          ),
          ...PAYMENT_ERRORS,
        },
      },
    },
    async (req, reply) => {
      const result = await withTransactionId(reply, () =>
        payments.transfer(req.principal, req.params.walletId, req.body, req.idempotency, policyContextOf(req)),
      );
      if (!('accepted' in result)) return result;
      // An auto-retry transfer: accepted, and carried on by the service (spec: 202 with Location).
      const record = result.accepted;
      return reply
        .code(202)
        .header('x-transaction-id', record.transactionId)
        .header('location', recordLocation(req.params.walletId, record.transactionId))
        .send(record);
    },
  );

  app.post(
    '/wallets/:walletId/estimate-fee',
    {
      schema: {
        tags: ['transfers'],
        operationId: 'estimateFee',
        summary: 'Preview the fees of a transfer (EVM, SOLANA)',
        description:
          'Same body as transfer; nothing is signed, broadcast or recorded. EVM: gas limit (estimate + 20%), fee fields, most and expected fee in wei. SOLANA: base, priority and total fee in lamports, and the rent of a recipient token account the transfer would create.',
        security: [{ apiKey: [] }],
        params: WalletIdParams,
        body: TransferBody,
        response: {
          200: ok(FeeEstimate, 'The fee estimate of the transfer.', RATE_LIMIT_HEADERS),
          ...FEE_ERRORS,
        },
      },
    },
    async (req) => payments.estimateFee(req.principal, req.params.walletId, req.body),
  );

  app.get(
    '/wallets/:walletId/transactions',
    {
      schema: {
        tags: ['transactions'],
        operationId: 'listTransactions',
        summary: "List a wallet's transaction records, newest first",
        description:
          "The wallet's transaction records (transfers, broadcast sign-transactions), newest first, filtered by status or intent kind, in the list envelope.",
        security: [{ apiKey: [] }],
        params: WalletIdParams,
        querystring: ListTransactionsQuery,
        response: { 200: ok(TransactionList, 'A page of transaction records.', RATE_LIMIT_HEADERS), ...READ_ERRORS },
      },
    },
    async (req) =>
      payments.list(req.principal, req.params.walletId, {
        ...(req.query.status !== undefined ? { status: req.query.status } : {}),
        ...(req.query.intentKind !== undefined ? { intentKind: req.query.intentKind } : {}),
        ...(req.query.cursor !== undefined ? { cursor: req.query.cursor } : {}),
        ...(req.query.limit !== undefined ? { limit: Number(req.query.limit) } : {}),
      }),
  );

  app.get(
    '/wallets/:walletId/transactions/:transactionId',
    {
      schema: {
        tags: ['transactions'],
        operationId: 'getTransaction',
        summary: 'Get one transaction record',
        description: "404 for an unknown record and for another partner's record alike.",
        security: [{ apiKey: [] }],
        params: TransactionParams,
        response: { 200: ok(TransactionRecord, 'The transaction record.', RATE_LIMIT_HEADERS), ...READ_ERRORS },
      },
    },
    async (req) => payments.get(req.principal, req.params.walletId, req.params.transactionId),
  );
};
