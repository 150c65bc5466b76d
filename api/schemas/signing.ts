import { Type } from '@sinclair/typebox';
import { SOLANA_NETWORKS } from '../../chains/domain/payments.ts';
import { TYPED_DATA_LIMITS } from '../../chains/evm/typed-data-limits.ts';
import { MAX_SIGN_MESSAGE_BYTES } from '../../enclave/public.ts';
import { StringEnum, WalletTypeSchema } from './common.ts';

/** Longest base64 transaction the route reads (Sui transaction data may reach 128 KiB). */
export const MAX_TRANSACTION_CHARS = 256 * 1024;

export const SignMessageBody = Type.Object(
  {
    message: Type.String({
      minLength: 1,
      maxLength: MAX_SIGN_MESSAGE_BYTES,
      description: `Text to sign (at most ${MAX_SIGN_MESSAGE_BYTES} bytes in UTF-8). The wallet's type decides the format: EVM EIP-191 + Keccak-256; COSMOS secp256k1 over SHA-256 of the UTF-8 bytes; SOLANA and STELLAR Ed25519 over the UTF-8 bytes; SUI PersonalMessage intent.`,
    }),
  },
  { additionalProperties: false, examples: [{ message: 'hello from my backend' }] },
);

export const SignRawBody = Type.Object(
  {
    data: Type.String({
      minLength: 1,
      maxLength: 2 + 2 * MAX_SIGN_MESSAGE_BYTES,
      description:
        'Hex bytes (0x optional, even length), signed exactly as given: no prefix, no hashing. secp256k1 (EVM, COSMOS) wallets sign a 32-byte digest; Ed25519 wallets sign the bytes.',
    }),
    walletType: Type.Optional(WalletTypeSchema),
  },
  { additionalProperties: false },
);

export const SignTransactionBody = Type.Object(
  {
    transaction: Type.Unknown({
      description:
        'EVM: an object {to, value (integer string), chainId, type (0 or 2), nonce, gasLimit (string), maxFeePerGas and maxPriorityFeePerGas (type 2) or gasPrice (type 0), data}. SOLANA: base64 legacy Transaction or v0 VersionedTransaction. STELLAR: base64 XDR envelope. SUI: base64 BCS TransactionData. COSMOS: not supported (use sign-raw).',
    }),
    broadcast: Type.Optional(
      Type.Boolean({
        description:
          'Sign-only when omitted or false. true (EVM, SOLANA): record, sign, broadcast and monitor the transaction.',
      }),
    ),
    network: Type.Optional(StringEnum(SOLANA_NETWORKS, { description: 'SOLANA wallets only.' })),
    networkPassphrase: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 256,
        description: 'STELLAR: the exact passphrase the transaction was built for (required). Ignored for SUI.',
      }),
    ),
  },
  { additionalProperties: false },
);

/** An EVM transaction as `sign-transaction` reads it (chains/evm/prepare-evm-transaction.ts checks it). */
const EvmTransaction = Type.Object(
  {
    to: Type.Optional(
      Type.String({
        pattern: '^0x[0-9a-fA-F]{40}$',
        description:
          'Recipient (EIP-55 checked when mixed case). Omitted only to create a contract, whose init code is then `data`.',
      }),
    ),
    value: Type.Optional(Type.String({ pattern: '^(0|[1-9][0-9]*)$', description: 'Wei, a decimal integer string.' })),
    chainId: Type.Integer({
      minimum: 1,
      description: 'EIP-155 chain id; with `broadcast: true`, a chain of CHAINS_FILE.',
    }),
    type: Type.Union([Type.Literal(0), Type.Literal(2)], {
      description:
        '0: legacy with EIP-155 replay protection (`gasPrice`); 2: EIP-1559 (`maxFeePerGas`, `maxPriorityFeePerGas`).',
    }),
    nonce: Type.Integer({ minimum: 0 }),
    gasLimit: Type.String({ pattern: '^(0|[1-9][0-9]*)$', description: 'Decimal integer string.' }),
    maxFeePerGas: Type.Optional(
      Type.String({ pattern: '^(0|[1-9][0-9]*)$', description: 'Type 2 only (required there), wei.' }),
    ),
    maxPriorityFeePerGas: Type.Optional(
      Type.String({
        pattern: '^(0|[1-9][0-9]*)$',
        description: 'Type 2 only (required there), wei, at most maxFeePerGas.',
      }),
    ),
    gasPrice: Type.Optional(
      Type.String({ pattern: '^(0|[1-9][0-9]*)$', description: 'Type 0 only (required there), wei.' }),
    ),
    data: Type.Optional(
      Type.String({ pattern: '^0x([0-9a-fA-F]{2})*$', description: 'Calldata or init code, 0x hex.' }),
    ),
  },
  { title: 'EVM transaction', additionalProperties: false },
);

