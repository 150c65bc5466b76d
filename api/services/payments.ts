/**
 * The payment routes' use cases: `transfer`, `estimate-fee`, `sign-transaction` with `broadcast: true`, and the
 * transaction history. A broadcasting request is admitted (wallet, chain, policy, the one-pending-payment rule),
 * built against the chain (fees, gas, blockhash), then recorded: the record, its EVM nonce and its payment actor's
 * initial state are written in one transaction, and the actor signs, broadcasts and follows it to a final status
 * (actors/payment.machine.ts). The request waits for the broadcast's verdict and answers with it.
 */
import { randomUUID } from 'node:crypto';
import { VersionedMessage } from '@solana/web3.js';
import type { ActorHost, ActorView } from '../../actors/host.ts';
import type { PaymentContext, PaymentInput, PaymentPayload } from '../../actors/payment.machine.ts';
import { paymentStatus } from '../../actors/payment-definition.ts';
import { ChainInputError } from '../../chains/chain-input-error.ts';
import { asErrorCode } from '../../chains/domain/error-catalogue.ts';
import { invalidRequest, ServiceError } from '../../chains/domain/errors.ts';
import type {
  IntentKind,
  PaymentFamily,
  SolanaNetwork,
  TransactionStatus,
  TransferKind,
} from '../../chains/domain/payments.ts';
import type { EvmTransactionInput } from '../../chains/evm/prepare-evm-transaction.ts';
import { prepareEvmTransaction } from '../../chains/evm/prepare-evm-transaction.ts';
import {
  ChainRpcError,
  type FeeEstimate,
  type PaymentChain,
  type TransferIntent,
  type UnsignedPayment,
} from '../../chains/payment-chain.ts';
import { prepareSolanaTransaction } from '../../chains/solana/prepare-solana-transaction.ts';
import type { Store } from '../../store/index.ts';
import type { TransactionRow } from '../../store/transactions-repo.ts';
import type { WalletRow } from '../../store/wallets-repo.ts';
import type { ChainRegistry } from '../chain-registry.ts';
import { decodeCursor, encodeCursor } from '../cursor.ts';
import type { Principal } from '../plugins/auth.ts';
import type { SigningService } from './signing.ts';

export interface TransferRequest {
  to: string;
  value: string;
  chainId?: string | number;
  network?: SolanaNetwork;
  tokenAddress?: string;
  kind?: TransferKind;
  broadcast?: boolean;
  addressScreening?: boolean;
  autoRetry?: unknown;
}

export interface BroadcastResult {
  signedTransaction: string;
  txHash: string;
  transactionId: string;
  /** The record's status when the answer left: `submitted`, or `pending` when the node has not answered yet. */
  status: string;
}

export interface TransactionView {
  transactionId: string;
  intentKind: string;
  type: string;
  status: string;
  hash: string | null;
  blockNumber?: string;
  blockHash?: string;
  failureStage?: string;
  failureCode?: string;
  failureMessage?: string;
  monitoring?: Record<string, unknown>;
  chainId?: string;
  network?: string;
  to?: string;
  value?: string;
  tokenAddress?: string;
  createdAt: string;
}

/** States in which the request still waits: the signature and the first broadcast verdict are not in yet. */
const WAITING_STATES: ReadonlySet<string> = new Set(['signing', 'broadcasting']);

/** HTTP status of a payment that failed before the request was answered, by failure code. */
function failureHttpStatus(stage: string, code: string): number {
  if (stage === 'broadcast') return 400;
  if (code === 'WALLET_CLAIMED' || code === 'WALLET_SHARE_NOT_MIGRATED') return 403;
  if (code === 'ENCLAVE_UNAVAILABLE' || code === 'ENCLAVE_TIMEOUT' || code === 'SIGNING_INTERRUPTED') return 503;
  return 500;
}

const POSITIVE_INTEGER = /^[0-9]+$/;

const cursorOf = (seq: number) => encodeCursor('t', seq);
const seqOfCursor = (cursor: string) => decodeCursor('t', cursor);

