/**
 * The yield routes' use cases (spec: Yield routes, Yield position). For now the position: a wallet's USDC supplied to
 * the lending market of a chain (Aave v3), read at one block in one RPC round trip through the chain's EVM client.
 *
 * Every yield route is for an EVM wallet, unclaimed, whose key generation is complete (and, pre-generated, whose user
 * share is in the service): the wallet a yield operation could sign with. The chain is one of the spec's three and
 * must have an `evm` entry in the chains file; the chain's `environment` does not apply, since the spec makes the
 * yield chain independent of the API environment.
 */
import { randomUUID } from 'node:crypto';
import type { ActorHost } from '../../actors/host/host.ts';
import type { WalletSigner } from '../../actors/signing/wallet-signer.ts';
import {
  operationInProgress as operationInProgressError,
  type YieldDefinition,
  type YieldView,
} from '../../actors/yield/yield-definition.ts';
import { ChainInputError } from '../../chains/chain-input-error.ts';
import { InternalError, invalidRequest, ServiceError, walletNotFound } from '../../chains/domain/errors.ts';
import {
  isYieldChainId,
  YIELD_CHAIN_IDS,
  type YieldAction,
  type YieldChainId,
  type YieldStatus,
  type YieldStepKind,
} from '../../chains/domain/yield.ts';
import { estimateWithdrawable } from '../../chains/evm/estimate-withdrawable.ts';
import { formatUsdcAmount } from '../../chains/evm/format-usdc-amount.ts';
import type { LendingMarket } from '../../chains/evm/lending-protocol.ts';
import { parseUsdcAmount } from '../../chains/evm/parse-usdc-amount.ts';
import { type LendingMarketOverride, resolveLendingMarket } from '../../chains/evm/resolve-lending-market.ts';
import { ChainRpcError } from '../../chains/payment-chain.ts';
import type { Store } from '../../store/index.ts';
import type { YieldOperationRow } from '../../store/yield-repo.ts';
import type { ChainRegistry } from '../chain-registry.ts';
import type { Principal } from '../plugins/auth.ts';
import { fingerprintOf } from './idempotency.ts';

/** The spec's Yield position. Amounts are decimal USDC strings. */
export interface YieldPositionView {
  suppliedBalance: string;
  withdrawal: { availableAmount: string | null };
  blockNumber: string;
  /** ISO 8601. */
  blockTimestamp: string;
}

/** One transaction of an operation, as the operation answers it: its record's id and where it stands. */
export interface YieldStepView {
  /** `approve` (USDC allowance for the pool), `supply` or `withdraw` (the pool). */
  type: YieldStepKind;
  transactionId: string;
  /** The record's status (transaction history has the whole record). */
  status: string;
  hash: string | null;
  error?: { code: string };
}

/** The spec's Yield operation. */
export interface YieldOperationView {
  id: string;
  walletId: string;
  chainId: number;
  action: YieldAction;
  /** Decimal USDC as the request wrote it (normalized), or `all`. */
  amount: string;
  status: YieldStatus;
  transactions: YieldStepView[];
  error: { code: string; message: string; reviewId?: string; caseId?: string } | null;
  createdAt: string;
  updatedAt: string;
}

/** A deposit's or withdrawal's body (the route's schema checked its shape). */
export interface YieldRequest {
  chainId: number;
  amount: string;
}

/** The latest block timestamp a Date can hold (seconds): a node answering more is not answering its chain's. */
const MAX_TIMESTAMP_SECONDS = 8_640_000_000_000n;

/** The query field a yield chain id comes from, for the answers that name it. */
const CHAIN_FIELD = 'querystring.chainId';

