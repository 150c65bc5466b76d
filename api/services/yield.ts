/**
 * The yield routes' use cases (spec: Yield routes, Yield position). For now the position: a wallet's USDC supplied to
 * the lending market of a chain (Aave v3), read at one block in one RPC round trip through the chain's EVM client.
 *
 * Every yield route is for an EVM wallet, unclaimed, whose key generation is complete (and, pre-generated, whose user
 * share is in the service): the wallet a yield operation could sign with. The chain is one of the spec's three and
 * must have an `evm` entry in the chains file; the chain's `environment` does not apply, since the spec makes the
 * yield chain independent of the API environment.
 */
import type { WalletSigner } from '../../actors/signing/wallet-signer.ts';
import { InternalError, ServiceError, walletNotFound } from '../../chains/domain/errors.ts';
import { isYieldChainId, YIELD_CHAIN_IDS, type YieldChainId } from '../../chains/domain/yield.ts';
import { estimateWithdrawable } from '../../chains/evm/estimate-withdrawable.ts';
import { formatUsdcAmount } from '../../chains/evm/format-usdc-amount.ts';
import type { LendingMarket } from '../../chains/evm/lending-protocol.ts';
import { type LendingMarketOverride, resolveLendingMarket } from '../../chains/evm/resolve-lending-market.ts';
import { ChainRpcError } from '../../chains/payment-chain.ts';
import type { Store } from '../../store/index.ts';
import type { ChainRegistry } from '../chain-registry.ts';
import type { Principal } from '../plugins/auth.ts';

/** The spec's Yield position. Amounts are decimal USDC strings. */
export interface YieldPositionView {
  suppliedBalance: string;
  withdrawal: { availableAmount: string | null };
  blockNumber: string;
  /** ISO 8601. */
  blockTimestamp: string;
}

/** The latest block timestamp a Date can hold (seconds): a node answering more is not answering its chain's. */
const MAX_TIMESTAMP_SECONDS = 8_640_000_000_000n;

/** The query field a yield chain id comes from, for the answers that name it. */
const CHAIN_FIELD = 'querystring.chainId';

export function createYieldService(deps: {
  store: Pick<Store, 'wallets'>;
  /** Claimed, not ready and not-migrated wallets are refused as the signing routes refuse them. */
  signer: Pick<WalletSigner, 'walletThatSigns'>;
  chains: Pick<ChainRegistry, 'get'>;
  /** The chains file's `yield` entries: protocol addresses that replace a chain's defaults. */
  overrides: readonly LendingMarketOverride[];
}) {
  const { store, signer, chains } = deps;
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
  function yieldChain(chainId: YieldChainId) {
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
          field: CHAIN_FIELD,
          availableChains: configured.map((id) => ({ type: 'EVM', chainId: String(id) })),
        },
      },
    );
  }

  return {
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
