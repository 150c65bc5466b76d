import { assign, fromPromise, setup } from 'xstate';
import type { Custody, Scheme, WalletType } from '../../chains/domain/wallets.ts';

export interface WalletInput {
  walletId: string;
  projectId: string;
  type: WalletType;
  scheme: Scheme;
  cosmosPrefix: string | null;
  userIdentifier: string;
  createdAt: string;
  /** `pregen`: a pre-generated wallet whose user share is handed out once and never stored here. */
  custody: Custody;
  /** The API key that asked for the wallet (its endpoint hears `wallet.created`); absent: every key of the project. */
  apiKeyId?: string;
}

export interface KeyMaterial {
  /** The public key as the API shows it. */
  publicKey: string;
  address: string;
}

export interface WalletContext extends WalletInput {
  publicKey?: string;
  address?: string;
  /** Why creation was abandoned: `{code, message}` only, never a cause chain. */
  error?: { code: string; message: string };
}

/**
 * Bumped whenever stored states of the previous version need a migration (wallet-definition.ts holds them).
 * v1: XState's own persisted snapshot, `custody` absent for managed wallets. v2: the host's `{value, context}`,
 * `custody` always present.
 */
export const WALLET_MACHINE_VERSION = 2;

/**
 * A wallet's key generation. `creating` asks the enclave for a key (an at-least-once effect: the enclave's
 * generateKey is idempotent per wallet id, so a restarted service simply asks again); `ready` is final once
 * the address is stored; `aborted` is final when the enclave could not make the key while the partner waited
 * (the row is removed, nothing was handed out).
 */
export const walletMachine = setup({
  types: {} as { context: WalletContext; input: WalletInput },
  actors: {
    /** Named for the host, which runs the definition's `generateKey` effect (wallet-definition.ts) instead. */
    generateKey: fromPromise<KeyMaterial, WalletInput>(async () => {
      throw new Error('generateKey runs as an effect of the actor host');
    }),
  },
}).createMachine({
  id: 'wallet',
  context: ({ input }) => ({ ...input }),
  initial: 'creating',
  states: {
    creating: {
      invoke: {
        src: 'generateKey',
        input: ({ context }) => ({
          walletId: context.walletId,
          projectId: context.projectId,
          type: context.type,
          scheme: context.scheme,
          cosmosPrefix: context.cosmosPrefix,
          userIdentifier: context.userIdentifier,
          createdAt: context.createdAt,
          custody: context.custody,
        }),
        onDone: {
          target: 'ready',
          actions: assign({
            publicKey: ({ event }) => event.output.publicKey,
            address: ({ event }) => event.output.address,
          }),
        },
        onError: {
          target: 'aborted',
          actions: assign({
            error: ({ event }) => {
              const e = event.error as { code?: unknown; message?: unknown };
              return {
                code: typeof e?.code === 'string' ? e.code : 'KEY_GENERATION_FAILED',
                message: typeof e?.message === 'string' ? e.message : 'key generation failed',
              };
            },
          }),
        },
      },
    },
    ready: { type: 'final' },
    aborted: { type: 'final' },
  },
});
