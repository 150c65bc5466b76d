import { defaultScheme } from '../domain/wallets.ts';
import { encodeEd25519Signature } from '../encode-ed25519-signature.ts';
import type { WalletFamily } from '../wallet-family.ts';
import { deriveSuiAddress } from './derive-address.ts';
import { encodeSuiSignature } from './encode-sui-signature.ts';
import { extractSuiTransactionFacts } from './extract-sui-transaction-facts.ts';
import { hashSuiPersonalMessage } from './hash-sui-personal-message.ts';
import { suiPoolSteps } from './sui-pool-steps.ts';

/**
 * SUI wallets: ed25519 over intent digests, answered as serialized Sui signatures (PersonalMessage for messages,
 * TransactionData for transactions); sign-raw answers plain hex like the other ed25519 types.
 */
export const suiSigner: WalletFamily<typeof suiPoolSteps> = {
  type: 'SUI',
  scheme: defaultScheme('SUI'),
  operations: ['sign-message', 'sign-raw', 'sign-transaction'],
  messageIsRawSignature: true,
  poolSteps: suiPoolSteps,
  deriveAddress: (publicKeyHex) => deriveSuiAddress(publicKeyHex),
  signMessage: async (message, key) =>
    encodeSuiSignature(await key.signEd25519(hashSuiPersonalMessage(message)), key.publicKey),
  signRaw: async (data, key) => encodeEd25519Signature(await key.signEd25519(data)),
  transactionFields: { transaction: 'base64', network: false, networkPassphrase: 'ignored' },
  async prepareTransaction(request, wallet, steps) {
    const transaction = request.transaction as string;
    const prepared = await steps.prepareSuiTransaction(transaction);
    return {
      // Sui transactions name no chain the policy could check (networkPassphrase is ignored, as the spec says).
      chainId: null,
      facts: () => extractSuiTransactionFacts(Buffer.from(transaction, 'base64'), wallet.address),
      sign: async (key) => ({
        signature: encodeSuiSignature(await key.signEd25519(prepared.digest), key.publicKey),
        transaction,
      }),
    };
  },
};
