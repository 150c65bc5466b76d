import type { SnapshotFrom } from 'xstate';
import type { Store } from '../store/index.ts';
import type { MachineDefinition } from './host.ts';
import { type KeyMaterial, WALLET_MACHINE_VERSION, type WalletInput, walletMachine } from './wallet.machine.ts';
import { fromXStatePersistedSnapshot } from './xstate-v1-snapshot.ts';

type WalletSnapshot = SnapshotFrom<typeof walletMachine>;

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
): MachineDefinition<typeof walletMachine> {
  const now = deps.now ?? Date.now;
  return {
    name: 'wallet',
    version: WALLET_MACHINE_VERSION,
    machine: walletMachine,
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
        const { address, publicKey, projectId, userIdentifier, type, createdAt } = snap.context;
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
            userId: userIdentifier,
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
