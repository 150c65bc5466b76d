import { isSolanaNetwork } from '../domain/payments.ts';
import { defaultScheme } from '../domain/wallets.ts';
import { encodeEd25519Signature } from '../encode-ed25519-signature.ts';
import { encodeUtf8 } from '../encode-utf8.ts';
import type { WalletFamily } from '../wallet-family.ts';
import { attachSolanaSignature } from './attach-solana-signature.ts';
import { deriveSolanaAddress } from './derive-address.ts';
import { extractSolanaTransactionFacts } from './extract-solana-transaction-facts.ts';
import { prepareSolanaTransaction } from './prepare-solana-transaction.ts';

/**
 * SOLANA wallets: ed25519 over the message's UTF-8 bytes; legacy and v0 transactions. A Solana transaction is at most
 * one packet (1232 bytes), cheap enough to prepare and sign inline: no pool steps.
 */
export const solanaSigner: WalletFamily = {
  type: 'SOLANA',
  scheme: defaultScheme('SOLANA'),
  operations: ['sign-message', 'sign-raw', 'sign-transaction'],
  messageIsRawSignature: true,
  poolSteps: {},
  deriveAddress: (publicKeyHex) => deriveSolanaAddress(publicKeyHex),
  signMessage: async (message, key) => encodeEd25519Signature(await key.signEd25519(encodeUtf8(message, 'message'))),
  signRaw: async (data, key) => encodeEd25519Signature(await key.signEd25519(data)),
  transactionFields: { transaction: 'base64', network: true, networkPassphrase: 'refused' },
  async prepareTransaction(request, wallet) {
    const prepared = prepareSolanaTransaction(request.transaction as string, wallet.address);
    return {
      chainId: request.network ?? null,
      facts: () =>
        extractSolanaTransactionFacts(
          prepared.messageBytes,
          wallet.address,
          isSolanaNetwork(request.network) ? request.network : null,
        ),
      sign: async (key) => ({
        signedTransaction: attachSolanaSignature(prepared, await key.signEd25519(prepared.messageBytes)),
      }),
    };
  },
};
