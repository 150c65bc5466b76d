import { ChainInputError } from '../chain-input-error.ts';
import { defaultScheme } from '../domain/wallets.ts';
import type { WalletFamily } from '../wallet-family.ts';
import { deriveEvmAddress } from './derive-address.ts';
import { encodeEvmSignature } from './encode-evm-signature.ts';
import { evmPoolSteps } from './evm-pool-steps.ts';
import { extractEvmTransactionFacts } from './extract-evm-transaction-facts.ts';
import { hashEvmMessage } from './hash-evm-message.ts';
import type { EvmTransactionInput } from './prepare-evm-transaction.ts';

/** prepareEvmTransaction names a field inside the transaction object, which the body holds as `transaction`. */
function inTransaction(error: unknown): unknown {
  if (!(error instanceof ChainInputError)) return error;
  return new ChainInputError(error.message, error.field ? `transaction.${error.field}` : 'transaction');
}

/** EVM wallets: secp256k1, EIP-191 messages, EIP-155 / EIP-1559 transactions, EIP-712 and EIP-7702. */
export const evmSigner: WalletFamily<typeof evmPoolSteps> = {
  type: 'EVM',
  scheme: defaultScheme('EVM'),
  operations: ['sign-message', 'sign-raw', 'sign-transaction', 'sign-typed-data', 'sign-authorization'],
  messageIsRawSignature: false,
  rawDigestBytes: 32,
  poolSteps: evmPoolSteps,
  deriveAddress: (publicKeyHex) => deriveEvmAddress(publicKeyHex),
  signMessage: async (message, key) => encodeEvmSignature(await key.signSecp256k1(hashEvmMessage(message))),
  signRaw: async (data, key) => encodeEvmSignature(await key.signSecp256k1(data)),
  transactionFields: { transaction: 'object', network: false, networkPassphrase: 'refused' },
  async prepareTransaction(request, _wallet, steps) {
    const prepared = await steps.prepareEvmTransaction(request.transaction as EvmTransactionInput).catch((error) => {
      throw inTransaction(error);
    });
    return {
      chainId: String(prepared.chainId),
      ...(prepared.transaction.nonce !== undefined ? { nonce: prepared.transaction.nonce } : {}),
      facts: () => extractEvmTransactionFacts({ ...prepared.transaction, chainId: prepared.chainId }),
      sign: async (key) => ({
        signedTransaction: await steps.serializeSignedEvmTransaction(
          prepared,
          await key.signSecp256k1(prepared.digest),
        ),
      }),
    };
  },
};
