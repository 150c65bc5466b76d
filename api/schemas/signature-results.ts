/**
 * What the signing routes answer (spec: Signature results), each a named schema so that the OpenAPI document and the
 * clients generated from it name them. The unions list their members most specific first: the serializer writes an
 * answer with the first member it fits.
 */
import { Type } from '@sinclair/typebox';
import { ref } from './common.ts';

/** A plain signature: sign-message, sign-raw, sign-typed-data. */
export const Signature = Type.Object(
  {
    signature: Type.String({
      description:
        'Hex without 0x (EVM: r‖s‖v, 65 bytes; COSMOS: r‖s, 64 bytes; Ed25519: 64 bytes); SUI messages: base64 serialized Sui signature.',
    }),
  },
  { $id: 'Signature' },
);

/** A signed transaction, not broadcast (sign-transaction of EVM, SOLANA and STELLAR; transfer with `broadcast: false`). */
export const SignedTransaction = Type.Object(
  {
    signedTransaction: Type.String({
      description: 'EVM: 0x-hex raw transaction; SOLANA: base64 wire transaction; STELLAR: base64 XDR envelope.',
    }),
  },
  { $id: 'SignedTransaction' },
);

/** A signed Sui transaction: its signature beside the unchanged transaction data. */
export const SuiSignedTransaction = Type.Object(
  {
    signature: Type.String({ description: 'Base64 serialized Sui signature.' }),
    transaction: Type.String({ description: 'The unchanged base64 BCS transaction data.' }),
  },
  { $id: 'SuiSignedTransaction' },
);

/** A signed transaction the service broadcast and follows: transfer, and sign-transaction with `broadcast: true`. */
export const BroadcastResult = Type.Object(
  {
    signedTransaction: Type.String({ description: 'EVM: 0x raw transaction. SOLANA: base64 wire transaction.' }),
    txHash: Type.String({ description: 'EVM transaction hash, or Solana signature (Base58).' }),
    transactionId: Type.String({ description: 'The transaction record (also in header x-transaction-id).' }),
    status: Type.String({
      description:
        'The record status when the answer left: submitted (the node accepted the bytes) or pending (the node did not answer yet; the service keeps sending the same bytes).',
    }),
  },
  { $id: 'BroadcastResult' },
);

/** sign-transaction's answer: broadcast, signed only, or a signed Sui transaction. */
export const SignTransactionResult = Type.Union(
  [ref(BroadcastResult), ref(SignedTransaction), ref(SuiSignedTransaction)],
  { $id: 'SignTransactionResult' },
);

/** transfer's answer: broadcast, or signed only (`broadcast: false`). */
export const TransferResult = Type.Union([ref(BroadcastResult), ref(SignedTransaction)], { $id: 'TransferResult' });

/** A signed EIP-7702 authorization. */
export const SignedAuthorization = Type.Object(
  {
    address: Type.String(),
    chainId: Type.Integer(),
    nonce: Type.Integer(),
    r: Type.String(),
    s: Type.String(),
    yParity: Type.Union([Type.Literal(0), Type.Literal(1)]),
    signature: Type.String({ description: 'Hex without 0x: r‖s‖v (v = 27 + yParity).' }),
  },
  { $id: 'SignedAuthorization' },
);
