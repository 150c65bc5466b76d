import type { ActorHost } from '../../actors/host/host.ts';
import type { OperatorRelease } from '../../actors/payment/payment.machine.ts';
import { ServiceError, walletNotFound } from '../../chains/domain/errors.ts';
import type { Store } from '../../store/index.ts';

const noHold = (walletId: string, chainKey: string, detail = 'no unresolved payment holds it') =>
  new ServiceError('HOLD_NOT_FOUND', 404, `the wallet has no hold on ${chainKey}: ${detail}`, {
    details: { walletId, chainKey },
  });

const notReleasable = (transactionId: string, why: string) =>
  new ServiceError('HOLD_NOT_RELEASABLE', 409, why, { details: { transactionId } });

/**
 * The operator's release of a wallet and chain's hold (admin API and CLI): the way out for a payment that is healthy
 * but can never resolve on its own (an underpriced transaction never mined, a partner-chosen future nonce, a chain
 * removed from the chains file). The holding payment stops sending and keeps its record status (the release claims
 * no outcome) and stays watched: should its bytes execute, its record says so. Who released it and why are kept in
 * the payment's actor; why, and when, in the record's `monitoring.operatorRelease`.
 */
export function createHoldsAdmin(deps: {
  store: Pick<Store, 'transactions' | 'wallets'>;
  host: Pick<ActorHost, 'read' | 'deliver'>;
  now?: () => number;
}) {
  const { store, host } = deps;
  const now = deps.now ?? Date.now;

  return {
    async release(walletId: string, body: { chainKey: string; reason: string; releasedBy: string }) {
      const { chainKey, reason, releasedBy } = body;
      if (!store.wallets.getAny(walletId)) throw walletNotFound();
      const transactionId = store.transactions.holder(walletId, chainKey);
      if (!transactionId) throw noHold(walletId, chainKey);
      const answer = (release: OperatorRelease) => ({
        walletId,
        chainKey,
        transactionId,
        status: release.status,
        reason: release.reason,
        releasedBy: release.by,
        releasedAt: new Date(release.at).toISOString(),
      });
      const actor = host.read(transactionId);
      if (!actor) {
        // A record without an actor (none is written so today): nothing can watch it, so the release only ends
        // the hold.
        const at = now();
        store.transactions.release(transactionId, new Date(at).toISOString());
        const status = store.transactions.getAny(transactionId)?.status ?? 'pending';
        return answer({ reason, by: releasedBy, at, status });
      }
      if (actor.status === 'faulted') {
        throw notReleasable(
          transactionId,
          'the holding payment is faulted and waits for the operator: retry it (retry-actor), or abandon it (abandon-actor), which releases the hold',
        );
      }
      const delivered = await host.deliver(transactionId, {
        type: 'OPERATOR_RELEASE',
        reason,
        by: releasedBy,
        at: now(),
      });
      if (delivered.outcome === 'final') throw noHold(walletId, chainKey, 'its payment resolved meanwhile');
      if (delivered.outcome === 'stored') {
        throw notReleasable(transactionId, 'the holding payment faulted meanwhile: retry or abandon it');
      }
      const release = (delivered.actor.context as { operatorRelease?: OperatorRelease | null }).operatorRelease;
      if (!release) {
        throw notReleasable(transactionId, 'the holding payment is being signed; retry in a few seconds');
      }
      return answer(release);
    },
  };
}

export type HoldsAdmin = ReturnType<typeof createHoldsAdmin>;
