import { Type } from '@sinclair/typebox';
import {
  LIMIT_PATTERN,
  Paginated,
  SchemeSchema,
  TEXT_PATTERN,
  UserIdentifierTypeSchema,
  WalletStatusSchema,
  WalletTypeSchema,
} from './common.ts';

const UserIdentifier = Type.String({
  minLength: 1,
  maxLength: 256,
  pattern: TEXT_PATTERN,
  description: "Partner-chosen identifier of the wallet's user (1-256 characters, not blank).",
});

export const CreateWalletBody = Type.Object(
  {
    type: WalletTypeSchema,
    userIdentifier: UserIdentifier,
    userIdentifierType: UserIdentifierTypeSchema,
    cosmosPrefix: Type.Optional(
      Type.String({ minLength: 1, maxLength: 20, description: 'Bech32 prefix for COSMOS wallets; default cosmos.' }),
    ),
    scheme: Type.Optional(SchemeSchema),
  },
  {
    additionalProperties: false,
    examples: [{ type: 'EVM', userIdentifier: 'user-1', userIdentifierType: 'CUSTOM_ID' }],
  },
);

export const PatchWalletBody = Type.Object(
  {
    userIdentifier: Type.Optional(UserIdentifier),
    userIdentifierType: Type.Optional(UserIdentifierTypeSchema),
  },
  { additionalProperties: false, minProperties: 1 },
);

export const WalletIdParams = Type.Object({ walletId: Type.String({ minLength: 1, maxLength: 128 }) });

/** A wallet as every wallet route answers it (spec: Wallet). */
export const Wallet = Type.Object(
  {
    id: Type.String(),
    type: WalletTypeSchema,
    scheme: SchemeSchema,
    status: WalletStatusSchema,
    address: Type.Union([Type.String(), Type.Null()]),
    publicKey: Type.Union([Type.String(), Type.Null()], {
      description:
        'Hex, no 0x: secp256k1 uncompressed (65 bytes) for EVM, compressed (33 bytes) for COSMOS; ed25519 (32 bytes) for SOLANA, STELLAR, SUI.',
    }),
    createdAt: Type.String({ format: 'date-time' }),
    userIdentifier: Type.String(),
    userIdentifierType: UserIdentifierTypeSchema,
  },
  { $id: 'Wallet' },
);

/** A wallet as a list shows it: without its public key and user identifier. */
export const WalletListItem = Type.Object(
  {
    id: Type.String(),
    type: WalletTypeSchema,
    scheme: SchemeSchema,
    status: WalletStatusSchema,
    address: Type.Union([Type.String(), Type.Null()]),
    createdAt: Type.String({ format: 'date-time' }),
  },
  { $id: 'WalletListItem' },
);

export const WalletList = Paginated(WalletListItem, 'WalletList');

export const ListWalletsQuery = Type.Object(
  {
    userIdentifier: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
    userIdentifierType: Type.Optional(UserIdentifierTypeSchema),
    type: Type.Optional(WalletTypeSchema),
    status: Type.Optional(WalletStatusSchema),
    address: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
    cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    limit: Type.Optional(Type.String({ pattern: LIMIT_PATTERN, description: 'Page size 1-100; default 20.' })),
  },
  { additionalProperties: false },
);
