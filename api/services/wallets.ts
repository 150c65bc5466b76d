import { randomUUID } from 'node:crypto';
import { ActorFaultedError } from '../../actors/host/errors.ts';
import type { ActorHost } from '../../actors/host/host.ts';
import type { UserShareHandoff } from '../../actors/wallet/user-share-handoff.ts';
import type { WalletCreation, WalletDefinition } from '../../actors/wallet/wallet-definition.ts';
import { isValidCosmosPrefix } from '../../chains/cosmos/validate-prefix.ts';
import { invalidRequest, ServiceError, walletNotFound } from '../../chains/domain/errors.ts';
import {
  type Custody,
  defaultScheme,
  isSchemeSupported,
  type Scheme,
  type UserIdentifierType,
  type WalletType,
} from '../../chains/domain/wallets.ts';
import { isUniqueViolation } from '../../store/errors.ts';
import type { Store } from '../../store/index.ts';
import type { WalletRow } from '../../store/wallets-repo.ts';
import { decodeCursor, encodeCursor } from '../cursor.ts';

export interface CreateWalletRequest {
  type: WalletType;
  userIdentifier: string;
  userIdentifierType: UserIdentifierType;
  cosmosPrefix?: string;
  scheme?: Scheme;
}

export interface WalletView {
  id: string;
  type: WalletType;
  scheme: Scheme;
  status: WalletRow['status'];
  address: string | null;
  publicKey: string | null;
  createdAt: string;
  userIdentifier: string;
  userIdentifierType: UserIdentifierType;
}

export interface ListWalletsRequest {
  userIdentifier?: string;
  userIdentifierType?: UserIdentifierType;
  type?: WalletType;
  status?: WalletRow['status'];
  address?: string;
  cursor?: string;
  limit?: string;
}

export interface ClaimedWallet extends WalletView {
  projectId: string;
  claimedAt: string;
  userId: string;
}

const DEFAULT_PAGE = 20;

export function toWalletView(r: WalletRow): WalletView {
  return {
    id: r.id,
    type: r.type,
    scheme: r.scheme,
    status: r.status,
    address: r.address,
    publicKey: r.publicKey,
    createdAt: r.createdAt,
    userIdentifier: r.userIdentifier,
    userIdentifierType: r.userIdentifierType,
  };
}

const alreadyExists = (walletId: string) =>
  new ServiceError(
    'WALLET_ALREADY_EXISTS',
    409,
    'a wallet with this type, scheme, userIdentifier and userIdentifierType already exists',
    { details: { walletId } },
  );

/** Wallet list cursors carry the last row's sequence number. */
const walletCursor = (seq: number) => encodeCursor('w', seq);
const walletCursorSeq = (cursor: string) => decodeCursor('w', cursor);

