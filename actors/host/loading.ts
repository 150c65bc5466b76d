/**
 * Loading and migrations: a stored actor is read in its current version's format (older rows migrated in order),
 * loaded into memory with its interrupted effects re-dispatched or reported by their delivery rule and its stored
 * events queued, or faulted when it cannot even be read. Also the start's check of stored versions and its recovery
 * of the actors a previous run left with work under way.
 */
import type { EventObject } from 'xstate';
import type { StoredActor } from '../../store/actor-store.ts';
import { type Entry, type HostCore, type Intent, reasonOf } from './core.ts';
import { ActorVersionError } from './errors.ts';
import type { ActorView, AnyMachineDefinition, LegacyEffect, StoredState } from './types.ts';

/** Actors recovered per page at start. */
const RECOVERY_PAGE = 256;

export function createLoading(
  core: HostCore,
  deps: {
    /** Runs a committed intent (step.ts). */
    dispatch(e: Entry, intent: Intent): void;
    /** Applies what an actor has waiting (step.ts). */
    pump(e: Entry): void;
  },
) {
  /** Parses a stored row into the current version's state, running migrations. */
  function readRow(def: AnyMachineDefinition, row: StoredActor): StoredState & { effects: LegacyEffect[] } {
    if (row.machineVersion > def.version) {
      throw new ActorVersionError(
        `actor ${row.actorId} is stored with ${def.name} v${row.machineVersion}, newer than this code's v${def.version}`,
      );
    }
    let raw: unknown = JSON.parse(row.snapshot);
    let effects: LegacyEffect[] = [];
    for (let v = row.machineVersion; v < def.version; v++) {
      const m = def.migrations?.find((x) => x.from === v);
      if (!m) throw new ActorVersionError(`${def.name} has no migration from v${v}`);
      const up = m.up(raw, { actorId: row.actorId });
      if (up.effects) effects = up.effects;
      raw = { value: up.value, context: up.context };
    }
    const s = raw as StoredState;
    return { value: s.value, context: s.context, effects };
  }

  /**
   * Loads a stored actor into memory: migrates an older row, re-dispatches its at-least-once effects, reports
   * its at-most-once ones as interrupted, queues its stored events. Returns the entry, or the row's reason for
   * not running (`done`, `faulted`), or undefined when there is no such actor.
   */
  function load(actorId: string): Entry | 'done' | 'faulted' | undefined {
    const existing = core.live.get(actorId);
    if (existing) return existing;
    const row = core.store.get(actorId);
    if (!row) return undefined;
    if (row.done) return 'done';
    if (row.faultedAt) return 'faulted';
    const def = core.definition(row.machine);
    const state = readRow(def, row);
    const snap = def.machine.resolveState({ value: state.value, context: state.context });
    const e: Entry = {
      id: actorId,
      def,
      snap,
      view: undefined as unknown as ActorView,
      step: row.step,
      wakeAt: row.wakeAt,
      intents: new Map(),
      running: new Set(),
      mailbox: [],
      busy: false,
      failures: 0,
      waiters: [],
      gone: false,
      needsWrite: row.machineVersion !== def.version,
      // A migration's in-flight effects run again only if running twice is harmless; the others are interrupted.
      legacy: state.effects.filter((l) => def.effects[l.src]?.delivery !== 'at-most-once'),
    };
    e.view = core.view(e);
    const interrupted = (invokeId: string) =>
      ({
        type: `xstate.error.actor.${invokeId}`,
        error: {
          code: 'EFFECT_INTERRUPTED',
          at: core.clock.now(),
          message: 'the service stopped while this effect was under way: whether it took place is unknown',
        },
        actorId: invokeId,
      }) as EventObject;
    for (const l of state.effects) {
      if (def.effects[l.src]?.delivery === 'at-most-once') e.mailbox.push({ event: interrupted(l.invokeId) });
    }
    const redo: Intent[] = [];
    for (const s of row.hasEffects ? core.store.effectsOf(actorId) : []) {
      const intent: Intent = { key: s.key, invokeId: s.invokeId, src: s.src, input: s.input };
      e.intents.set(s.key, intent);
      if (def.effects[s.src]?.delivery === 'at-most-once') {
        e.mailbox.push({ event: interrupted(s.invokeId), intentKey: s.key });
      } else {
        redo.push({ ...intent, redelivered: true });
      }
    }
    for (const p of row.hasPending ? core.store.pendingEventsOf(actorId) : []) {
      e.mailbox.push({ event: JSON.parse(p.event) as EventObject, eventId: p.eventId, pendingSeq: p.seq });
    }
    core.live.set(actorId, e);
    for (const it of redo) deps.dispatch(e, it);
    // The caller queues what it loaded the actor for; an actor with nothing to do leaves with its next step.
    if (e.mailbox.length > 0 || e.needsWrite) deps.pump(e);
    return e;
  }

  /** The actor's committed state (from memory if live, else from the store), or undefined. */
  function read(actorId: string): ActorView | undefined {
    const e = core.live.get(actorId);
    if (e && e.step > 0) return e.view;
    const row = core.store.get(actorId);
    if (!row) return undefined;
    let s: StoredState;
    try {
      const def = core.defs.get(row.machine);
      s = def ? readRow(def, row) : (JSON.parse(row.snapshot) as StoredState);
    } catch {
      // An unreadable row (the reason it faulted, usually): what the columns say, no context.
      s = { value: row.state ?? 'unknown', context: {} };
    }
    return {
      actorId,
      machine: row.machine,
      status: row.faultedAt && !row.done ? 'faulted' : row.done ? 'done' : 'active',
      value: s.value,
      context: s.context,
      step: row.step,
    };
  }

  /**
   * `load`, for the host's own callers (scheduler, recovery, reload): a row that cannot even be loaded (a broken
   * snapshot, a migration that throws) is faulted, so it leaves the due set instead of failing at every turn.
   */
  async function loadOrFault(actorId: string): Promise<Entry | 'done' | 'faulted' | undefined> {
    try {
      return load(actorId);
    } catch (err) {
      const reason = `could not be loaded: ${reasonOf(err)}`;
      core.log(`actor ${actorId} faulted: ${reason}`, err);
      await core.store.transact(() => core.store.fault(actorId, reason, core.iso()), { bounded: false });
      return 'faulted';
    }
  }

  /**
   * Refuses to run stored actors this code cannot read: a machine it does not know, a version newer than its
   * own, or an older one without a migration path. Call before serving; the message names each.
   */
  function checkStoredVersions(): void {
    const problems: string[] = [];
    for (const v of core.store.liveVersions()) {
      const def = core.defs.get(v.machine);
      const what = `${v.count} ${v.machine} actor(s) (e.g. ${v.example}) stored with v${v.machineVersion}`;
      if (!def) problems.push(`${what}: this code has no machine named ${v.machine}`);
      else if (v.machineVersion > def.version) {
        problems.push(`${what}: newer than this code's v${def.version}; run the newer release (no downgrade)`);
      } else {
        for (let x = v.machineVersion; x < def.version; x++) {
          if (!def.migrations?.some((m) => m.from === x)) {
            problems.push(`${what}: ${def.name} v${def.version} has no migration from v${x}`);
            break;
          }
        }
      }
    }
    if (problems.length > 0) {
      throw new ActorVersionError(`stored actors this release cannot run:\n  - ${problems.join('\n  - ')}`);
    }
  }

  /**
   * Recovers the actors a previous run left with effects under way or stored events, in pages, below the live
   * watermark. False when the host stopped first.
   */
  async function recover(): Promise<boolean> {
    let after = '';
    for (;;) {
      if (core.state.stopped) return false;
      const ids = core.store.actorsToRecover(after, RECOVERY_PAGE);
      for (const id of ids) {
        await core.capacity();
        if (core.state.stopped) return false;
        await loadOrFault(id).catch((err) => core.log(`actor ${id}: recovery failed`, err));
      }
      if (ids.length < RECOVERY_PAGE) return true;
      after = ids[ids.length - 1]!;
    }
  }

  return { readRow, load, loadOrFault, read, checkStoredVersions, recover };
}

export type Loading = ReturnType<typeof createLoading>;
