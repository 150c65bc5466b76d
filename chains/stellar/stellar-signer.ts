import { defaultScheme } from '../domain/wallets.ts';
import { encodeEd25519Signature } from '../encode-ed25519-signature.ts';
import { encodeUtf8 } from '../encode-utf8.ts';
import type { WalletFamily } from '../wallet-family.ts';
import { deriveStellarAddress } from './derive-address.ts';
import { extractStellarTransactionFacts } from './extract-stellar-transaction-facts.ts';
import { stellarPoolSteps } from './stellar-pool-steps.ts';

/**
 * STELLAR wallets: ed25519 over the message's UTF-8 bytes (no SEP-0053 envelope); transaction envelopes signed for
 * the network named by `networkPassphrase`, which is also the chain the policy sees.
 */
export const stellarSigner: WalletFamily<typeof stellarPoolSteps> = {
  type: 'STELLAR',
  scheme: defaultScheme('STELLAR'),
  operations: ['sign-message', 'sign-raw', 'sign-transaction'],
  messageIsRawSignature: true,
  poolSteps: stellarPoolSteps,
  deriveAddress: (publicKeyHex) => deriveStellarAddress(publicKeyHex),
  signMessage: async (message, key) => encodeEd25519Signature(await key.signEd25519(encodeUtf8(message, 'message'))),
  signRaw: async (data, key) => encodeEd25519Signature(await key.signEd25519(data)),
  transactionFields: { transaction: 'base64', network: false, networkPassphrase: 'required' },
  async prepareTransaction(request, wallet, steps) {
    const passphrase = request.networkPassphrase as string;
    const prepared = await steps.prepareStellarTransaction(request.transaction as string, passphrase);
    return {
      chainId: passphrase,
      facts: () => extractStellarTransactionFacts(request.transaction as string, passphrase, wallet.address),
      sign: async (key) => ({
        signedTransaction: await steps.attachStellarSignature(
          prepared,
          key.publicKey,
          await key.signEd25519(prepared.hash),
        ),
      }),
    };
  },
};
