/**
 * What the parts of the actor host share: its configuration, the store and clock, the definitions and their pure
 * transitions, and the actors in memory with the bound on them (a live actor is an `Entry`). The parts (step and
 * effects, loading, faults, scheduler) each take the core and the few functions of the others they call.
 */
import type { AnyMachineSnapshot, EventObject } from 'xstate';
import type { ActorStore } from '../../store/actor-store.ts';
import { ActorVersionError, actorsBusy, hostStopped } from './errors.ts';
import { createPureTransition, type PureTransition } from './pure-transition.ts';
import {
  type ActorView,
  type AnyMachineDefinition,
  type DeliverResult,
  type HostOptions,
  type LegacyEffect,
  systemClock,
} from './types.ts';

/** Something for an actor to apply in a step. */
export interface Mail {
  event: EventObject;
  /** External events: their id (deduplicated through the inbox). */
  eventId?: string;
  /** A stored pending event being applied. */
  pendingSeq?: number;
  /** An effect's outcome: the intent it completes. */
  intentKey?: string;
  /** A WAKE for this wake time. */
  wakeAt?: number;
  resolve?(r: DeliverResult): void;
  reject?(e: unknown): void;
}

/** An effect a committed state asked for: an invoked source with its input (JSON), keyed for deduplication. */
export interface Intent {
  key: string;
  invokeId: string;
  src: string;
  input: string;
  /** Found stored when the actor was loaded: an earlier run may have started it (see EffectContext.redelivered). */
  redelivered?: boolean;
}

export interface Waiter {
  predicate: (v: ActorView) => boolean;
  resolve: (v: ActorView) => void;
  reject: (e: unknown) => void;
}

/** An actor in memory. */
export interface Entry {
  id: string;
  def: AnyMachineDefinition;
  snap: AnyMachineSnapshot;
  view: ActorView;
  step: number;
  wakeAt: number | null;
  /** Committed effect intents, by key. */
  intents: Map<string, Intent>;
  /** Keys of effects whose promise is under way. */
  running: Set<string>;
  mailbox: Mail[];
  /** A step is being written. */
  busy: boolean;
  failures: number;
  retryTimer?: unknown;
  waiters: Waiter[];
  /** Dropped from memory (finished, faulted, a failed save, or the host stopped). */
  gone: boolean;
  /** Loaded from an older version: the next step writes it back (with `legacy` intents) even without events. */
  needsWrite: boolean;
  legacy: LegacyEffect[];
  /**
   * The WAKE transition computed ahead of its time (while the actor was loaded ahead, see the scheduler's
   * `prefetch`): XState's transition is pure, so the result for this snapshot and this wake time is the one the step
   * would compute. Used only if the snapshot is still `from` when the WAKE is applied.
   */
  ahead?: { from: AnyMachineSnapshot; at: number; result: ReturnType<PureTransition['next']> };
}

/** Back-off after failed steps and saves doubles up to this. */
export const MAX_BACKOFF_MS = 30_000;

/** A failure's message for the operator (a fault reason, a log line): bounded, never a cause chain. */
export function reasonOf(err: unknown): string {
  const m = (err as { message?: unknown } | null)?.message;
  return (typeof m === 'string' ? m : String(err)).slice(0, 500);
}

export function createHostCore(opts: HostOptions) {
  const clock = opts.clock ?? systemClock;
  const maxLive = opts.maxLive ?? 10_000;
  /** The scheduler and the restore load actors only below this, leaving room for new work. */
  const loadWatermark = Math.max(1, Math.floor(maxLive * 0.8));
  const defs = new Map(opts.definitions.map((d) => [d.name, d]));
  const live = new Map<string, Entry>();
  let capacityWaiters: Array<() => void> = [];
  /**
   * `started`: the scheduler runs; `draining`: stopping, nothing new starts, but the outcomes of at-most-once
   * effects under way are still committed; `stopped`: nothing is applied any more.
   */
  const state = { started: false, draining: false, stopped: false };

  /** A stored row's machine, or the start's refusal naming it. */
  function definition(name: string): AnyMachineDefinition {
    const d = defs.get(name);
    if (!d) throw new ActorVersionError(`no machine named ${name}`);
    return d;
  }

  /** The generic view of an entry's committed state. */
  function view(e: Pick<Entry, 'id' | 'def' | 'snap' | 'step'>, status?: ActorView['status']): ActorView {
    return {
      actorId: e.id,
      machine: e.def.name,
      status: status ?? (e.snap.status === 'done' ? 'done' : 'active'),
      value: e.snap.value,
      context: e.snap.context as Record<string, unknown>,
      step: e.step,
    };
  }

  /** Drops an entry from memory, and lets the work waiting for room in. */
  function remove(e: Entry): void {
    e.gone = true;
    if (e.retryTimer !== undefined) clock.clearTimer(e.retryTimer);
    if (live.get(e.id) === e) live.delete(e.id);
    if (capacityWaiters.length > 0 && live.size < loadWatermark) releaseWaiters();
  }

  /** An actor with nothing to apply, nothing under way and nobody waiting leaves memory. */
  function maybeEvict(e: Entry): void {
    if (
      !e.busy &&
      !e.gone &&
      e.mailbox.length === 0 &&
      e.running.size === 0 &&
      e.waiters.length === 0 &&
      e.retryTimer === undefined &&
      !e.needsWrite
    ) {
      remove(e);
    }
  }

  /** Refuses new work when the host is stopping or holds as many actors as it may. */
  function admit(): void {
    if (state.stopped || state.draining) throw hostStopped();
    if (live.size >= maxLive) throw actorsBusy();
  }

  /** Waits until the live count is below the watermark (the scheduler and the restore do not crowd out new work). */
  function capacity(): Promise<void> {
    if (live.size < loadWatermark || state.stopped) return Promise.resolve();
    return new Promise((resolve) => capacityWaiters.push(resolve));
  }

  function releaseWaiters(): void {
    const ws = capacityWaiters;
    capacityWaiters = [];
    for (const w of ws) w();
  }

  return {
    store: opts.store as ActorStore,
    clock,
    log: opts.log ?? ((msg: string, err?: unknown) => console.error(msg, err ?? '')),
    defs,
    steppers: new Map<AnyMachineDefinition, PureTransition>(
      opts.definitions.map((d) => [d, createPureTransition(d.machine)]),
    ),
    maxStepFailures: opts.maxStepFailures ?? 5,
    retryBaseMs: opts.retryBaseMs ?? 100,
    wakeBatch: opts.wakeBatch ?? 1024,
    onWakeLag: opts.onWakeLag,
    loadWatermark,
    live,
    state,
    iso: () => new Date(clock.now()).toISOString(),
    definition,
    view,
    remove,
    maybeEvict,
    admit,
    capacity,
    /** At stop: whoever waits for room goes on (and finds the host stopped). */
    releaseWaiters,
  };
}

export type HostCore = ReturnType<typeof createHostCore>;
