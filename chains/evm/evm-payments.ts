import { ChainInputError } from '../chain-input-error.ts';
import { ServiceError } from '../domain/errors.ts';
import type { ChainEnvironment } from '../domain/payments.ts';
import { isPlainObject } from '../is-plain-object.ts';
import { keccak256 } from '../keccak-256.ts';
import type { EvmUnsignedPayment } from '../payment-chain.ts';
import { applySignature, type PaymentFamilyAdapter } from '../payment-family.ts';
import type { Secp256k1Signature } from '../signing-types.ts';
import { transferIntent } from '../transfer-intent.ts';
import { createEvmChain } from './evm-chain.ts';
import { evmChainsFile } from './evm-chains-file.ts';
import { extractEvmTransactionFacts } from './extract-evm-transaction-facts.ts';
import { extractEvmTransferFacts } from './extract-evm-transfer-facts.ts';
import { parseEvmTransferOverrides } from './parse-evm-transfer-overrides.ts';
import { type EvmTransactionInput, prepareEvmTransaction } from './prepare-evm-transaction.ts';
import { recoverEvmTransactionSigner } from './recover-evm-transaction-signer.ts';
import { serializeSignedEvmTransaction } from './serialize-signed-evm-transaction.ts';

/** An EVM payment as the payment actor stores and signs it: a transaction in `prepareEvmTransaction`'s shape. */
export interface EvmPaymentPayload {
  family: 'EVM';
  transaction: {
    chainId: number;
    type: number;
    nonce: number;
    to?: string;
    value?: string;
    data?: string;
    gasLimit: string;
    maxFeePerGas?: string;
    maxPriorityFeePerGas?: string;
    gasPrice?: string;
  };
}

const CHAIN_ID = /^[1-9][0-9]{0,15}$/;

/** prepareEvmTransaction names a field inside the transaction object, which the body holds as `transaction`. */
function inTransaction(error: unknown): unknown {
  if (!(error instanceof ChainInputError)) return error;
  return new ChainInputError(error.message, error.field ? `transaction.${error.field}` : 'transaction');
}

/** keccak256 of the raw signed bytes: the EVM transaction hash. */
function evmTransactionHash(raw: string): string {
  return `0x${Buffer.from(keccak256(Buffer.from(raw.slice(2), 'hex'))).toString('hex')}`;
}

/**
 * EVM payments: native and ERC-20 transfers and partner transactions on a chain named by its chain id, each signed
 * with the nonce its record allocated; a transaction's signer is recovered and checked before it leaves.
 */
export const evmPayments: PaymentFamilyAdapter<EvmPaymentPayload> = {
  family: 'EVM',
  allocatesNonce: true,

  transferTarget(body) {
    const intent = transferIntent(body, 'EVM', 'ERC20', 'token contract');
    if (body.network !== undefined) {
      throw new ChainInputError('network applies to SOLANA wallets only; EVM transfers name chainId', 'network');
    }
    if (body.chainId === undefined) throw new ChainInputError('chainId is required for EVM transfers', 'chainId');
    const chainRef = String(body.chainId);
    if (!CHAIN_ID.test(chainRef)) {
      throw new ChainInputError('chainId must be a positive integer (as a string)', 'chainId');
    }
    const { overrides, nonce } = parseEvmTransferOverrides(body);
    return { chainRef, intent: Object.keys(overrides).length > 0 ? { ...intent, evm: overrides } : intent, nonce };
  },

  partnerTransaction(request) {
    if (request.network !== undefined) {
      throw new ChainInputError('network applies to SOLANA wallets only', 'network');
    }
    if (!isPlainObject(request.transaction)) {
      throw new ChainInputError('transaction must be an EVM transaction object for an EVM wallet', 'transaction');
    }
    const tx = request.transaction as unknown as EvmTransactionInput;
    // Checked in full before anything is recorded: what is stored is what will be signed.
    try {
      prepareEvmTransaction(tx);
    } catch (error) {
      throw inTransaction(error);
    }
    return {
      chainRef: String(tx.chainId),
      payload: { family: 'EVM', transaction: tx },
      nonce: tx.nonce,
      to: tx.to ?? null,
      value: tx.value ?? null,
      recentBlockhash: null,
    };
  },

  transferPayload(unsigned, nonce) {
    const { family: _family, ...transaction } = unsigned as EvmUnsignedPayment;
    return { family: 'EVM', transaction: { ...transaction, nonce: nonce ?? 0 } };
  },

  // An EVM transaction stays valid until its nonce is used.
  transferValidity: () => ({ recentBlockhash: null, lastValidBlockHeight: null }),

  signatureRequest(payload, walletAddress) {
    const prepared = prepareEvmTransaction(payload.transaction);
    return {
      curve: 'secp256k1',
      message: prepared.digest,
      attach(signature: Secp256k1Signature) {
        const signedTransaction = applySignature(() => serializeSignedEvmTransaction(prepared, signature));
        const signer = recoverEvmTransactionSigner(prepared.digest, signature);
        if (signer.toLowerCase() !== walletAddress.toLowerCase()) {
          throw new ServiceError('SIGNER_MISMATCH', 500, `the recovered signer ${signer} is not the wallet's address`);
        }
        return { signedTransaction, hash: evmTransactionHash(signedTransaction) };
      },
    };
  },

  sendVerdict(error) {
    if (error.transient) return 'unanswered';
    // A resend of a transaction that already landed is refused as "nonce too low" too.
    return error.code === 'NONCE_TOO_LOW' ? 'look-up' : 'rejected';
  },

  transferFacts: (chainRef, intent) => extractEvmTransferFacts(chainRef, intent),

  payloadFacts(payload, chainRef) {
    const prepared = prepareEvmTransaction(payload.transaction);
    return extractEvmTransactionFacts({ ...prepared.transaction, chainId: Number(chainRef) });
  },

  recordChain: (chainRef) => ({ chainId: chainRef, network: null }),

  chainField: 'chainId',

  describeChain: (chainRef) => `EVM chain ${chainRef}`,

  isDevnet: (_chainRef, environment: ChainEnvironment) => environment === 'development',

  chainsFile: evmChainsFile,

  createChain: ({ chainRef, rpcUrl, environment }) =>
    createEvmChain({ chainId: Number(chainRef), rpcUrl, environment }),
};
