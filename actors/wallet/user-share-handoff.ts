/**
 * Hands the user share of a pre-generated wallet from the wallet actor's key generation to the one admin
 * request waiting for it, in memory only: the share is never written to a snapshot, a row or a log. Whoever
 * takes it removes it.
 *
 * A share nobody takes (the request failed or gave up between the key generation and the wallet becoming ready)
 * is dropped after `ttlMs`: the request takes it within moments of the put, so a share still here past the
 * deadline has no one waiting. The string itself cannot be wiped (strings are immutable); dropping the last
 * reference lets the collector reclaim it.
 */
export const DEFAULT_USER_SHARE_TTL_MS = 30_000;

export function createUserShareHandoff(options: { ttlMs?: number } = {}) {
  const ttlMs = options.ttlMs ?? DEFAULT_USER_SHARE_TTL_MS;
  const shares = new Map<string, { share: string; timer: NodeJS.Timeout }>();

  function drop(walletId: string): void {
    const entry = shares.get(walletId);
    if (!entry) return;
    clearTimeout(entry.timer);
    shares.delete(walletId);
  }

  return {
    /** Holds `userShare` for `walletId` until it is taken or `ttlMs` passes. */
    put(walletId: string, userShare: string): void {
      drop(walletId);
      const timer = setTimeout(() => shares.delete(walletId), ttlMs);
      // A pending deadline never keeps the process alive.
      timer.unref();
      shares.set(walletId, { share: userShare, timer });
    },
    /** The share for `walletId`, once; undefined if it was never put, already taken, or dropped at its deadline. */
    take(walletId: string): string | undefined {
      const share = shares.get(walletId)?.share;
      drop(walletId);
      return share;
    },
    /** Shares held now (none should stay for long). */
    get size(): number {
      return shares.size;
    },
  };
}

export type UserShareHandoff = ReturnType<typeof createUserShareHandoff>;