/** What the node said while a payment was being built, as the API answers it (no record exists yet). */
function buildFailure(err: unknown): unknown {
  if (err instanceof ChainInputError) {
    return invalidRequest(err.message, err.field ? { field: `body.${err.field}` } : undefined);
  }
  if (err instanceof ChainRpcError) {
    return err.transient
      ? new ServiceError('RPC_UNAVAILABLE', 503, `the chain's node did not answer: ${err.message}`, {
          transient: true,
        })
      : new ServiceError(err.code, 400, err.message);
  }
  return err;
}

export function createPaymentService(deps: {
  store: Pick<Store, 'transactions' | 'wallets'>;
  host: Pick<ActorHost, 'spawn' | 'waitFor'>;
  signing: Pick<SigningService, 'admitPayment' | 'signPayment'>;
  chains: ChainRegistry;
  monitorWindowMs: number;
  now?: () => number;
}) {
  const { store, host, signing, chains } = deps;
  const now = deps.now ?? Date.now;

  function holdConflict(walletId: string, blocking: string | undefined): ServiceError {
    return new ServiceError(
      'WALLET_TRANSACTION_UNRESOLVED',
      409,
      'another payment of this wallet on this chain is not resolved yet; it is not queued: retry once it is',
      { details: { walletId, ...(blocking ? { blockingTransactionId: blocking } : {}) } },
    );
  }

  /** Refuses early (before any RPC) when the wallet already holds an unresolved payment on the chain. */
  function checkHold(walletId: string, chainKey: string): void {
    const blocking = store.transactions.holder(walletId, chainKey);
    if (blocking) throw holdConflict(walletId, blocking);
  }

  /** The family's chain and intent a transfer body asks for, or the 4xx naming what is wrong. */
  function transferTarget(principal: Principal, wallet: WalletRow, body: TransferRequest) {
    if (body.autoRetry !== undefined) {
      throw new ServiceError(
        'AUTO_RETRY_NOT_SUPPORTED',
        400,
        'autoRetry is not available in this service version; omit it to send a transfer without automatic fee retry',
        { details: { field: 'body.autoRetry' } },
      );
    }
    if (body.addressScreening === true) {
      throw new ServiceError(
        'ADDRESS_SCREENING_UNAVAILABLE',
        400,
        'address screening is not available on this service; omit addressScreening or set it to false',
        { details: { field: 'body.addressScreening' } },
      );
    }
    if (!POSITIVE_INTEGER.test(body.value) || /^0+$/.test(body.value)) {
      throw invalidRequest('body.value must be a positive integer in the smallest unit (wei, lamports, token units)', {
        field: 'body.value',
      });
    }
    const family = wallet.type as PaymentFamily;
    const tokenKind = family === 'EVM' ? 'ERC20' : 'SPL';
    const kind = body.kind ?? (body.tokenAddress !== undefined ? tokenKind : 'NATIVE');
    if (kind !== 'NATIVE' && kind !== tokenKind) {
      throw invalidRequest(`body.kind ${kind} does not apply to ${family} wallets (use NATIVE or ${tokenKind})`, {
        field: 'body.kind',
      });
    }
    if (kind === 'NATIVE' && body.tokenAddress !== undefined) {
      throw invalidRequest('body.tokenAddress applies to token transfers: omit it for NATIVE or set kind', {
        field: 'body.tokenAddress',
      });
    }
    if (kind !== 'NATIVE' && body.tokenAddress === undefined) {
      throw invalidRequest(
        `a ${kind} transfer needs body.tokenAddress (the ${family === 'EVM' ? 'token contract' : 'mint'})`,
        {
          field: 'body.tokenAddress',
        },
      );
    }
    let chainRef: string;
    if (family === 'EVM') {
      if (body.network !== undefined) {
        throw invalidRequest('body.network applies to SOLANA wallets only; EVM transfers name body.chainId', {
          field: 'body.network',
        });
      }
      if (body.chainId === undefined)
        throw invalidRequest('body.chainId is required for EVM transfers', { field: 'body.chainId' });
      chainRef = String(body.chainId);
      if (!/^[1-9][0-9]{0,15}$/.test(chainRef)) {
        throw invalidRequest('body.chainId must be a positive integer (as a string)', { field: 'body.chainId' });
      }
    } else {
      if (body.chainId !== undefined) {
        throw invalidRequest('body.chainId applies to EVM wallets only; Solana transfers name body.network', {
          field: 'body.chainId',
        });
      }
      chainRef = body.network ?? 'SOLANA';
    }
    const chain = chains.resolve(principal.environment, family, chainRef);
    const intent: TransferIntent = {
      kind,
      to: body.to,
      value: body.value,
      ...(body.tokenAddress !== undefined ? { tokenAddress: body.tokenAddress } : {}),
    };
    return { family, chain, chainRef, intent };
  }

  function payloadOf(unsigned: UnsignedPayment, nonce: number | null): PaymentPayload {
    if (unsigned.family === 'SOLANA') return { family: 'SOLANA', transaction: unsigned.transaction };
    const { family: _f, ...tx } = unsigned;
    return { family: 'EVM', transaction: { ...tx, nonce: nonce ?? 0 } };
  }

  /**
   * Writes the record and starts its payment actor in one transaction, allocating the EVM nonce there (the
   * chain's pending nonce, or past the highest nonce a settled record of the wallet used, whichever is higher).
   * The partial unique index on unresolved records makes the one-pending rule hold even between two requests
   * that passed the early check together.
   */
  async function record(
    principal: Principal,
    wallet: WalletRow,
    chain: PaymentChain,
    spec: {
      intentKind: 'transfer' | 'sign_transaction';
      chainId: string | null;
      network: SolanaNetwork | null;
      payload: (nonce: number | null) => PaymentPayload;
      pendingNonce: number | null;
      /** A nonce the partner fixed in their own transaction (sign-transaction): used as is. */
      fixedNonce?: number;
      to: string | null;
      value: string | null;
      tokenAddress: string | null;
      recentBlockhash: string | null;
      lastValidBlockHeight: number | null;
    },
  ): Promise<{ id: string; view: ActorView }> {
    const id = randomUUID();
    const createdAt = new Date(now()).toISOString();
    try {
      await host.spawn('payment', id, undefined, () => {
        const blocking = store.transactions.holder(wallet.id, chain.key);
        if (blocking) throw holdConflict(wallet.id, blocking);
        let nonce: number | null = null;
        if (spec.fixedNonce !== undefined) nonce = spec.fixedNonce;
        else if (chain.family === 'EVM') {
          const settled = store.transactions.highestSettledNonce(wallet.id, chain.key);
          nonce = Math.max(spec.pendingNonce ?? 0, settled === null ? 0 : settled + 1);
        }
        store.transactions.insert({
          id,
          projectId: wallet.projectId,
          apiKeyId: principal.keyId,
          walletId: wallet.id,
          intentKind: spec.intentKind,
          type: chain.family,
          chainKey: chain.key,
          chainId: spec.chainId,
          network: spec.network,
          status: 'pending',
          hash: null,
          blockNumber: null,
          blockHash: null,
          failureStage: null,
          failureCode: null,
          failureMessage: null,
          monitoring: null,
          toAddress: spec.to,
          value: spec.value,
          tokenAddress: spec.tokenAddress,
          nonce,
          recentBlockhash: spec.recentBlockhash,
          lastValidBlockHeight: spec.lastValidBlockHeight,
          signedTransaction: null,
          unresolved: 1,
          createdAt,
          updatedAt: createdAt,
          resolvedAt: null,
          seq: store.transactions.nextSeq(),
        });
        const input: PaymentInput = {
          transactionId: id,
          projectId: wallet.projectId,
          apiKeyId: principal.keyId,
          walletId: wallet.id,
          walletAddress: wallet.address!,
          userId: wallet.userIdentifier,
          intentKind: spec.intentKind,
          family: chain.family,
          chainKey: chain.key,
          isDevnet: spec.network === 'SOLANA_DEVNET' || chain.environment === 'development',
          chainId: spec.chainId,
          network: spec.network,
          payload: spec.payload(nonce),
          monitorWindowMs: deps.monitorWindowMs,
        };
        return { input };
      });
    } catch (err) {
      if ((err as { code?: unknown }).code === 'SQLITE_CONSTRAINT_UNIQUE') {
        throw holdConflict(wallet.id, store.transactions.holder(wallet.id, chain.key));
      }
      throw err;
    }
    const view = await host.waitFor(id, (v) => v.status !== 'active' || !WAITING_STATES.has(topState(v)));
    return { id, view };
  }

  /** The answer to a broadcasting request once its payment left the signing and first broadcast stages. */
  function answer(id: string, view: ActorView): BroadcastResult {
    const c = view.context as unknown as PaymentContext;
    const status = paymentStatus(view);
    if (status === 'failed' && c.failure) {
      throw new ServiceError(
        asErrorCode(c.failure.code, 'SIGNING_FAILED'),
        failureHttpStatus(c.failure.stage, c.failure.code),
        c.failure.message,
        {
          details: {
            transactionId: id,
            failureStage: c.failure.stage,
            ...(c.signedTransaction ? { signedTransaction: c.signedTransaction } : {}),
          },
        },
      );
    }
    return { signedTransaction: c.signedTransaction ?? '', txHash: c.hash ?? '', transactionId: id, status };
  }

  async function buildWithNonce(chain: PaymentChain, from: string, intent: TransferIntent) {
    try {
      const [unsigned, pendingNonce] = await Promise.all([
        chain.buildTransfer(from, intent),
        chain.pendingNonce ? chain.pendingNonce(from) : Promise.resolve(null),
      ]);
      return { unsigned, pendingNonce };
    } catch (err) {
      throw buildFailure(err);
    }
  }

  return {
    /** `POST /v1/wallets/{walletId}/transfer`. */
    async transfer(
      principal: Principal,
      walletId: string,
      body: TransferRequest,
    ): Promise<BroadcastResult | { signedTransaction: string }> {
      const wallet = await admitted(principal, walletId, 'transfer', body);
      const { chain, chainRef, intent } = transferTarget(principal, wallet, body);
      const broadcast = body.broadcast !== false;
      if (broadcast) checkHold(wallet.id, chain.key);
      const { unsigned, pendingNonce } = await buildWithNonce(chain, wallet.address!, intent);
      if (!broadcast) {
        // Sign-only: no record, nothing held; the nonce is the chain's pending one.
        const signed = await signing.signPayment({
          projectId: wallet.projectId,
          walletId: wallet.id,
          payload: payloadOf(unsigned, pendingNonce),
        });
        return { signedTransaction: signed.signedTransaction };
      }
      const { id, view } = await record(principal, wallet, chain, {
        intentKind: 'transfer',
        chainId: chain.family === 'EVM' ? chainRef : null,
        network: chain.family === 'SOLANA' ? (chainRef as SolanaNetwork) : null,
        payload: (nonce) => payloadOf(unsigned, nonce),
        pendingNonce,
        to: intent.to,
        value: intent.value,
        tokenAddress: intent.tokenAddress ?? null,
        recentBlockhash: unsigned.family === 'SOLANA' ? unsigned.blockhash : null,
        lastValidBlockHeight: unsigned.family === 'SOLANA' ? unsigned.lastValidBlockHeight : null,
      });
      return answer(id, view);
    },

    /** `POST /v1/wallets/{walletId}/estimate-fee`: the same body as a transfer; nothing is signed or stored. */
    async estimateFee(principal: Principal, walletId: string, body: TransferRequest): Promise<FeeEstimate> {
      const wallet = await admitted(principal, walletId, 'transfer', body, false);
      const { chain, intent } = transferTarget(principal, wallet, body);
      try {
        return await chain.estimateFee(wallet.address!, intent);
      } catch (err) {
        throw buildFailure(err);
      }
    },

    /**
     * `sign-transaction` with `broadcast: true` (EVM and Solana): the partner's transaction, signed and broadcast
     * through a payment actor. EVM: the chain is the transaction's `chainId`; Solana: `network` (default SOLANA),
     * proved by the transaction's blockhash being valid there.
     */
    async broadcastTransaction(
      principal: Principal,
      walletId: string,
      body: { transaction: unknown; network?: SolanaNetwork; networkPassphrase?: string },
    ): Promise<BroadcastResult> {
      const found = store.wallets.get(principal.projectId, walletId);
      if (found && found.type === 'EVM') {
        if (body.network !== undefined) {
          throw invalidRequest('body.network applies to SOLANA wallets only', { field: 'body.network' });
        }
        if (typeof body.transaction !== 'object' || body.transaction === null || Array.isArray(body.transaction)) {
          throw invalidRequest('body.transaction must be an EVM transaction object for an EVM wallet', {
            field: 'body.transaction',
          });
        }
        const tx = body.transaction as EvmTransactionInput;
        // Checked in full before anything is recorded: what is stored is what will be signed.
        try {
          prepareEvmTransaction(tx);
        } catch (err) {
          if (err instanceof ChainInputError) {
            throw invalidRequest(err.message, {
              field: err.field ? `body.transaction.${err.field}` : 'body.transaction',
            });
          }
          throw err;
        }
        const chainId = String(tx.chainId);
        const wallet = await signing.admitPayment(principal, walletId, 'sign-transaction', chainId);
        const chain = chains.resolve(principal.environment, 'EVM', chainId);
        checkHold(wallet.id, chain.key);
        const { id, view } = await record(principal, wallet, chain, {
          intentKind: 'sign_transaction',
          chainId,
          network: null,
          payload: () => ({ family: 'EVM', transaction: tx }),
          pendingNonce: null,
          fixedNonce: tx.nonce,
          to: tx.to ?? null,
          value: tx.value ?? null,
          tokenAddress: null,
          recentBlockhash: null,
          lastValidBlockHeight: null,
        });
        return answer(id, view);
      }
      if (found && found.type === 'SOLANA') {
        if (typeof body.transaction !== 'string') {
          throw invalidRequest('body.transaction must be a base64 string for a SOLANA wallet', {
            field: 'body.transaction',
          });
        }
        if (body.networkPassphrase !== undefined) {
          throw invalidRequest('body.networkPassphrase applies to STELLAR (ignored for SUI), not SOLANA', {
            field: 'body.networkPassphrase',
          });
        }
        const network = body.network ?? 'SOLANA';
        const wallet = await signing.admitPayment(principal, walletId, 'sign-transaction', network);
        let blockhash: string;
        try {
          const prepared = prepareSolanaTransaction(body.transaction, wallet.address!);
          blockhash = VersionedMessage.deserialize(prepared.messageBytes).recentBlockhash;
        } catch (err) {
          if (err instanceof ChainInputError) {
            throw invalidRequest(err.message, { field: err.field ? `body.${err.field}` : 'body.transaction' });
          }
          throw err;
        }
        const chain = chains.resolve(principal.environment, 'SOLANA', network);
        checkHold(wallet.id, chain.key);
        await proveNetwork(chain, network, blockhash);
        const transaction = body.transaction;
        const { id, view } = await record(principal, wallet, chain, {
          intentKind: 'sign_transaction',
          chainId: null,
          network,
          payload: () => ({ family: 'SOLANA', transaction }),
          pendingNonce: null,
          to: null,
          value: null,
          tokenAddress: null,
          recentBlockhash: blockhash,
          lastValidBlockHeight: null,
        });
        return answer(id, view);
      }
      // Not found, or a type without broadcast: the signing service gives the usual answer.
      await signing.admitPayment(principal, walletId, 'sign-transaction', null);
      throw new Error('unreachable: admitPayment refuses wallets that cannot broadcast');
    },

    /** `GET /v1/wallets/{walletId}/transactions`. */
    list(
      principal: Principal,
      walletId: string,
      q: { status?: TransactionStatus; intentKind?: IntentKind; cursor?: string; limit?: number },
    ) {
      if (!store.wallets.get(principal.projectId, walletId)) {
        throw new ServiceError('WALLET_NOT_FOUND', 404, 'wallet not found');
      }
      const limit = q.limit ?? 20;
      const rows = store.transactions.list(principal.projectId, walletId, {
        ...(q.status !== undefined ? { status: q.status } : {}),
        ...(q.intentKind !== undefined ? { intentKind: q.intentKind } : {}),
        ...(q.cursor !== undefined ? { beforeSeq: seqOfCursor(q.cursor) } : {}),
        limit: limit + 1,
      });
      const hasMore = rows.length > limit;
      const page = rows.slice(0, limit);
      return {
        data: page.map(viewOf),
        pagination: {
          cursor: hasMore && page.length > 0 ? cursorOf(page[page.length - 1]!.seq) : null,
          hasMore,
          limit,
        },
      };
    },

    /** `GET /v1/wallets/{walletId}/transactions/{transactionId}`: another partner's record is a 404 too. */
    get(principal: Principal, walletId: string, transactionId: string): TransactionView {
      const row = store.transactions.get(principal.projectId, walletId, transactionId);
      if (!row) throw new ServiceError('TRANSACTION_NOT_FOUND', 404, 'transaction not found');
      return viewOf(row);
    },
  };

  async function admitted(
    principal: Principal,
    walletId: string,
    operation: 'transfer',
    body: TransferRequest,
    authorize = true,
  ): Promise<WalletRow> {
    // The chain the policy is asked about: EVM chain id or Solana network, as the body names it.
    const chainId = body.chainId !== undefined ? String(body.chainId) : (body.network ?? null);
    if (!authorize) {
      const w = store.wallets.get(principal.projectId, walletId);
      if (!w) throw new ServiceError('WALLET_NOT_FOUND', 404, 'wallet not found');
      if (w.type !== 'EVM' && w.type !== 'SOLANA') {
        throw new ServiceError(
          'UNSUPPORTED_OPERATION',
          400,
          `estimate-fee is not available for ${w.type} wallets (supported: EVM, SOLANA)`,
          {
            details: { walletId, walletType: w.type },
          },
        );
      }
      if (!w.address)
        throw new ServiceError('WALLET_NOT_READY', 400, 'the wallet is still being created; retry shortly');
      return w;
    }
    return signing.admitPayment(principal, walletId, operation, chainId);
  }
}

