/**
 * Share migration (spec "Share migration"): the user share of an unclaimed pre-generated wallet, encrypted to
 * the enclave's P-256 key, is handed to the enclave, which alone decrypts it, checks that it completes the
 * wallet's key and stores it sealed. This process only relays the ciphertext and records the outcome.
 */

import { ServiceError, walletNotFound } from '../../chains/domain/errors.ts';
import type { EnclaveClient } from '../../enclave/client.ts';
import { MAX_MIGRATION_PAYLOAD_BYTES } from '../../enclave/public.ts';
import type { Store } from '../../store/index.ts';
import type { WalletRow } from '../../store/wallets-repo.ts';
import { toWalletView, type WalletView } from './wallets.ts';

const alreadyMigrated = (walletId: string) =>
  new ServiceError('SHARE_ALREADY_MIGRATED', 409, "the wallet's user share is already in the service", {
    details: { walletId },
  });

/** Enclave answers and what the partner sees for them. */
const ENCLAVE_ERRORS: Record<string, (walletId: string, message: string) => ServiceError> = {
  INVALID_PAYLOAD: (_, message) => new ServiceError('INVALID_PAYLOAD', 400, `encryptedPayload: ${message}`),
  WRONG_WALLET: (walletId) =>
    new ServiceError('PAYLOAD_WALLET_MISMATCH', 400, `encryptedPayload holds no share for wallet ${walletId}`, {
      details: { walletId },
    }),
  PAYLOAD_TOO_LARGE: () =>
    new ServiceError('PAYLOAD_TOO_LARGE', 413, `encryptedPayload is over ${MAX_MIGRATION_PAYLOAD_BYTES} bytes`),
  NO_KEY: (walletId) =>
    new ServiceError('WALLET_NOT_READY', 400, 'key generation of this wallet is not complete', {
      details: { walletId },
    }),
  BAD_REQUEST: (_, message) => new ServiceError('INVALID_PAYLOAD', 400, `encryptedPayload: ${message}`),
};

export function createShareMigrationService(deps: {
  store: Pick<Store, 'wallets' | 'writer'>;
  enclave: Pick<EnclaveClient, 'migrateShare' | 'getEciesPublicKey'>;
  now?: () => number;
}) {
  const { store, enclave } = deps;
  const now = deps.now ?? Date.now;

  function markMigrated(wallet: WalletRow): Promise<WalletRow | undefined> {
    const at = new Date(now()).toISOString();
    return store.writer.write(() => store.wallets.markShareMigrated(wallet.id, at));
  }

  return {
    /** The enclave's ECIES public key, as the spec's enclave public key object. */
    async publicKey(): Promise<{ publicKey: string; keyFingerprint: string; generatedAt: string }> {
      const key = await enclave.getEciesPublicKey();
      return { publicKey: key.publicKeyPem, keyFingerprint: key.keyFingerprint, generatedAt: key.generatedAt };
    },

    /** Migrates the user share; answers the updated wallet. A failure changes nothing. */
    async migrate(projectId: string, walletId: string, encryptedPayload: string): Promise<WalletView> {
      const wallet = store.wallets.get(projectId, walletId);
      if (!wallet) throw walletNotFound();
      if (wallet.claimedAt) {
        throw new ServiceError('WALLET_CLAIMED', 403, 'the wallet has been claimed by its user: migration is refused', {
          details: { walletId },
        });
      }
      if (wallet.status !== 'ready') {
        throw new ServiceError('WALLET_NOT_READY', 400, 'key generation of this wallet is not complete', {
          details: { walletId },
        });
      }
      if (wallet.custody !== 'pregen' || wallet.shareMigratedAt) throw alreadyMigrated(walletId);
      if (Buffer.byteLength(encryptedPayload, 'utf8') > MAX_MIGRATION_PAYLOAD_BYTES) {
        throw ENCLAVE_ERRORS.PAYLOAD_TOO_LARGE!(walletId, '');
      }
      try {
        await enclave.migrateShare({ walletId, scheme: wallet.scheme, encryptedPayload });
      } catch (err) {
        const { code, message } = err as { code?: unknown; message?: unknown };
        if (code === 'ALREADY_MIGRATED') {
          // The enclave holds the share (a concurrent migration won, or an earlier answer was lost): record it.
          await markMigrated(wallet);
          throw alreadyMigrated(walletId);
        }
        const mapped = typeof code === 'string' ? ENCLAVE_ERRORS[code] : undefined;
        if (mapped) throw mapped(walletId, String(message));
        throw err;
      }
      const updated = (await markMigrated(wallet)) ?? store.wallets.get(projectId, walletId);
      return toWalletView(updated ?? wallet);
    },
  };
}

export type ShareMigrationService = ReturnType<typeof createShareMigrationService>;
