/**
 * Faults and the operator: an actor whose steps keep failing is faulted (its pending events stored, out of memory and
 * of the due set, waiting for the operator); an actor whose save failed is dropped and reloaded from its committed
 * state with back-off; the operator's retry and abandon.
 */

import type { StoredActor } from '../../store/actor-store.ts';
import { type Entry, type HostCore, MAX_BACKOFF_MS, type Mail, reasonOf } from './core.ts';
import { ActorFaultedError } from './errors.ts';
import type { ActorView, AnyMachineDefinition, LegacyEffect, StoredState } from './types.ts';

export function createFaults(
  core: HostCore,
  deps: {
    /** Rejects an entry's senders and waiters (step.ts). */
    failAll(e: Entry, err: unknown, mails: Mail[]): void;
    loadOrFault(actorId: string): Promise<unknown>;
    read(actorId: string): ActorView | undefined;
    readRow(def: AnyMachineDefinition, row: StoredActor): StoredState & { effects: LegacyEffect[] };
  },
) {
  /** Reload attempts of actors dropped after a failed save, for their back-off. */
  const reloads = new Map<string, number>();
  const reloadTimers = new Set<unknown>();

  /** The actor keeps failing: its external events are stored, it is marked faulted and leaves memory. */
  async function faultActor(e: Entry, error: unknown): Promise<void> {
    core.remove(e);
    const mails = e.mailbox;
    e.mailbox = [];
    const reason = reasonOf(error);
    const at = core.iso();
    try {
      await core.store.transact(
        () => {
          for (const m of mails) {
            if (m.eventId !== undefined && m.pendingSeq === undefined) {
              core.store.storePending(e.id, m.eventId, JSON.stringify(m.event), at);
            }
          }
          core.store.fault(e.id, reason, at);
        },
        { bounded: false },
      );
    } catch (err) {
      deps.failAll(e, err, mails);
      scheduleReload(e.id);
      return;
    }
    core.log(`actor ${e.id} (${e.def.name}) faulted: ${reason}`);
    const v = core.view(e, 'faulted');
    for (const m of mails) m.resolve?.({ outcome: 'stored', actor: v });
    deps.failAll(e, new ActorFaultedError(e.id, reason), []);
  }

  /** A save failed: what is in memory may be ahead of the database. Drop it and reload the committed state later. */
  function dropAfterFailedSave(e: Entry, err: unknown, batch: Mail[]): void {
    core.remove(e);
    core.log(`actor ${e.id}: saving a step failed; reloading it from its last committed state`, err);
    const mails = [...batch, ...e.mailbox];
    e.mailbox = [];
    deps.failAll(e, err, mails);
    scheduleReload(e.id);
  }

  function scheduleReload(actorId: string): void {
    if (core.state.stopped) return;
    const attempt = (reloads.get(actorId) ?? 0) + 1;
    reloads.set(actorId, attempt);
    const handle = core.clock.setTimer(
      () => {
        reloadTimers.delete(handle);
        if (core.state.stopped || core.live.has(actorId)) return;
        deps.loadOrFault(actorId).catch((err) => {
          core.log(`actor ${actorId}: reload failed`, err);
          scheduleReload(actorId);
        });
      },
      Math.min(MAX_BACKOFF_MS, core.retryBaseMs * 2 ** (attempt - 1)),
    );
    reloadTimers.add(handle);
  }

  /** The operator's retry of a faulted actor: it runs again from its stored state, stored events first. */
  async function retry(actorId: string): Promise<ActorView | undefined> {
    core.admit();
    const cleared = await core.store.transact(() => core.store.clearFault(actorId, core.iso()));
    if (!cleared) return undefined;
    reloads.delete(actorId);
    await deps.loadOrFault(actorId);
    return deps.read(actorId);
  }

  /** The operator's abandon of a faulted actor: it is marked done and never runs again. */
  async function abandon(actorId: string): Promise<boolean> {
    const row = core.store.get(actorId);
    if (!row?.faultedAt || row.done) return false;
    const def = core.defs.get(row.machine);
    let state: StoredState | undefined;
    try {
      state = def ? deps.readRow(def, row) : undefined;
    } catch {
      state = { value: row.state ?? 'unknown', context: {} };
    }
    return core.store.transact(() => {
      const ok = core.store.abandon(actorId, core.iso());
      if (ok && def?.abandon && state) def.abandon(actorId, { value: state.value, context: state.context });
      return ok;
    });
  }

  return {
    fault: faultActor,
    dropAfterFailedSave,
    /** A step went through: the actor's reload back-off starts over. */
    forgetReloads: (actorId: string) => reloads.delete(actorId),
    retry,
    abandon,
    /** At stop: no reload is pending any more. */
    stop(): void {
      for (const h of reloadTimers) core.clock.clearTimer(h);
      reloadTimers.clear();
    },
  };
}

export type Faults = ReturnType<typeof createFaults>;