/** A serialized transaction of the other chains that sign transactions. */
const SerializedTransaction = Type.String({
  title: 'SOLANA, STELLAR or SUI transaction',
  minLength: 1,
  maxLength: MAX_TRANSACTION_CHARS,
  contentEncoding: 'base64',
  description:
    'SOLANA: base64 legacy Transaction or v0 VersionedTransaction (auto-detected). STELLAR: base64 XDR envelope. SUI: base64 BCS TransactionData.',
});

/**
 * `SignTransactionBody` as the OpenAPI document shows it: `transaction` typed per wallet family. The route itself
 * validates `transaction` in the wallet type's adapter, which knows the wallet (the body does not say its type)
 * and names the faulty field in its message; the two agree on what is accepted.
 */
export const SignTransactionBodyDocumented = Type.Object(
  {
    ...SignTransactionBody.properties,
    transaction: Type.Union([EvmTransaction, SerializedTransaction], {
      description:
        'By wallet type: EVM the object; SOLANA, STELLAR and SUI the base64 string. COSMOS: not supported (use sign-raw).',
    }),
  },
  {
    additionalProperties: false,
    examples: [
      {
        transaction: {
          to: '0x000000000000000000000000000000000000bEEF',
          value: '1000000000000000',
          chainId: 8453,
          type: 2,
          nonce: 0,
          gasLimit: '21000',
          maxFeePerGas: '2000000000',
          maxPriorityFeePerGas: '1000000',
          data: '0x',
        },
      },
    ],
  },
);

export const SignTypedDataBody = Type.Object(
  {
    typedData: Type.Object(
      {
        domain: Type.Object({}, { additionalProperties: true }),
        // Counted here too, so that a thousand chained types are refused before any step (or copy) sees it.
        types: Type.Object(
          {},
          {
            additionalProperties: true,
            maxProperties: TYPED_DATA_LIMITS.types,
            description: `Without EIP712Domain. At most ${TYPED_DATA_LIMITS.types} struct types of ${TYPED_DATA_LIMITS.fieldsPerType} members each, no recursive type, values nested at most ${TYPED_DATA_LIMITS.depth} levels below message, at most ${TYPED_DATA_LIMITS.arrayItems} items in an array and ${TYPED_DATA_LIMITS.totalItems} in all, ${TYPED_DATA_LIMITS.values} values in all; every member of a struct value declared.`,
          },
        ),
        primaryType: Type.String({ minLength: 1, maxLength: 256 }),
        message: Type.Object({}, { additionalProperties: true }),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
);

export const SignAuthorizationBody = Type.Object(
  {
    authorization: Type.Object(
      {
        address: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
        contractAddress: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Alias of address.' })),
        chainId: Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER }),
        nonce: Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER }),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
);

export const MigrateShareBody = Type.Object(
  {
    encryptedPayload: Type.String({
      minLength: 1,
      description:
        'A JSON string of the envelope {encryptedData, keyId, ephemeral, algorithm: "ECIES-P256-AES256-SHA256"}; at most 64 KB.',
    }),
  },
  { additionalProperties: false },
);

/** The enclave's share-migration key (spec: Enclave public key). */
export const EnclavePublicKey = Type.Object(
  {
    publicKey: Type.String({ description: 'P-256 public key, SPKI PEM.' }),
    keyFingerprint: Type.String({ description: 'Hex SHA-256 of the SPKI DER; send it as the envelope keyId.' }),
    generatedAt: Type.String({ format: 'date-time' }),
  },
  { $id: 'EnclavePublicKey' },
);
