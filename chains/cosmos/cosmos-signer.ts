import { defaultScheme } from '../domain/wallets.ts';
import type { WalletFamily } from '../wallet-family.ts';
import { deriveCosmosAddress } from './derive-address.ts';
import { encodeCosmosSignature } from './encode-cosmos-signature.ts';
import { hashCosmosMessage } from './hash-cosmos-message.ts';

/**
 * COSMOS wallets: secp256k1 over the SHA-256 of the message (no ADR-36 document). Transactions are signed with
 * sign-raw over the SignDoc's digest, so there is no sign-transaction.
 */
export const cosmosSigner: WalletFamily = {
  type: 'COSMOS',
  scheme: defaultScheme('COSMOS'),
  operations: ['sign-message', 'sign-raw'],
  unsupportedHints: {
    'sign-transaction':
      'COSMOS wallets do not use sign-transaction: sign the transaction with sign-raw (walletType COSMOS), sending the SHA-256 digest of the SignDoc bytes as hex',
  },
  messageIsRawSignature: true,
  rawDigestBytes: 32,
  poolSteps: {},
  deriveAddress: (publicKeyHex, prefix) => deriveCosmosAddress(publicKeyHex, prefix),
  signMessage: async (message, key) => encodeCosmosSignature(await key.signSecp256k1(hashCosmosMessage(message))),
  signRaw: async (data, key) => encodeCosmosSignature(await key.signSecp256k1(data)),
};
