/**
 * The payment routes' use cases: `transfer`, `estimate-fee`, `sign-transaction` with `broadcast: true`, and the
 * transaction history. A broadcasting request is admitted here (the wallet read and checked once, the policy, the
 * request parsed by the wallet's payment family, the chain, the one-pending-payment rule), built against the chain
 * (fees, gas, blockhash), then handed to a payment actor, whose definition records it with its nonce in the
 * transaction that starts it (actors/payment/payment-definition.ts); the actor signs, broadcasts and follows it to a
 * final status. The request waits for the broadcast's verdict and answers from the actor's view.
 */
import { randomUUID } from 'node:crypto';
import type { ActorHost } from '../../actors/host/host.ts';
import {
  holdConflict,
  type PaymentAdmission,
  type PaymentDefinition,
  type PaymentView,
  refuseHeldNonce,
} from '../../actors/payment/payment-definition.ts';
import { signPaymentPayload } from '../../actors/payment/sign-payment.ts';
import { enforceDecision, type SignatureRequest } from '../../actors/signing/signature-policy.ts';
import type { WalletSigner } from '../../actors/signing/wallet-signer.ts';
import { parseAutoRetryTerms } from '../../chains/auto-retry-terms.ts';
import { ChainInputError } from '../../chains/chain-input-error.ts';
import { asErrorCode } from '../../chains/domain/error-catalogue.ts';
import { invalidRequest, ServiceError, walletNotFound } from '../../chains/domain/errors.ts';
import type {
  FailureStage,
  IntentKind,
  PaymentFamily,
  SolanaNetwork,
  TransactionStatus,
} from '../../chains/domain/payments.ts';
import { isPaymentFamily, PAYMENT_FAMILIES } from '../../chains/domain/payments.ts';
import { isCancellationOf } from '../../chains/evm/cancellation-shape.ts';
import type { EvmPaymentPayload } from '../../chains/evm/evm-payments.ts';
import {
  type BuildOptions,
  ChainRpcError,
  type EvmUnsignedPayment,
  type FeeEstimate,
  type PaymentChain,
  type TransferIntent,
  type UnsignedPayment,
} from '../../chains/payment-chain.ts';
import { paymentFamilies } from '../../chains/payment-families.ts';
import type { PaymentFamilyAdapter, PaymentPayload, TransferRequestFields } from '../../chains/payment-family.ts';
import type { IdempotencyClaim } from '../../store/idempotency-repo.ts';
import type { Store } from '../../store/index.ts';
import type { TransactionRow } from '../../store/transactions-repo.ts';
import type { WalletRow } from '../../store/wallets-repo.ts';
import type { ChainRegistry } from '../chain-registry.ts';
import { decodeCursor, encodeCursor } from '../cursor.ts';
import type { Principal } from '../plugins/auth.ts';
import {
  chainInput,
  checkTransactionFields,
  NO_POLICY_CONTEXT,
  type PolicyContext,
  referenceFields,
  type SigningService,
} from './signing.ts';

/** A `transfer` (or `estimate-fee`) body: what the family reads, and the service's own options. */
export interface TransferRequest extends TransferRequestFields {
  broadcast?: boolean;
  addressScreening?: boolean;
  autoRetry?: unknown;
}

export interface BroadcastResult {
  signedTransaction: string;
  txHash: string;
  transactionId: string;
  /** The record's status when the answer left: `submitted`, or `pending` when the node has not answered yet. */
  status: TransactionStatus;
}

