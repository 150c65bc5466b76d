/**
 * Hands the user share of a pre-generated wallet from the wallet actor's key generation to the one admin
 * request waiting for it, in memory only: the share is never written to a snapshot, a row or a log. Whoever
 * takes it removes it.
 */
export function createUserShareHandoff() {
  const shares = new Map<string, string>();
  return {
    put(walletId: string, userShare: string): void {
      shares.set(walletId, userShare);
    },
    /** The share for `walletId`, once; undefined if it was never put or already taken. */
    take(walletId: string): string | undefined {
      const share = shares.get(walletId);
      shares.delete(walletId);
      return share;
    },
  };
}

export type UserShareHandoff = ReturnType<typeof createUserShareHandoff>;
