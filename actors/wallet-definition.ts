import { fromPromise, type SnapshotFrom } from 'xstate';
import type { Store } from '../store/index.ts';
import type { MachineDefinition } from './host.ts';
import { type KeyMaterial, WALLET_MACHINE_VERSION, type WalletInput, walletMachine } from './wallet.machine.ts';

type WalletSnapshot = SnapshotFrom<typeof walletMachine>;

/**
 * The wallet machine as the host runs it: key generation wired to `generateKey`, and each snapshot
 * written with the wallet row (and the `wallet.created` outbox event) in the same transaction.
 */
export function createWalletDefinition(
  deps: Pick<Store, 'wallets' | 'outbox'> & {
    generateKey: (input: WalletInput) => Promise<KeyMaterial>;
    now?: () => number;
  },
): MachineDefinition<typeof walletMachine> {
  const now = deps.now ?? Date.now;
  const machine = walletMachine.provide({
    actors: { generateKey: fromPromise(({ input }: { input: WalletInput }) => deps.generateKey(input)) },
  });
  return {
    name: 'wallet',
    version: WALLET_MACHINE_VERSION,
    machine,
    persist(walletId: string, snap: WalletSnapshot) {
      const at = new Date(now()).toISOString();
      if (snap.matches('ready')) {
        const { address, publicKey, projectId, userIdentifier, type, createdAt } = snap.context;
        if (!address || !publicKey) throw new Error(`wallet ${walletId} reached ready without key material`);
        deps.wallets.markReady(walletId, { address, publicKey, updatedAt: at });
        deps.outbox.append({
          projectId,
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
  };
}
