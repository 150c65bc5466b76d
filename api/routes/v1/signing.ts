import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ok, RATE_LIMIT_HEADERS, TRANSACTION_ID_HEADER } from '../../schemas/common.ts';
import { PAYMENT, partnerPostErrors, SIGNING } from '../../schemas/errors.ts';
import { Signature, SignedAuthorization, SignTransactionResult } from '../../schemas/signature-results.ts';
import {
  SignAuthorizationBody,
  SignMessageBody,
  SignRawBody,
  SignTransactionBody,
  SignTransactionBodyDocumented,
  SignTypedDataBody,
} from '../../schemas/signing.ts';
import { WalletIdParams } from '../../schemas/wallets.ts';
import type { PaymentService } from '../../services/payments.ts';
import type { SigningService } from '../../services/signing.ts';
import { policyContextOf, withTransactionId } from './payments.ts';

/** 403 covers invalid keys, claimed or unmigrated wallets and policy answers; 503 an unavailable enclave. */
const SIGNING_ERRORS = partnerPostErrors(...SIGNING);
const common = { tags: ['signing'], security: [{ apiKey: [] }], params: WalletIdParams };

/** The request body's size from Content-Length (which Fastify checks against the body), Infinity without one. */
function bodyBytes(headers: { 'content-length'?: string }): number {
  const length = Number(headers['content-length']);
  return Number.isSafeInteger(length) && length >= 0 ? length : Number.POSITIVE_INFINITY;
}

/** `/v1/wallets/{walletId}/sign-*`: the wallet's stored type selects the signing format. */
export const signingRoutes: FastifyPluginAsyncTypebox<{ signing: SigningService; payments: PaymentService }> = async (
  app,
  { signing, payments },
) => {
  app.post(
    '/wallets/:walletId/sign-message',
    {
      schema: {
        ...common,
        operationId: 'signMessage',
        summary: 'Sign a message',
        description:
          'EVM: EIP-191 + Keccak-256, 65-byte r‖s‖v hex. COSMOS: secp256k1 over SHA-256 of the UTF-8 bytes, 64-byte r‖s hex. SOLANA, STELLAR: Ed25519 over the UTF-8 bytes, hex. SUI: PersonalMessage intent, base64 serialized Sui signature. On SOLANA, COSMOS, STELLAR and SUI wallets this counts as a raw signature for policies.',
        body: SignMessageBody,
        response: {
          200: ok(Signature, 'The signature, in the format of the wallet type.', RATE_LIMIT_HEADERS),
          ...SIGNING_ERRORS,
        },
      },
    },
    async (req) => signing.signMessage(req.principal, req.params.walletId, req.body.message, policyContextOf(req)),
  );

  app.post(
    '/wallets/:walletId/sign-raw',
    {
      schema: {
        ...common,
        operationId: 'signRaw',
        summary: 'Sign raw bytes (no prefix, no hashing)',
        description:
          'secp256k1 wallets sign a 32-byte digest (EVM: 65-byte r‖s‖v hex; COSMOS: 64-byte r‖s hex, the route for Cosmos transactions with the SHA-256 of the SignDoc bytes); Ed25519 wallets sign the bytes (64-byte hex). A raw signature for policies.',
        body: SignRawBody,
        response: {
          200: ok(Signature, 'The signature of exactly the given bytes.', RATE_LIMIT_HEADERS),
          ...SIGNING_ERRORS,
        },
      },
    },
    async (req) => signing.signRaw(req.principal, req.params.walletId, req.body, policyContextOf(req)),
  );

  app.post(
    '/wallets/:walletId/sign-transaction',
    {
      // The document shows `transaction` typed per wallet family; the route validates it in the wallet's adapter.
      config: {
        swaggerTransform: ({ schema, url }) => ({ schema: { ...schema, body: SignTransactionBodyDocumented }, url }),
      },
      schema: {
        ...common,
        operationId: 'signTransaction',
        summary: 'Sign a transaction (EVM, SOLANA, STELLAR, SUI); broadcast it (EVM, SOLANA)',
        description:
          'Sign-only unless broadcast is true (queues a transaction.signed event). With broadcast: true (EVM and SOLANA) the transaction is recorded (intentKind sign_transaction), signed, broadcast and monitored like a transfer: the answer adds txHash and transactionId (header x-transaction-id), and 409 WALLET_TRANSACTION_UNRESOLVED while another payment of the wallet on the chain is unresolved. STELLAR and SUI refuse broadcast: true.',
        body: SignTransactionBody,
        response: {
          200: ok(
            SignTransactionResult,
            'The signed transaction; with `broadcast: true`, also its hash and the `transactionId` of its record (header `x-transaction-id`).',
            { ...RATE_LIMIT_HEADERS, ...TRANSACTION_ID_HEADER },
          ),
          ...partnerPostErrors(...PAYMENT),
        },
      },
    },
    async (req, reply) =>
      req.body.broadcast === true
        ? withTransactionId(reply, () =>
            payments.broadcastTransaction(
              req.principal,
              req.params.walletId,
              req.body,
              req.idempotency,
              policyContextOf(req),
            ),
          )
        : signing.signTransaction(
            req.principal,
            req.params.walletId,
            req.body,
            bodyBytes(req.headers),
            policyContextOf(req),
          ),
  );

  app.post(
    '/wallets/:walletId/sign-typed-data',
    {
      schema: {
        ...common,
        operationId: 'signTypedData',
        summary: 'Sign EIP-712 typed data (EVM)',
        description: 'EIP712Domain is derived from domain and must not be in types.',
        body: SignTypedDataBody,
        response: {
          200: ok(Signature, 'The EIP-712 signature, 65-byte r‖s‖v hex.', RATE_LIMIT_HEADERS),
          ...SIGNING_ERRORS,
        },
      },
    },
    async (req) =>
      signing.signTypedData(
        req.principal,
        req.params.walletId,
        req.body.typedData,
        bodyBytes(req.headers),
        policyContextOf(req),
      ),
  );

  app.post(
    '/wallets/:walletId/sign-authorization',
    {
      schema: {
        ...common,
        operationId: 'signAuthorization',
        summary: 'Sign an EIP-7702 authorization (EVM)',
        description:
          'Signs the EIP-7702 authorization tuple (chainId, address, nonce) of the wallet: the signed tuple and its r, s, yParity. Nothing is broadcast.',
        body: SignAuthorizationBody,
        response: {
          200: ok(
            SignedAuthorization,
            'The signed authorization: address, chainId, nonce, r, s, yParity and the 65-byte signature.',
            RATE_LIMIT_HEADERS,
          ),
          ...SIGNING_ERRORS,
        },
      },
    },
    async (req) =>
      signing.signAuthorization(req.principal, req.params.walletId, req.body.authorization, policyContextOf(req)),
  );
};