export function createYieldService(deps: {
  store: Pick<Store, 'wallets' | 'yieldOps' | 'transactions' | 'writer'>;
  host: Pick<ActorHost, 'spawn' | 'deliver' | 'waitFor' | 'read'>;
  yieldActors: YieldDefinition;
  /** Claimed, not ready and not-migrated wallets are refused as the signing routes refuse them. */
  signer: Pick<WalletSigner, 'walletThatSigns'>;
  chains: Pick<ChainRegistry, 'get'>;
  /** The chains file's `yield` entries: protocol addresses that replace a chain's defaults. */
  overrides: readonly LendingMarketOverride[];
}) {
  const { store, signer, chains, host, yieldActors } = deps;
  const markets = new Map<YieldChainId, LendingMarket>(
    YIELD_CHAIN_IDS.map((id) => [id, resolveLendingMarket(id, deps.overrides)!]),
  );

  /** The wallet a yield route may act for, or the answer explaining why not. */
  function yieldWallet(principal: Principal, walletId: string): `0x${string}` {
    const wallet = store.wallets.get(principal.projectId, walletId);
    if (!wallet) throw walletNotFound();
    if (wallet.type !== 'EVM') {
      throw new ServiceError(
        'UNSUPPORTED_OPERATION',
        400,
        `yield is available for EVM wallets only, not ${wallet.type} wallets`,
        { details: { walletId, walletType: wallet.type } },
      );
    }
    return signer.walletThatSigns(principal.projectId, walletId).address as `0x${string}`;
  }

  /** The chain's EVM client, which must be in the chains file. */
  function yieldChain(chainId: YieldChainId, field = CHAIN_FIELD) {
    const chain = chains.get(`evm:${chainId}`);
    if (chain) return chain;
    const configured = YIELD_CHAIN_IDS.filter((id) => chains.get(`evm:${id}`) !== undefined);
    throw new ServiceError(
      'CHAIN_NOT_CONFIGURED',
      400,
      `EVM chain ${chainId} is not configured on this service; ${
        configured.length > 0
          ? `yield chains configured: ${configured.join(', ')}`
          : 'no yield chain is configured (the chains file has no evm entry for 1, 8453 or 11155111)'
      }`,
      {
        details: {
          field,
          availableChains: configured.map((id) => ({ type: 'EVM', chainId: String(id) })),
        },
      },
    );
  }

  /** The operation as answered: its row, and each step's record. */
  function operationView(row: YieldOperationRow): YieldOperationView {
    const transactions = row.steps.map((step) => {
      const record = store.transactions.getAny(step.transactionId);
      const failed = record?.status === 'failed' && record.failureCode;
      return {
        type: step.kind,
        transactionId: step.transactionId,
        status: record?.status ?? 'pending',
        hash: record?.hash ?? null,
        ...(failed ? { error: { code: record.failureCode! } } : {}),
      };
    });
    return {
      id: row.id,
      walletId: row.walletId,
      chainId: row.chainId,
      action: row.action,
      amount: row.amount,
      // Submitted once signed bytes are stored (spec): a step whose signing is under way has none yet.
      status: row.status === 'submitted' && transactions.every((t) => t.hash === null) ? 'pending' : row.status,
      transactions,
      error: row.error
        ? {
            code: row.error.code,
            message: row.error.message,
            ...(row.error.reviewId ? { reviewId: row.error.reviewId } : {}),
            ...(row.error.caseId ? { caseId: row.error.caseId } : {}),
          }
        : null,
      createdAt: row.createdAt,
      updatedAt: row.updatedAt,
    };
  }

  function operationOf(principal: Principal, walletId: string, operationId: string): YieldOperationRow {
    const row = store.yieldOps.get(principal.projectId, operationId);
    if (!row || row.walletId !== walletId) {
      throw new ServiceError('YIELD_OPERATION_NOT_FOUND', 404, 'no such yield operation for this wallet', {
        details: { walletId, operationId },
      });
    }
    return row;
  }

  /** The amount in base units and as the operation keeps it (`all` only for a withdrawal). */
  function amountOf(action: YieldAction, amount: string): { base: string; normalized: string } {
    if (amount === 'all') {
      if (action === 'deposit') {
        throw invalidRequest('a deposit takes an amount of USDC; `all` is for withdrawals', { field: 'body.amount' });
      }
      return { base: 'all', normalized: 'all' };
    }
    try {
      const base = parseUsdcAmount(amount, 'amount');
      if (base === 0n) throw new ChainInputError('amount must be positive', 'amount');
      return { base: base.toString(), normalized: formatUsdcAmount(base) };
    } catch (err) {
      if (err instanceof ChainInputError) throw invalidRequest(err.message, { field: 'body.amount' });
      throw err;
    }
  }

  /** The same POST under the key of an operation in `requires_action`: it resumes, unless another one is active. */
  async function resume(row: YieldOperationRow): Promise<YieldOperationView> {
    await host.deliver(row.id, { type: 'RESUME' }, { id: `resume:${randomUUID()}` });
    // A resend of a held step delivers its SIGN at once: answer once the decision is in.
    const view = await host.waitFor(yieldActors, row.id, (v) => !isDeciding(v));
    const after = store.yieldOps.getAny(row.id)!;
    if (after.status === 'requires_action' && view.operationStatus === 'requires_action') {
      const other = store.yieldOps.activeOn(row.walletId, row.chainId, row.id);
      if (other) throw operationInProgressError(row.walletId, row.chainId, other);
    }
    return operationView(after);
  }

  return {
    /**
     * `POST /v1/wallets/{walletId}/yield/deposits` and `/withdrawals`: admits the operation (202), or answers the one its
     * `Idempotency-Key` already names (resuming it from `requires_action`).
     */
    async request(
      principal: Principal,
      walletId: string,
      action: YieldAction,
      body: YieldRequest,
      key: string | undefined,
      initiatorUserId: string | null,
    ): Promise<YieldOperationView> {
      if (key === undefined) {
        throw invalidRequest('a yield operation needs an Idempotency-Key header: it names the operation for good', {
          field: 'headers.idempotency-key',
        });
      }
      const account = yieldWallet(principal, walletId);
      if (!isYieldChainId(body.chainId)) {
        throw invalidRequest(`chainId must be one of: ${YIELD_CHAIN_IDS.join(', ')}`, { field: 'body.chainId' });
      }
      const amount = amountOf(action, body.amount);
      const normalized = { walletId, chainId: body.chainId, action, amount: amount.normalized };
      const fingerprint = fingerprintOf(normalized);
      for (let attempt = 0; ; attempt++) {
        const existing = store.yieldOps.byKey(principal.projectId, key);
        if (existing) {
          if (existing.fingerprint !== fingerprint) {
            const differs =
              existing.walletId !== walletId
                ? 'walletId'
                : existing.chainId !== body.chainId
                  ? 'chainId'
                  : existing.action !== action
                    ? 'action'
                    : 'amount';
            throw new ServiceError(
              'IDEMPOTENCY_CONFLICT',
              409,
              `this Idempotency-Key names another yield operation (its ${differs} differs): use a new key for a new operation`,
              { details: { differs } },
            );
          }
          return existing.status === 'requires_action' ? resume(existing) : operationView(existing);
        }
        const chain = yieldChain(body.chainId, 'body.chainId');
        const off = store.yieldOps.disabled(body.chainId);
        if (off) {
          throw new ServiceError(
            'YIELD_DISABLED',
            409,
            `new yield operations are disabled on chain ${body.chainId} by the operator${off.reason ? `: ${off.reason}` : ''}`,
            { details: { chainId: body.chainId } },
          );
        }
        const id = randomUUID();
        try {
          await host.spawn(yieldActors, id, {
            apiKeyId: principal.keyId,
            wallet: { id: walletId, projectId: principal.projectId, address: account },
            chainId: body.chainId,
            chainKey: chain.key,
            action,
            amount: amount.normalized,
            amountBase: amount.base,
            idempotencyKey: key,
            fingerprint,
            reference: {
              idempotencyKey: key,
              route: action === 'deposit' ? 'createYieldDeposit' : 'createYieldWithdrawal',
              bodyHash: fingerprint,
            },
            initiatorUserId,
          });
        } catch (err) {
          // Another request under the key committed first: answer from its operation.
          if ((err as { code?: unknown }).code === 'IDEMPOTENCY_KEY_IN_USE' && attempt === 0) continue;
          throw err;
        }
        return operationView(store.yieldOps.getAny(id)!);
      }
    },

    /** `GET /v1/wallets/{walletId}/yield/operations/{operationId}`. */
    operation(principal: Principal, walletId: string, operationId: string): YieldOperationView {
      return operationView(operationOf(principal, walletId, operationId));
    },

    /**
     * `POST …/operations/{operationId}/cancel`: ends unsigned work (its prepared step, if any, is cancelled before it is
     * signed: its nonce and hold are released). 409 once a step of it is signed and unresolved, or once it has ended.
     */
    async cancel(principal: Principal, walletId: string, operationId: string): Promise<YieldOperationView> {
      const row = operationOf(principal, walletId, operationId);
      if (row.status === 'cancelled') return operationView(row);
      if (row.status !== 'confirmed' && row.status !== 'failed') {
        await host.deliver(row.id, { type: 'CANCEL' }, { id: `cancel:${randomUUID()}` });
        await host.waitFor(yieldActors, row.id, (v) => !v.settlingCancel);
      }
      const after = store.yieldOps.getAny(row.id)!;
      if (after.status === 'cancelled') return operationView(after);
      throw new ServiceError(
        'YIELD_OPERATION_NOT_CANCELLABLE',
        409,
        after.status === 'confirmed' || after.status === 'failed'
          ? `the operation has ended (${after.status}): there is nothing to cancel`
          : 'a transaction of this operation is signed and not resolved yet: only unsigned work can be cancelled',
        { details: { operationId: row.id, status: after.status } },
      );
    },

    /** The operator's incident switch of each yield chain. */
    switches(): Array<{ chainId: number; enabled: boolean; reason: string | null; updatedAt: string | null }> {
      const set = new Map(store.yieldOps.switches().map((s) => [s.chainId, s]));
      return YIELD_CHAIN_IDS.map((chainId) => {
        const s = set.get(chainId);
        return { chainId, enabled: !s?.disabled, reason: s?.reason ?? null, updatedAt: s?.updatedAt ?? null };
      });
    },

    async setSwitch(chainId: number, enabled: boolean, reason: string | null) {
      if (!isYieldChainId(chainId)) {
        throw invalidRequest(`chainId must be one of: ${YIELD_CHAIN_IDS.join(', ')}`, { field: 'params.chainId' });
      }
      const at = new Date().toISOString();
      await store.writer.write(() => store.yieldOps.setDisabled(chainId, !enabled, reason, at));
      return { chainId, enabled, reason, updatedAt: at };
    },

    /** `GET /v1/wallets/{walletId}/yield/position?chainId=`. */
    async position(principal: Principal, walletId: string, chainId: number): Promise<YieldPositionView> {
      const account = yieldWallet(principal, walletId);
      if (!isYieldChainId(chainId)) {
        // The route's schema admits only the three; another caller is a defect.
        throw new ServiceError('INVALID_REQUEST', 400, `chainId must be one of: ${YIELD_CHAIN_IDS.join(', ')}`, {
          details: { field: CHAIN_FIELD },
        });
      }
      const chain = yieldChain(chainId);
      if (!chain.readYieldPosition) {
        throw new InternalError('YIELD_READER_MISSING', `the client of EVM chain ${chainId} cannot read positions`);
      }
      let snapshot: Awaited<ReturnType<NonNullable<typeof chain.readYieldPosition>>>;
      try {
        snapshot = await chain.readYieldPosition(markets.get(chainId)!, account);
      } catch (err) {
        if (err instanceof ChainRpcError && err.transient) {
          throw new ServiceError('RPC_UNAVAILABLE', 503, `the chain's node did not answer: ${err.message}`, {
            transient: true,
          });
        }
        throw err;
      }
      if (snapshot.blockTimestamp > MAX_TIMESTAMP_SECONDS) {
        throw new ServiceError(
          'RPC_UNAVAILABLE',
          503,
          "the chain's node did not answer: it gave a block timestamp no block has",
          { transient: true },
        );
      }
      const available = estimateWithdrawable(snapshot);
      return {
        suppliedBalance: formatUsdcAmount(snapshot.suppliedBalance),
        withdrawal: { availableAmount: available === null ? null : formatUsdcAmount(available) },
        blockNumber: snapshot.blockNumber.toString(),
        blockTimestamp: new Date(Number(snapshot.blockTimestamp) * 1000).toISOString(),
      };
    },
  };
}

export type YieldService = ReturnType<typeof createYieldService>;

/** Whether an operation is delivering a step's SIGN (a resend after a hold answers once it is decided). */
function isDeciding(v: YieldView): boolean {
  const state = typeof v.value === 'string' ? v.value : Object.keys(v.value)[0];
  return v.status === 'active' && (state === 'signingStep' || state === 'preparing');
}