/** Wallet use cases behind the `/v1/wallets` routes. Every read and write is scoped to one project. */
export function createWalletService(deps: {
  store: Pick<Store, 'wallets' | 'writer' | 'outbox'>;
  host: Pick<ActorHost, 'spawn' | 'waitFor'>;
  /** The wallet machine's definition, as the host runs it. */
  walletActors: WalletDefinition;
  userShares: Pick<UserShareHandoff, 'take'>;
  now?: () => number;
}) {
  const { store, host, userShares, walletActors } = deps;
  const now = deps.now ?? Date.now;

  async function create(
    projectId: string,
    req: CreateWalletRequest,
    custody: Custody,
    apiKeyId?: string,
  ): Promise<WalletView> {
    const scheme = req.scheme ?? defaultScheme(req.type);
    if (!isSchemeSupported(req.type, scheme)) {
      throw invalidRequest(
        `scheme ${scheme} is not supported for ${req.type} wallets (use ${defaultScheme(req.type)})`,
        {
          field: 'body.scheme',
        },
      );
    }
    let cosmosPrefix: string | null = null;
    if (req.type === 'COSMOS') {
      cosmosPrefix = req.cosmosPrefix ?? 'cosmos';
      if (!isValidCosmosPrefix(cosmosPrefix)) {
        throw invalidRequest(
          'cosmosPrefix must be 1-20 lowercase letters or digits, starting with a letter (e.g. cosmos, osmo)',
          { field: 'body.cosmosPrefix' },
        );
      }
    } else if (req.cosmosPrefix !== undefined) {
      throw invalidRequest(`cosmosPrefix applies only to COSMOS wallets, not ${req.type}`, {
        field: 'body.cosmosPrefix',
      });
    }
    const identity = {
      projectId,
      userIdentifierType: req.userIdentifierType,
      userIdentifier: req.userIdentifier,
      type: req.type,
      scheme,
    };
    const existing = store.wallets.findIdByIdentity(identity);
    if (existing) throw alreadyExists(existing);

    const walletId = randomUUID();
    const createdAt = new Date(now()).toISOString();
    try {
      await host.spawn(walletActors, walletId, {
        walletId,
        projectId,
        type: req.type,
        scheme,
        cosmosPrefix,
        userIdentifier: req.userIdentifier,
        userIdentifierType: req.userIdentifierType,
        createdAt,
        custody,
        ...(apiKeyId ? { apiKeyId } : {}),
      });
    } catch (err) {
      if (isUniqueViolation(err)) {
        const winner = store.wallets.findIdByIdentity(identity);
        if (winner) throw alreadyExists(winner);
      }
      throw err;
    }
    let final: WalletCreation;
    try {
      final = await host.waitFor(walletActors, walletId, (s) => s.outcome !== 'creating');
    } catch (err) {
      if (err instanceof ActorFaultedError) {
        throw new ServiceError(
          'KEY_GENERATION_FAILED',
          500,
          'key generation failed and the wallet is held for the operator; it was not handed out',
          { details: { walletId } },
        );
      }
      throw err;
    }
    const { address, publicKey, error } = final.context;
    if (final.outcome !== 'ready' || !address || !publicKey) {
      const code = error?.code ?? 'KEY_GENERATION_FAILED';
      const unavailable = code === 'ENCLAVE_UNAVAILABLE' || code === 'ENCLAVE_TIMEOUT';
      throw new ServiceError(
        unavailable ? code : 'KEY_GENERATION_FAILED',
        unavailable ? 503 : 500,
        unavailable
          ? 'the key enclave is unavailable; no wallet was created, retry shortly'
          : 'key generation failed; no wallet was created',
      );
    }
    return {
      id: walletId,
      type: req.type,
      scheme,
      status: 'ready',
      address,
      publicKey,
      createdAt,
      userIdentifier: req.userIdentifier,
      userIdentifierType: req.userIdentifierType,
    };
  }

  return {
    /** Creates an API-key-managed wallet: both shares stay in the enclave. */
    /** `apiKeyId`: the key that asked; only its webhook endpoint hears `wallet.created`. */
    create(projectId: string, req: CreateWalletRequest, apiKeyId?: string): Promise<WalletView> {
      return create(projectId, req, 'managed', apiKeyId);
    },

    /**
     * Operator route: a pre-generated wallet. The enclave keeps only the service share; the user share string
     * is returned here, once, and stored nowhere in this process.
     */
    async createPregenerated(
      projectId: string,
      req: CreateWalletRequest,
    ): Promise<{ wallet: WalletView; userShare: string }> {
      const wallet = await create(projectId, req, 'pregen');
      const userShare = userShares.take(wallet.id);
      if (!userShare) throw new Error(`pre-generated wallet ${wallet.id} became ready without its user share`);
      return { wallet, userShare };
    },

    /**
     * Operator route: a user claimed the wallet. From now on REST signing and migration refuse it, and
     * `wallet.pregen_claimed` is queued in the same transaction.
     */
    async claim(walletId: string, userId?: string): Promise<ClaimedWallet> {
      const row = store.wallets.getAny(walletId);
      if (!row) throw walletNotFound();
      if (row.status !== 'ready' || !row.address) {
        throw new ServiceError('WALLET_NOT_READY', 400, 'the wallet is still being created; retry shortly', {
          details: { walletId },
        });
      }
      const claimedAt = new Date(now()).toISOString();
      const claimedByUserId = userId ?? row.userIdentifier;
      const claimed = await store.writer.write(() => {
        const updated = store.wallets.claim(walletId, { claimedAt, claimedByUserId });
        if (!updated) return undefined;
        store.outbox.append({
          projectId: updated.projectId,
          type: 'wallet.pregen_claimed',
          createdAt: claimedAt,
          data: {
            // The operator's user id, else the wallet's: never the userIdentifier (an e-mail or phone, maybe).
            userId: userId ?? walletId,
            walletId,
            walletAddress: updated.address,
            walletType: updated.type,
            claimedAt,
          },
        });
        return updated;
      });
      if (!claimed) {
        throw new ServiceError('WALLET_ALREADY_CLAIMED', 409, 'the wallet was already claimed', {
          details: { walletId },
        });
      }
      return { ...toWalletView(claimed), projectId: claimed.projectId, claimedAt, userId: claimedByUserId };
    },

    get(projectId: string, walletId: string): WalletView {
      const row = store.wallets.get(projectId, walletId);
      if (!row) throw walletNotFound();
      return toWalletView(row);
    },

    list(projectId: string, q: ListWalletsRequest) {
      const limit = q.limit ? Number(q.limit) : DEFAULT_PAGE;
      const rows = store.wallets.list(projectId, {
        userIdentifier: q.userIdentifier,
        userIdentifierType: q.userIdentifierType,
        type: q.type,
        status: q.status,
        address: q.address,
        beforeSeq: q.cursor ? walletCursorSeq(q.cursor) : undefined,
        limit: limit + 1,
      });
      const hasMore = rows.length > limit;
      const page = hasMore ? rows.slice(0, limit) : rows;
      const last = page[page.length - 1];
      return {
        data: page.map((r) => ({
          id: r.id,
          type: r.type,
          scheme: r.scheme,
          status: r.status,
          address: r.address,
          createdAt: r.createdAt,
        })),
        pagination: { cursor: hasMore && last ? walletCursor(last.seq) : null, hasMore, limit },
      };
    },

    async update(
      projectId: string,
      walletId: string,
      patch: { userIdentifier?: string; userIdentifierType?: UserIdentifierType },
    ): Promise<WalletView> {
      const row = store.wallets.get(projectId, walletId);
      if (!row) throw walletNotFound();
      if (row.claimedAt) {
        throw new ServiceError(
          'WALLET_CLAIMED',
          403,
          'the wallet has been claimed by its user and can no longer be changed',
        );
      }
      try {
        const updated = await store.writer.write(() =>
          store.wallets.updateIdentity(projectId, walletId, { ...patch, updatedAt: new Date(now()).toISOString() }),
        );
        if (!updated) throw walletNotFound();
        return toWalletView(updated);
      } catch (err) {
        if (isUniqueViolation(err)) {
          const other = store.wallets.findIdByIdentity({
            projectId,
            type: row.type,
            scheme: row.scheme,
            userIdentifier: patch.userIdentifier ?? row.userIdentifier,
            userIdentifierType: patch.userIdentifierType ?? row.userIdentifierType,
          });
          if (other) throw alreadyExists(other);
        }
        throw err;
      }
    },
  };
}

export type WalletService = ReturnType<typeof createWalletService>;
