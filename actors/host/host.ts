/**
 * The actor host. Each actor's events are applied in order, one step at a time, with XState's pure `transition()`:
 * the new state, the effect intents it produced, its wake time, the rows it describes and its outbox events are
 * written in one transaction, and effects are dispatched only after that commits. This file assembles the parts
 * (core.ts: what they share; step.ts: step and effects; loading.ts: loading and migrations; faults.ts: faults and
 * the operator; scheduler.ts: wake times) and answers the host's callers. See actors/README.md for the contract.
 */
import { randomUUID } from 'node:crypto';
import type { AnyMachineSnapshot } from 'xstate';
import { createHostCore, type Entry, type Intent } from './core.ts';
import { actorNotFound, hostStopped } from './errors.ts';
import { createFaults, type Faults } from './faults.ts';
import { createLoading } from './loading.ts';
import { createScheduler, type Scheduler } from './scheduler.ts';
import { createSteps, type StepOutcome } from './step.ts';
import {
  type ActorView,
  type AdmissionOf,
  type AnyMachineDefinition,
  type DeliverResult,
  type HostOptions,
  SpawnRefused,
  type ViewOf,
} from './types.ts';

export function createActorHost(opts: HostOptions) {
  const core = createHostCore(opts);
  // The parts call each other both ways (a step may fault its actor; a reload loads it; a load pumps it); the
  // arrows below are resolved when first called, after all parts exist.
  let faults: Faults;
  let scheduler: Scheduler;
  const steps = createSteps(core, {
    noteWake: (at) => scheduler.noteWake(at),
    fault: (e, error) => faults.fault(e, error),
    dropAfterFailedSave: (e, err, batch) => faults.dropAfterFailedSave(e, err, batch),
    forgetReloads: (actorId) => faults.forgetReloads(actorId),
  });
  const loading = createLoading(core, { dispatch: steps.dispatch, pump: steps.pump });
  faults = createFaults(core, {
    failAll: steps.failAll,
    loadOrFault: loading.loadOrFault,
    read: loading.read,
    readRow: loading.readRow,
  });
  scheduler = createScheduler(core, { load: loading.load, loadOrFault: loading.loadOrFault, pump: steps.pump });
  let restored = false;
  let restoreMs: number | undefined;

  /** `def` is the definition this host runs under its name (not another object of the same name). */
  function registered(def: AnyMachineDefinition): void {
    if (core.defs.get(def.name) !== def)
      throw new Error(`the machine ${def.name} is not one this host was created with`);
  }

  function viewFor<D extends AnyMachineDefinition>(def: D, v: ActorView): ViewOf<D> {
    return (def.view ? def.view(v) : v) as ViewOf<D>;
  }

  return {
    /**
     * Refuses to run stored actors this code cannot read: a machine it does not know, a version newer than its
     * own, or an older one without a migration path. Call before serving; the message names each.
     */
    checkStoredVersions: loading.checkStoredVersions,

    /**
     * Starts the scheduler and, in the background, recovers actors a previous run left with effects under way or
     * stored events, in pages, below the live watermark. Resolves when that recovery is done (`restored`).
     */
    async start(): Promise<void> {
      core.state.started = true;
      const t0 = performance.now();
      scheduler.start();
      if (!(await loading.recover())) return;
      restoreMs = performance.now() - t0;
      restored = true;
    },

    /** True once `start()` has recovered every actor it had to. */
    get restored(): boolean {
      return restored;
    },
    /** How long the recovery took (ms), once done. */
    get restoreMs(): number | undefined {
      return restoreMs;
    },

    /**
     * Creates an actor: the rows its definition's `create` writes, its initial state and its effect intents are
     * committed in one transaction, then its effects are dispatched. A failing `create` (a duplicate, say) rejects and
     * nothing is stored or started. Answers the definition's view of the initial state.
     */
    async spawn<D extends AnyMachineDefinition>(
      def: D,
      actorId: string,
      admission: AdmissionOf<D>,
    ): Promise<ViewOf<D>> {
      registered(def);
      core.admit();
      if (core.live.has(actorId)) throw new Error(`actor ${actorId} already exists`);
      const e: Entry = {
        id: actorId,
        def,
        snap: undefined as unknown as AnyMachineSnapshot,
        view: undefined as unknown as ActorView,
        step: 0,
        wakeAt: null,
        intents: new Map(),
        running: new Set(),
        mailbox: [],
        busy: true,
        failures: 0,
        waiters: [],
        gone: false,
        needsWrite: false,
        legacy: [],
      };
      let added: Intent[] = [];
      let after: StepOutcome['after'] = [];
      let wakeAt: number | null = null;
      core.live.set(actorId, e);
      let refused: SpawnRefused | undefined;
      try {
        await core.store.transact(() => {
          // The initial state is computed inside the transaction: `create` decides the input from what it reads and
          // writes there (a payment's nonce is allocated with its record).
          let input: unknown;
          try {
            input = def.create ? def.create(actorId, admission) : admission;
          } catch (err) {
            // Refused, keeping what create wrote (a policy decision's log row): committed without the actor.
            if (!(err instanceof SpawnRefused)) throw err;
            refused = err;
            return;
          }
          const [snap, actions] = core.steppers.get(def)!.initial(input);
          e.snap = snap;
          e.intents.clear();
          added = [];
          after = [];
          steps.sortActions(def, actorId, 1, actions, e.intents, added, after);
          wakeAt = snap.status === 'done' ? null : (def.wakeAt?.(snap) ?? null);
          def.persist(actorId, snap, undefined);
          core.store.insert(steps.rowOf(e, snap, wakeAt, core.iso()));
          const at = core.iso();
          for (const it of added) core.store.addEffect({ ...it, actorId, createdAt: at });
          if (snap.status === 'done') core.store.clearWork(actorId);
        });
      } catch (err) {
        core.remove(e);
        steps.failAll(e, err, e.mailbox);
        throw err;
      }
      if (refused) {
        core.remove(e);
        steps.failAll(e, refused.refusal, e.mailbox);
        throw refused.refusal;
      }
      e.busy = false;
      e.step = 1;
      e.wakeAt = wakeAt;
      e.view = core.view(e);
      if (wakeAt !== null) scheduler.noteWake(wakeAt);
      for (const it of added) steps.dispatch(e, it);
      for (const a of after) {
        try {
          a.exec?.(a.info, a.params);
        } catch (err) {
          core.log(`actor ${actorId}: an after-commit action failed`, err);
        }
      }
      if (e.view.status === 'done') core.remove(e);
      else steps.pump(e);
      return viewFor(def, e.view);
    },

    /**
     * Delivers an external event. Resolves once it is applied and committed (`applied`), or found already applied
     * (`duplicate`, by `id`), or when the actor had finished (`final`), or, for a faulted actor, once it is stored
     * to be applied when the operator retries (`stored`). Per actor, events apply in the order delivered; an actor
     * not in memory is loaded. Rejects with ACTOR_NOT_FOUND, SERVICE_BUSY (503) or the save's error.
     */
    deliver(
      actorId: string,
      event: { type: string; [k: string]: unknown },
      o: { id?: string } = {},
    ): Promise<DeliverResult> {
      try {
        if (core.state.stopped || core.state.draining) throw hostStopped();
        let e = core.live.get(actorId);
        if (!e) {
          core.admit();
          const loaded = loading.load(actorId);
          if (loaded === undefined) throw actorNotFound(actorId);
          if (loaded === 'done') {
            return Promise.resolve({ outcome: 'final', actor: loading.read(actorId)! });
          }
          if (loaded === 'faulted') {
            const eventId = o.id ?? randomUUID();
            const at = core.iso();
            return core.store
              .transact(() => core.store.storePending(actorId, eventId, JSON.stringify(event), at))
              .then((stored) => ({ outcome: stored ? 'stored' : 'duplicate', actor: loading.read(actorId)! }) as const);
          }
          e = loaded;
        }
        const entry = e;
        return new Promise<DeliverResult>((resolve, reject) => {
          entry.mailbox.push({ event, eventId: o.id ?? randomUUID(), resolve, reject });
          steps.pump(entry);
        });
      } catch (err) {
        return Promise.reject(err);
      }
    },

    /**
     * Resolves with the definition's view of the first committed state satisfying `predicate`, or of the final one;
     * rejects if the actor faults or a save fails. An actor not in memory is read from the store (and loaded if it
     * must be waited for).
     */
    waitFor<D extends AnyMachineDefinition>(
      def: D,
      actorId: string,
      predicate: (v: ViewOf<D>) => boolean,
    ): Promise<ViewOf<D>> {
      try {
        registered(def);
      } catch (err) {
        return Promise.reject(err);
      }
      const test = (v: ActorView) => predicate(viewFor(def, v));
      const answer = (v: ActorView) => viewFor(def, v);
      let e = core.live.get(actorId);
      if (!e) {
        const stored = loading.read(actorId);
        if (!stored || stored.machine !== def.name) return Promise.reject(actorNotFound(actorId));
        if (stored.status !== 'active' || test(stored)) return Promise.resolve(answer(stored));
        try {
          core.admit();
          const loaded = loading.load(actorId);
          if (!loaded || typeof loaded === 'string') return Promise.resolve(answer(loading.read(actorId)!));
          e = loaded;
        } catch (err) {
          return Promise.reject(err);
        }
      }
      if (e.def !== def) return Promise.reject(actorNotFound(actorId));
      if (test(e.view)) return Promise.resolve(answer(e.view));
      const entry = e;
      return new Promise((resolve, reject) =>
        entry.waiters.push({ predicate: test, resolve: (v) => resolve(answer(v)), reject }),
      );
    },

    /** The actor's committed state (from memory if live, else from the store), or undefined. */
    read: loading.read,

    /** The operator's retry of a faulted actor: it runs again from its stored state, stored events first. */
    retry: faults.retry,

    /** The operator's abandon of a faulted actor: it is marked done and never runs again. */
    abandon: faults.abandon,

    isLive(actorId: string): boolean {
      return core.live.has(actorId);
    },
    liveCount(): number {
      return core.live.size;
    },

    /** Stops the scheduler and every live actor after the steps being written commit; their rows stay. */
    async stop(): Promise<void> {
      core.state.draining = true;
      scheduler.stop();
      faults.stop();
      // At-most-once effects under way (a signature) finish and their outcome is committed, within a bound: what
      // they made reaches its record. Nothing new is dispatched meanwhile; the effects their steps ask for are
      // stored and run at the next start.
      const deadline = performance.now() + (opts.stopDrainMs ?? 10_000);
      const unsure = (e: Entry) =>
        e.busy ||
        e.mailbox.some((m) => m.intentKey !== undefined) ||
        [...e.running].some((key) => {
          const src = e.intents.get(key)?.src;
          return src !== undefined && e.def.effects[src]?.delivery === 'at-most-once';
        });
      while (performance.now() < deadline && [...core.live.values()].some(unsure)) {
        await new Promise((r) => setTimeout(r, 10));
      }
      core.state.stopped = true;
      const busy = [...core.live.values()].filter((e) => e.busy);
      // Steps under way finish (their transaction is queued); wait for them a few turns at most.
      for (let i = 0; i < 50 && busy.some((e) => e.busy); i++) await new Promise((r) => setTimeout(r, 10));
      for (const e of [...core.live.values()]) {
        core.remove(e);
        steps.failAll(e, hostStopped(), e.mailbox);
        e.mailbox = [];
      }
      core.releaseWaiters();
    },
  };
}

export type ActorHost = ReturnType<typeof createActorHost>;
