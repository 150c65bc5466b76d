import { assign, fromPromise, setup } from 'xstate';

export type WalletType = 'EVM' | 'COSMOS' | 'SOLANA' | 'STELLAR' | 'SUI';
export type WalletScheme = 'DKLS' | 'ED25519';

export interface WalletInput {
  walletId: string;
  projectId: string;
  type: WalletType;
  scheme: WalletScheme;
  cosmosPrefix: string | null;
  userIdentifier: string;
  createdAt: string;
  /**
   * `pregen`: a pre-generated wallet whose user share is handed out once and never stored here. Absent in
   * snapshots written before pre-generation existed, which were all `managed`.
   */
  custody?: 'managed' | 'pregen';
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

/** Bumped whenever a change would make stored snapshots of an older version unreadable. */
export const WALLET_MACHINE_VERSION = 1;

/**
 * A wallet's key generation. `creating` asks the enclave for a key (idempotent per wallet id, so a
 * restored actor simply asks again); `ready` is final once the address is stored; `aborted` is final
 * when the enclave could not make the key while the partner waited (the row is removed, nothing was
 * handed out).
 */
export const walletMachine = setup({
  types: {} as { context: WalletContext; input: WalletInput },
  actors: {
    /** Provided by the wiring: asks the enclave for the key and derives the address. */
    generateKey: fromPromise<KeyMaterial, WalletInput>(async () => {
      throw new Error('generateKey is provided by the actor host wiring');
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
          ...(context.custody ? { custody: context.custody } : {}),
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
