import { VersionedMessage } from '@solana/web3.js';
import bs58 from 'bs58';
import { ChainInputError } from '../chain-input-error.ts';
import type { ChainEnvironment, SolanaNetwork } from '../domain/payments.ts';
import { EVM_OVERRIDE_FIELDS } from '../evm/parse-evm-transfer-overrides.ts';
import type { SolanaUnsignedPayment } from '../payment-chain.ts';
import { applySignature, type PaymentFamilyAdapter } from '../payment-family.ts';
import type { Ed25519Signature } from '../signing-types.ts';
import { transferIntent } from '../transfer-intent.ts';
import { attachSolanaSignature } from './attach-solana-signature.ts';
import { extractSolanaTransactionFacts } from './extract-solana-transaction-facts.ts';
import { extractSolanaTransferFacts } from './extract-solana-transfer-facts.ts';
import { prepareSolanaTransaction } from './prepare-solana-transaction.ts';
import { createSolanaChain } from './solana-chain.ts';
import { solanaChainsFile } from './solana-chains-file.ts';

/** A Solana payment as the payment actor stores and signs it: a transaction (base64) the wallet signs. */
export interface SolanaPaymentPayload {
  family: 'SOLANA';
  transaction: string;
}

/**
 * The network a request that names none uses: the key's own environment's (spec: `SOLANA` is the production
 * default, `SOLANA_DEVNET` the beta one).
 */
function defaultNetwork(keyEnvironment: 'development' | 'production'): SolanaNetwork {
  return keyEnvironment === 'development' ? 'SOLANA_DEVNET' : 'SOLANA';
}

/**
 * Solana payments: SOL and SPL transfers and partner transactions on a network (`SOLANA`, `SOLANA_DEVNET`). Solana
 * has no account nonces: a transaction is bound to its recent blockhash instead, and its id is its first signature.
 */
export const solanaPayments: PaymentFamilyAdapter<SolanaPaymentPayload> = {
  family: 'SOLANA',
  allocatesNonce: false,

  transferTarget(body, keyEnvironment) {
    const intent = transferIntent(body, 'SOLANA', 'SPL', 'mint');
    if (body.chainId !== undefined) {
      throw new ChainInputError('chainId applies to EVM wallets only; Solana transfers name network', 'chainId');
    }
    // The service chooses a Solana transfer's fees and blockhash: EVM's nonce, gas and fee fields have no meaning here.
    const evmField = EVM_OVERRIDE_FIELDS.find((f) => body[f] !== undefined);
    if (evmField) {
      throw new ChainInputError(
        `${evmField} applies to EVM transfers only; Solana fees are chosen by the service`,
        evmField,
      );
    }
    return { chainRef: body.network ?? defaultNetwork(keyEnvironment), intent, nonce: null };
  },

  partnerTransaction(request, walletAddress, keyEnvironment) {
    if (typeof request.transaction !== 'string') {
      throw new ChainInputError('transaction must be a base64 string for a SOLANA wallet', 'transaction');
    }
    const prepared = prepareSolanaTransaction(request.transaction, walletAddress);
    return {
      chainRef: request.network ?? defaultNetwork(keyEnvironment),
      payload: { family: 'SOLANA', transaction: request.transaction },
      nonce: null,
      // The spec: a Solana sign_transaction record carries no to, value or token.
      to: null,
      value: null,
      recentBlockhash: VersionedMessage.deserialize(prepared.messageBytes).recentBlockhash,
    };
  },

  transferPayload(unsigned) {
    return { family: 'SOLANA', transaction: (unsigned as SolanaUnsignedPayment).transaction };
  },

  transferValidity(unsigned) {
    const { blockhash, lastValidBlockHeight } = unsigned as SolanaUnsignedPayment;
    return { recentBlockhash: blockhash, lastValidBlockHeight };
  },

  signatureRequest(payload, walletAddress) {
    const prepared = prepareSolanaTransaction(payload.transaction, walletAddress);
    return {
      curve: 'ed25519',
      message: prepared.messageBytes,
      attach(signature: Ed25519Signature) {
        const signedTransaction = applySignature(() => attachSolanaSignature(prepared, signature));
        // A Solana transaction's id is its first signature, the fee payer's.
        const wire = Buffer.from(signedTransaction, 'base64');
        return { signedTransaction, hash: bs58.encode(wire.subarray(1, 65)) };
      },
    };
  },

  sendVerdict(error) {
    if (error.transient) return 'unanswered';
    // A resend of a transaction that already landed meets its expired blockhash.
    return error.code === 'BLOCKHASH_EXPIRED' ? 'look-up' : 'rejected';
  },

  transferFacts: (chainRef, intent) => extractSolanaTransferFacts(chainRef as SolanaNetwork, intent),

  payloadFacts: (payload, chainRef, walletAddress) =>
    extractSolanaTransactionFacts(
      prepareSolanaTransaction(payload.transaction, walletAddress).messageBytes,
      walletAddress,
      chainRef as SolanaNetwork,
    ),

  recordChain: (chainRef) => ({ chainId: null, network: chainRef as SolanaNetwork }),

  chainField: 'network',

  describeChain: (chainRef) => `Solana network ${chainRef}`,

  isDevnet: (chainRef, environment: ChainEnvironment) => chainRef === 'SOLANA_DEVNET' || environment === 'development',

  chainsFile: solanaChainsFile,

  createChain: ({ chainRef, rpcUrl, environment, expiryProofAfterMs }) =>
    createSolanaChain({
      network: chainRef as SolanaNetwork,
      rpcUrl,
      environment,
      ...(expiryProofAfterMs === undefined ? {} : { expiryProofAfterMs }),
    }),
};