export interface TransactionView {
  transactionId: string;
  intentKind: IntentKind;
  type: PaymentFamily;
  status: TransactionStatus;
  hash: string | null;
  blockNumber?: string;
  blockHash?: string;
  failureStage?: FailureStage;
  failureCode?: string;
  failureMessage?: string;
  monitoring?: Record<string, unknown>;
  chainId?: string;
  network?: string;
  to?: string;
  value?: string;
  tokenAddress?: string;
  /**
   * The spec's `autoRetry` object: the single-record lookup of an auto-retry transfer only. EVM: `maxExecutionFeeWei`
   * and `nonce`; Solana: `network`, `maxExecutionFeeLamports` and each attempt's `lastValidBlockHeight`.
   */
  autoRetry?: {
    state: 'active' | 'stopped' | 'resolved';
    reason: string | null;
    network?: SolanaNetwork;
    maxExecutionFeeWei?: string;
    maxExecutionFeeLamports?: string;
    expiresAt: string;
    nonce?: number | null;
    bumpCount: number;
    latestAttemptHash: string | null;
    attempts: Array<{
      ordinal: number;
      stage: string;
      preparedAt: string;
      hash: string | null;
      lastBroadcastAt: string | null;
      lastValidBlockHeight?: number;
    }>;
  };
  createdAt: string;
}

/** HTTP status of a payment that failed before the request was answered, by failure code. */
function failureHttpStatus(stage: string, code: string): number {
  if (stage === 'broadcast') return 400;
  if (code === 'WALLET_CLAIMED' || code === 'WALLET_SHARE_NOT_MIGRATED') return 403;
  if (code === 'ENCLAVE_UNAVAILABLE' || code === 'ENCLAVE_TIMEOUT' || code === 'SIGNING_INTERRUPTED') return 503;
  return 500;
}

const cursorOf = (seq: number) => encodeCursor('t', seq);
const seqOfCursor = (cursor: string) => decodeCursor('t', cursor);

/** What the node said while a payment was being built or checked, as the API answers it (no record exists yet). */
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

/** Features of the transfer body this service does not offer: refused by name rather than ignored. */
function refuseUnavailable(body: TransferRequest): void {
  if (body.addressScreening === true) {
    throw new ServiceError(
      'ADDRESS_SCREENING_UNAVAILABLE',
      400,
      'address screening is not available on this service; omit addressScreening or set it to false',
      { details: { field: 'body.addressScreening' } },
    );
  }
}

