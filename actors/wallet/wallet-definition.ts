import type { SnapshotFrom } from 'xstate';
import type { UserIdentifierType } from '../../chains/domain/wallets.ts';
import type { Store } from '../../store/index.ts';
import type { ActorView, MachineDefinition } from '../host/types.ts';
import {
  type KeyMaterial,
  WALLET_MACHINE_VERSION,
  type WalletContext,
  type WalletInput,
  walletMachine,
} from './wallet.machine.ts';
import { fromXStatePersistedSnapshot } from './xstate-v1-snapshot.ts';

type WalletSnapshot = SnapshotFrom<typeof walletMachine>;

/** What creating a wallet is given: the machine's input and the identifier's kind, which the row keeps. */
export interface WalletAdmission extends WalletInput {
  userIdentifierType: UserIdentifierType;
}

/** A wallet's creation as its caller sees it: its state, with the key material once `ready`. */
export interface WalletCreation extends ActorView<WalletContext> {
  /** `creating` while the enclave makes the key; `ready` with the key; `aborted` when it could not. */
  outcome: 'creating' | 'ready' | 'aborted';
}

export type WalletDefinition = MachineDefinition<typeof walletMachine, WalletAdmission, WalletCreation>;

/**
 * The wallet machine as the host runs it: key generation is an at-least-once effect (the enclave's generateKey
 * is idempotent per wallet id), and each snapshot is written with the wallet row (and the `wallet.created`
 * outbox event) in the same transaction.
 */
export function createWalletDefinition(
  deps: Pick<Store, 'wallets' | 'outbox'> & {
    generateKey: (input: WalletInput) => Promise<KeyMaterial>;
    now?: () => number;
  },
): WalletDefinition {
  const now = deps.now ?? Date.now;
  return {
    name: 'wallet',
    version: WALLET_MACHINE_VERSION,
    machine: walletMachine,
    create(walletId, { userIdentifierType, ...input }) {
      // A duplicate identity is a unique violation here, which refuses the spawn: nothing is stored or started.
      deps.wallets.insert({
        id: walletId,
        projectId: input.projectId,
        type: input.type,
        scheme: input.scheme,
        status: 'creating',
        custody: input.custody,
        cosmosPrefix: input.cosmosPrefix,
        userIdentifier: input.userIdentifier,
        userIdentifierType,
        createdAt: input.createdAt,
        updatedAt: input.createdAt,
        seq: deps.wallets.nextSeq(),
      });
      return input;
    },
    view: (actor) => ({
      ...actor,
      outcome: actor.value === 'ready' ? 'ready' : actor.value === 'aborted' ? 'aborted' : 'creating',
    }),
    effects: {
      generateKey: { run: (input: WalletInput) => deps.generateKey(input), delivery: 'at-least-once' },
    },
    migrations: [
      {
        // v1 rows are XState's persisted snapshots; `custody` was absent for managed wallets, and a `creating`
        // row's key generation is the invoked child it had in flight.
        from: 1,
        up(stored) {
          const s = fromXStatePersistedSnapshot(stored);
          const custody = s.context['custody'] === 'pregen' ? 'pregen' : 'managed';
          return {
            value: s.value,
            context: { ...s.context, custody },
            effects: s.effects.map((e) => ({
              ...e,
              input: { ...(e.input as Record<string, unknown>), custody },
            })),
          };
        },
      },
    ],
    persist(walletId: string, snap: WalletSnapshot) {
      const at = new Date(now()).toISOString();
      if (snap.matches('ready')) {
        const { address, publicKey, projectId, type, createdAt } = snap.context;
        if (!address || !publicKey) throw new Error(`wallet ${walletId} reached ready without key material`);
        if (!deps.wallets.markReady(walletId, { address, publicKey, updatedAt: at })) {
          throw new Error(`wallet ${walletId} has no row to make ready`);
        }
        deps.outbox.append({
          projectId,
          apiKeyId: snap.context.apiKeyId ?? null,
          type: 'wallet.created',
          createdAt: at,
          data: {
            // The wallet's id: the userIdentifier may be an e-mail or a phone number (api/schemas/events.ts).
            userId: walletId,
            walletId,
            walletAddress: address,
            walletType: type,
            walletCreatedAt: createdAt,
          },
        });
      } else if (snap.matches('aborted')) {
        deps.wallets.delete(walletId);
      }
    },
    abandon(walletId) {
      // A wallet abandoned while being created was never handed out: it goes, as an aborted one does.
      const row = deps.wallets.getAny(walletId);
      if (row && row.status === 'creating') deps.wallets.delete(walletId);
    },
  };
}
