/**
 * A small LRU cache, on the enclave's main thread, of what signing reads from keys.db per request: the scheme,
 * the public key and the sealed shares, packed (envelope.ts `packSealed`). Sealed data only, never plaintext.
 *
 * Rows change when a migrated user share is added and when a master-key rotation re-wraps them: the caller
 * invalidates those wallets after the commit (key-rotation.ts does it page by page). A cached row wrapped by the
 * old key still opens meanwhile: the workers hold every key this process was given until it restarts.
 */
import { packSealed } from './envelope.ts';
import type { StoredKey } from './key-store.ts';
import type { Scheme } from './protocol.ts';

export const DEFAULT_KEY_CACHE_SIZE = 10_000;

/** A wallet's key as signing needs it. */
export interface SigningKey {
  scheme: Scheme;
  publicKey: string;
  /** packSealed([service, user]), or packSealed([service]) while the user share is missing (pregen). */
  shares: Uint8Array;
  hasUserShare: boolean;
}

function toSigningKey(key: StoredKey): SigningKey {
  if (!key.service) throw new Error(`wallet ${key.walletId} has no service share in the key store`);
  return {
    scheme: key.scheme,
    publicKey: key.publicKey,
    shares: packSealed(key.user ? [key.service, key.user] : [key.service]),
    hasUserShare: key.user !== undefined,
  };
}

/** Creates the cache over `load` (the store's read of one wallet), holding at most `capacity` wallets. */
export function createKeyCache(options: { load: (walletId: string) => StoredKey | undefined; capacity?: number }) {
  const capacity = Math.max(0, options.capacity ?? DEFAULT_KEY_CACHE_SIZE);
  /** Map order is insertion order: the first entry is the least recently used. */
  const entries = new Map<string, SigningKey>();

  return {
    /** The wallet's signing key (from the cache, else the store), or undefined when it has no key. */
    get(walletId: string): SigningKey | undefined {
      const cached = entries.get(walletId);
      if (cached) {
        entries.delete(walletId);
        entries.set(walletId, cached);
        return cached;
      }
      const stored = options.load(walletId);
      if (!stored) return undefined;
      const key = toSigningKey(stored);
      if (capacity > 0) {
        if (entries.size >= capacity) entries.delete(entries.keys().next().value!);
        entries.set(walletId, key);
      }
      return key;
    },
    /** Forgets a wallet: its next read goes to the store. */
    invalidate(walletId: string): void {
      entries.delete(walletId);
    },
    get size(): number {
      return entries.size;
    },
  };
}

export type KeyCache = ReturnType<typeof createKeyCache>;