export function createPaymentService(deps: {
  store: Pick<Store, 'transactions' | 'wallets'>;
  host: Pick<ActorHost, 'spawn' | 'waitFor'>;
  /** The payment machine's definition, as the host runs it. */
  paymentActors: PaymentDefinition;
  /** The wallet read and checked, and the policy decision point. */
  signing: Pick<SigningService, 'paymentWallet' | 'signAuthorized' | 'policy'>;
  /** Signs sign-only transfers (no record, no actor). */
  signer: Pick<WalletSigner, 'keyOf'>;
  chains: ChainRegistry;
}) {
  const { store, host, paymentActors, signing, signer, chains } = deps;

  /** Refuses early (before any RPC) when the wallet already holds an unresolved payment on the chain. */
  function checkHold(walletId: string, chainKey: string): void {
    const blocking = store.transactions.holder(walletId, chainKey);
    if (blocking) throw holdConflict(walletId, blocking);
  }

  /** The wallet's payment family, and the transfer's chain and intent as the family reads them. */
  function transferTarget(principal: Principal, wallet: WalletRow & { type: PaymentFamily }, body: TransferRequest) {
    refuseUnavailable(body);
    const family = paymentFamilies[wallet.type];
    const { chainRef, intent, nonce } = chainInput('body', () => family.transferTarget(body, principal.environment));
    const chain = chains.resolve(principal.environment, family.family, chainRef);
    return { family, chain, chainRef, intent, nonce };
  }

  /**
   * Starts the payment's actor, whose definition writes the record (and its nonce) in the transaction that starts
   * it, and waits for the signature and the first broadcast verdict.
   */
  async function record(admission: PaymentAdmission): Promise<{ id: string; view: PaymentView }> {
    const id = await admit(admission);
    const view = await host.waitFor(paymentActors, id, (v) => !v.awaitingVerdict);
    return { id, view };
  }

  /** Starts the payment's actor (its record, nonce and key written together); its id. */
  async function admit(admission: PaymentAdmission): Promise<string> {
    const id = randomUUID();
    await host.spawn(paymentActors, id, admission);
    // The key was written with the record: from now on its answer is this payment's, whatever happens next.
    if (admission.idempotency) admission.idempotency.transactionId = id;
    return id;
  }

  /** The answer to a broadcasting request once its payment left the signing and first broadcast stages. */
  function answer(id: string, view: PaymentView): BroadcastResult {
    const c = view.context;
    if (view.recordStatus === 'failed' && c.failure) {
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
    return {
      signedTransaction: c.signedTransaction ?? '',
      txHash: c.hash ?? '',
      transactionId: id,
      status: view.recordStatus,
    };
  }

  async function buildWithNonce(chain: PaymentChain, from: string, intent: TransferIntent, options?: BuildOptions) {
    try {
      const [unsigned, pendingNonce] = await Promise.all([
        chain.buildTransfer(from, intent, options),
        chain.pendingNonce ? chain.pendingNonce(from) : Promise.resolve(null),
      ]);
      return { unsigned, pendingNonce };
    } catch (err) {
      throw buildFailure(err);
    }
  }

  /**
   * A broadcast transaction must take the wallet's next nonce, the one the service would give a transfer: an older
   * one can only fail or replace, and a later one waits behind a gap the service never fills, holding the wallet.
   */
  function checkNextNonce(
    walletId: string,
    chainKey: string,
    nonce: number,
    pending: number,
    field = 'body.transaction.nonce',
  ): void {
    const settled = store.transactions.highestSettledNonce(walletId, chainKey);
    const next = Math.max(pending, settled === null ? 0 : settled + 1);
    if (nonce !== next) {
      throw invalidRequest(
        `${field.slice('body.'.length)} is ${nonce}; a broadcast transaction must use the wallet's next nonce, ${next}${nonce < next ? ' (a lower one is already used or taken)' : ' (a higher one would wait behind a gap forever)'}`,
        { field, expectedNonce: next },
      );
    }
  }

  /**
   * The admission rules of an auto-retry transfer that do not need the chain (spec, "Transfer", `autoRetry`): a
   * wallet made through the API, an `Idempotency-Key`, a broadcast transfer, valid terms for the wallet's family.
   */
  function autoRetryTerms(
    wallet: WalletRow & { type: PaymentFamily },
    body: TransferRequest,
    idempotency: IdempotencyClaim | null,
  ): { ceiling: string; expiresAt: number } {
    if (wallet.custody === 'pregen') {
      throw new ServiceError(
        'AUTO_RETRY_NOT_SUPPORTED',
        400,
        'autoRetry needs a wallet created through the API; this one is pre-generated',
        { details: { field: 'body.autoRetry' } },
      );
    }
    if (idempotency === null) {
      throw invalidRequest('an auto-retry transfer needs an Idempotency-Key header: it names the operation for good', {
        field: 'headers.idempotency-key',
      });
    }
    if (body.broadcast === false) {
      throw invalidRequest('an auto-retry transfer is broadcast: omit broadcast or set it to true', {
        field: 'body.broadcast',
      });
    }
    return chainInput('body', () => parseAutoRetryTerms(body.autoRetry, wallet.type, Date.now()));
  }

  /**
   * The stopped auto-retry payment a broadcast `sign-transaction` cancels (spec: "Manual cancellation of a stopped EVM
   * payment"), or null when it is not a cancellation. Only that exact payload, only once the payment's retry is
   * `stopped`, and only with an Idempotency-Key; any other payload meets the hold as usual (409).
   */
  function cancellationTarget(
    wallet: WalletRow & { type: PaymentFamily },
    chainKey: string,
    payload: PaymentPayload,
    idempotency: IdempotencyClaim | null,
  ): string | null {
    if (wallet.type !== 'EVM') return null;
    const held = store.transactions.holding(wallet.id, chainKey);
    if (!held || held.nonce === null) return null;
    const row = store.transactions.getAny(held.id);
    if (!row?.autoRetry || (JSON.parse(row.autoRetry) as { state: string }).state !== 'stopped') return null;
    const tx = (payload as EvmPaymentPayload).transaction;
    if (!isCancellationOf(tx, wallet.address!, Number(row.chainId), held.nonce)) return null;
    if (idempotency === null) {
      throw invalidRequest('a cancellation needs its own Idempotency-Key header', { field: 'headers.idempotency-key' });
    }
    return held.id;
  }

  /** The first attempt's most fee must fit the ceiling: the spec's "initial fees must fit". */
  function checkFirstAttemptFits(unsigned: UnsignedPayment, ceiling: string): void {
    const tx = unsigned as EvmUnsignedPayment;
    const perGas = BigInt(tx.type === 2 ? tx.maxFeePerGas! : tx.gasPrice!);
    const most = BigInt(tx.gasLimit) * perGas;
    if (most > BigInt(ceiling)) {
      throw invalidRequest(
        `the first attempt may cost ${most} wei (gasLimit ${tx.gasLimit} × ${tx.type === 2 ? 'maxFeePerGas' : 'gasPrice'} ${perGas}), above autoRetry.maxExecutionFeeWei ${ceiling}`,
        { field: 'body.autoRetry.maxExecutionFeeWei' },
      );
    }
  }

  /**
   * A broadcasting payment's policy decision: taken in the transaction that writes its record when the decision point
   * can (`decideWithin`, the service's), counted under the payment's id; otherwise asked now, before it.
   */
  async function paymentDecision(request: SignatureRequest): Promise<PaymentAdmission['decide']> {
    const { policy } = signing;
    if (policy.decideWithin) {
      const decideWithin = policy.decideWithin.bind(policy);
      return (transactionId) => decideWithin({ ...request, spendRef: transactionId });
    }
    enforceDecision(await policy.decide(request));
    return undefined;
  }

  return {
    /** `POST /v1/wallets/{walletId}/transfer`. */
    async transfer(
      principal: Principal,
      walletId: string,
      body: TransferRequest,
      idempotency: IdempotencyClaim | null = null,
      ctx: PolicyContext = { ...NO_POLICY_CONTEXT, idempotency, body },
    ): Promise<BroadcastResult | { signedTransaction: string } | { accepted: TransactionView }> {
      const wallet = signing.paymentWallet(principal, walletId, 'transfer');
      const terms = body.autoRetry === undefined ? null : autoRetryTerms(wallet, body, idempotency);
      const { family, chain, chainRef, intent, nonce: asked } = transferTarget(principal, wallet, body);
      const facts = () => family.transferFacts(chainRef, intent);
      const broadcast = body.broadcast !== false;
      if (broadcast) checkHold(wallet.id, chain.key);
      // Solana chooses the first attempt's priority fee within the ceiling; EVM's first attempt is checked against it.
      const { unsigned, pendingNonce } = await buildWithNonce(
        chain,
        wallet.address!,
        intent,
        terms && family.family === 'SOLANA' ? { feeCeiling: terms.ceiling } : undefined,
      );
      if (!broadcast) {
        // Sign-only: no record, nothing held; the nonce is the one asked for or the chain's pending one, unless a
        // payment holds it.
        const nonce = asked ?? pendingNonce;
        if (nonce !== null) refuseHeldNonce(store.transactions, wallet.id, chain.key, nonce);
        // The ledger counts this signature once per nonce (EVM) or blockhash (Solana): the same body signed again
        // with a newer one is another transaction that can move the value again.
        const identity = unsigned.family === 'SOLANA' ? `blockhash:${unsigned.blockhash}` : `nonce:${nonce}`;
        const signed = await signing.signAuthorized(
          principal,
          wallet,
          'transfer',
          chainRef,
          facts,
          ctx,
          () => signPaymentPayload(signer, wallet, family.transferPayload(unsigned, nonce)),
          identity,
        );
        return { signedTransaction: signed.signedTransaction };
      }
      // A nonce asked for must be the one the record would allocate anyway (field `body.nonce`).
      if (asked !== null && pendingNonce !== null)
        checkNextNonce(wallet.id, chain.key, asked, pendingNonce, 'body.nonce');
      const decide = await paymentDecision({
        principal,
        wallet,
        operation: 'transfer',
        rawSignature: false,
        chainId: chainRef,
        facts,
        ...referenceFields('transfer', ctx),
      });
      const admission: PaymentAdmission = {
        apiKeyId: principal.keyId,
        wallet,
        chain,
        chainRef,
        intentKind: 'transfer',
        signs: { kind: 'transfer', unsigned, pendingNonce },
        record: { to: intent.to, value: intent.value, tokenAddress: intent.tokenAddress ?? null },
        idempotency,
        // Solana rebuilds each new attempt from the transfer itself (a fresh blockhash, a raised priority fee).
        autoRetry: terms && { ...terms, ...(family.family === 'SOLANA' ? { intent } : {}) },
        ...(decide ? { decide } : {}),
      };
      if (terms) {
        if (family.family === 'EVM') checkFirstAttemptFits(unsigned, terms.ceiling);
        // The key names this operation for good: a replay answers its current state, even after the deadline.
        idempotency!.expiresAt = null;
        // Accepted now (202): the service carries it on; the partner follows the record.
        return { accepted: recordView(store.transactions.getAny(await admit(admission))!) };
      }
      const { id, view } = await record(admission);
      return answer(id, view);
    },

    /** `POST /v1/wallets/{walletId}/estimate-fee`: the same body as a transfer; nothing is signed or stored. */
    async estimateFee(principal: Principal, walletId: string, body: TransferRequest): Promise<FeeEstimate> {
      const wallet = estimableWallet(principal, walletId);
      const { chain, intent } = transferTarget(principal, wallet, body);
      try {
        return await chain.estimateFee(wallet.address!, intent);
      } catch (err) {
        throw buildFailure(err);
      }
    },

    /**
     * `sign-transaction` with `broadcast: true` (EVM and Solana): the partner's transaction, checked by the wallet's
     * payment family (which chain it is for, what it fixes), proved to belong to that chain where the transaction
     * alone does not say, then signed and broadcast through a payment actor.
     */
    async broadcastTransaction(
      principal: Principal,
      walletId: string,
      body: { transaction: unknown; network?: SolanaNetwork; networkPassphrase?: string },
      idempotency: IdempotencyClaim | null = null,
      ctx: PolicyContext = { ...NO_POLICY_CONTEXT, idempotency, body },
    ): Promise<BroadcastResult> {
      const wallet = signing.paymentWallet(principal, walletId, 'sign-transaction');
      checkTransactionFields(wallet.type, body);
      const family: PaymentFamilyAdapter = paymentFamilies[wallet.type];
      const partner = chainInput('body', () => family.partnerTransaction(body, wallet.address!, principal.environment));
      const chain = chains.resolve(principal.environment, family.family, partner.chainRef);
      const cancels = cancellationTarget(wallet, chain.key, partner.payload, idempotency);
      if (!cancels) checkHold(wallet.id, chain.key);
      let pendingNonce: number | null;
      try {
        await chain.checkPartnerTransaction(partner);
        pendingNonce =
          partner.nonce !== null && chain.pendingNonce && !cancels ? await chain.pendingNonce(wallet.address!) : null;
      } catch (err) {
        throw buildFailure(err);
      }
      // A cancellation takes the stopped payment's nonce: the one exception to "the wallet's next nonce".
      if (pendingNonce !== null) checkNextNonce(wallet.id, chain.key, partner.nonce!, pendingNonce);
      const decide = await paymentDecision({
        principal,
        wallet,
        operation: 'sign-transaction',
        rawSignature: false,
        chainId: partner.chainRef,
        facts: () => family.payloadFacts(partner.payload, partner.chainRef, wallet.address!),
        ...referenceFields('sign-transaction', ctx),
      });
      const { id, view } = await record({
        apiKeyId: principal.keyId,
        wallet,
        chain,
        chainRef: partner.chainRef,
        intentKind: 'sign_transaction',
        signs: {
          kind: 'given',
          payload: partner.payload,
          nonce: partner.nonce,
          recentBlockhash: partner.recentBlockhash,
        },
        record: { to: partner.to, value: partner.value, tokenAddress: null },
        idempotency,
        cancels,
        ...(decide ? { decide } : {}),
      });
      return answer(id, view);
    },

    /**
     * The answer of a payment a retry's `Idempotency-Key` names, when it was not stored (the service stopped between
     * the record and its answer): the same answer, from the payment's state.
     */
    async resume(
      principal: Principal,
      walletId: string,
      transactionId: string,
    ): Promise<{ statusCode: number; body: object; headers: Record<string, string> }> {
      const row = store.transactions.get(principal.projectId, walletId, transactionId);
      if (!row) throw new ServiceError('TRANSACTION_NOT_FOUND', 404, 'transaction not found');
      // An auto-retry transfer: its current state, as admission answered it (202), whatever has happened since.
      if (row.autoRetry !== null) {
        return { statusCode: 202, body: recordView(row), headers: { location: recordLocation(walletId, row.id) } };
      }
      const view = await host.waitFor(paymentActors, transactionId, (v) => !v.awaitingVerdict);
      return { statusCode: 200, body: answer(transactionId, view), headers: {} };
    },

    /** `GET /v1/wallets/{walletId}/transactions`. */
    list(
      principal: Principal,
      walletId: string,
      q: { status?: TransactionStatus; intentKind?: IntentKind; cursor?: string; limit?: number },
    ) {
      if (!store.wallets.get(principal.projectId, walletId)) throw walletNotFound();
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
      return recordView(row);
    },
  };

  /** The wallet a fee estimate prices a transfer for: nothing is signed, so only its type and address matter. */
  function estimableWallet(principal: Principal, walletId: string): WalletRow & { type: PaymentFamily } {
    const w = store.wallets.get(principal.projectId, walletId);
    if (!w) throw walletNotFound();
    if (!isPaymentFamily(w.type)) {
      throw new ServiceError(
        'UNSUPPORTED_OPERATION',
        400,
        `estimate-fee is not available for ${w.type} wallets (supported: ${PAYMENT_FAMILIES.join(', ')})`,
        { details: { walletId, walletType: w.type } },
      );
    }
    if (!w.address) throw new ServiceError('WALLET_NOT_READY', 400, 'the wallet is still being created; retry shortly');
    return w as WalletRow & { type: PaymentFamily };
  }
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
  // Each family's record names its chain by its own field (the other is null), and stores only what its requests
  // say: a Solana sign_transaction record has no to or value; tokenAddress belongs to transfers.
  if (r.chainId !== null) view.chainId = r.chainId;
  if (r.network !== null) view.network = r.network;
  if (r.toAddress !== null) view.to = r.toAddress;
  if (r.value !== null) view.value = r.value;
  if (r.intentKind === 'transfer' && r.tokenAddress !== null) view.tokenAddress = r.tokenAddress;
  return view;
}

/** Where a record is read: the `Location` of an accepted auto-retry transfer. */
export function recordLocation(walletId: string, transactionId: string): string {
  return `/v1/wallets/${encodeURIComponent(walletId)}/transactions/${encodeURIComponent(transactionId)}`;
}

/** The single-record view: the list's, with an auto-retry transfer's `autoRetry` object. */
export function recordView(r: TransactionRow): TransactionView {
  const view = viewOf(r);
  if (r.autoRetry !== null) {
    const attempts = (r.attempts ? JSON.parse(r.attempts) : []) as NonNullable<
      TransactionView['autoRetry']
    >['attempts'];
    const latest = [...attempts].reverse().find((a) => a.hash !== null);
    view.autoRetry = {
      ...(JSON.parse(r.autoRetry) as Omit<NonNullable<TransactionView['autoRetry']>, 'attempts' | 'latestAttemptHash'>),
      latestAttemptHash: latest?.hash ?? null,
      attempts,
    };
  }
  return view;
}

export type PaymentService = ReturnType<typeof createPaymentService>;