/**
 * Proves a partner's Solana transaction is for `network`: its blockhash must be valid there. When it is not but
 * is valid on another configured network, the request contradicts the transaction (the spec's 400).
 */
async function proveNetwork(chain: PaymentChain, network: string, blockhash: string): Promise<void> {
  let valid: boolean;
  try {
    valid = (await chain.isBlockhashValid?.(blockhash)) ?? true;
  } catch (err) {
    throw buildFailure(err);
  }
  if (!valid) {
    throw invalidRequest(
      `body.network is ${network} but the transaction's blockhash is not valid on ${network}: it was built for another network, or its blockhash expired (build it again with a fresh one)`,
      { field: 'body.network' },
    );
  }
}

function topState(v: ActorView): string {
  return typeof v.value === 'string' ? v.value : (Object.keys(v.value)[0] ?? '');
}

/** A record as partners see it (spec: transaction record); fields that do not apply are absent. */
export function viewOf(r: TransactionRow): TransactionView {
  const view: TransactionView = {
    transactionId: r.id,
    intentKind: r.intentKind,
    type: r.type,
    status: r.status,
    hash: r.hash,
    createdAt: r.createdAt,
  };
  if ((r.status === 'confirmed' || r.status === 'reverted') && r.blockNumber !== null) {
    view.blockNumber = r.blockNumber;
    if (r.blockHash !== null) view.blockHash = r.blockHash;
  }
  if (r.status === 'failed') {
    if (r.failureStage !== null) view.failureStage = r.failureStage;
    if (r.failureCode !== null) view.failureCode = r.failureCode;
    if (r.failureMessage !== null) view.failureMessage = r.failureMessage;
  }
  if (r.monitoring !== null) view.monitoring = JSON.parse(r.monitoring) as Record<string, unknown>;
  if (r.type === 'EVM' && r.chainId !== null) view.chainId = r.chainId;
  if (r.type === 'SOLANA' && r.network !== null) view.network = r.network;
  // Solana sign_transaction records carry no to/value/tokenAddress; EVM ones carry to and value when the request
  // had them, never tokenAddress (spec: calldata is not decoded).
  if (!(r.type === 'SOLANA' && r.intentKind === 'sign_transaction')) {
    if (r.toAddress !== null) view.to = r.toAddress;
    if (r.value !== null) view.value = r.value;
    if (r.intentKind === 'transfer' && r.tokenAddress !== null) view.tokenAddress = r.tokenAddress;
  }
  return view;
}

export type PaymentService = ReturnType<typeof createPaymentService>;
