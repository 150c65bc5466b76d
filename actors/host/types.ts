/**
 * The actor host's public types: what a machine's definition gives the host (its machine, effects, migrations, the
 * rows it writes, its wake time, how it is created and seen), and what the host's callers get back.
 */
import type { AnyStateMachine, ContextFrom, EventObject, InputFrom, SnapshotFrom, StateValue } from 'xstate';
import { CodedError } from '../../chains/domain/errors.ts';
import type { ActorStore } from '../../store/actor-store.ts';

/** An actor's state in the format this project stores: XState's `resolveState` rebuilds a snapshot from it. */
export interface StoredState {
  value: StateValue;
  context: Record<string, unknown>;
}

/** An effect a migrated row was running under its old format (an invoked source and its input). */
export interface LegacyEffect {
  invokeId: string;
  src: string;
  input: unknown;
}

/**
 * Upgrades a stored state from version `from` to `from + 1`. `effects` carries what the old row had in flight;
 * `actorId` lets a migration read what the actor's own rows hold (a payment's record).
 */
export interface Migration {
  from: number;
  up(stored: unknown, meta: { actorId: string }): StoredState & { effects?: LegacyEffect[] };
}

export interface EffectContext {
  actorId: string;
  /** `<actorId>:<step>:<n>`: the same on every run of this effect, so its target can deduplicate on it. */
  key: string;
  /**
   * True when this run is a re-delivery: the effect was found stored when its actor was loaded (after a crash, or a
   * stop that did not finish it), so an earlier run may have done part or all of it. An effect whose answer means
   * something different the second time (a node refusing bytes it may already hold) reads it here.
   */
  redelivered: boolean;
}

/**
 * What the host runs for an invoked source. `at-least-once` (default): an effect interrupted by a crash runs
 * again after restart with the same key. `at-most-once`: it is never run again; the machine receives
 * `xstate.error.actor.<id>` with `error.code === 'EFFECT_INTERRUPTED'` (every effect error carries `code`, `message`
 * and `at`, when it was seen) and decides (a signing stage becomes
 * uncertain).
 */
export interface EffectSpec {
  run(input: unknown, ctx: EffectContext): Promise<unknown>;
  delivery?: 'at-least-once' | 'at-most-once';
}

/**
 * How the host runs one kind of machine. `persist` writes the row(s) a snapshot describes (and outbox events)
 * in the same transaction as the snapshot; it is called for every committed transition, in order.
 *
 * `Admission` is what `spawn` is given (the machine's input, unless `create` turns something else into it) and `View`
 * what `spawn` and `waitFor` answer (the generic view, unless `view` maps it): a caller never handles an untyped input
 * or a cast context.
 */
export interface MachineDefinition<
  M extends AnyStateMachine = AnyStateMachine,
  Admission = InputFrom<M>,
  View = ActorView<ContextFrom<M>>,
> {
  name: string;
  /** Bumped whenever stored states of the previous version need a migration. */
  version: number;
  machine: M;
  /** One per invoked `src` of the machine. */
  effects: Record<string, EffectSpec>;
  /** Ordered: a stored row of version v runs every migration with `from >= v`. */
  migrations?: Migration[];
  /**
   * In `spawn`'s transaction, before the initial state is computed: writes the rows the actor describes and returns
   * the machine's input, decided from what it read and wrote there (a payment's nonce is allocated with its record).
   * Throwing refuses the spawn: nothing is stored or started, except when it throws `SpawnRefused` (what it wrote before,
   * a refusal's own record, commits; the actor is not stored). Without it, the admission is the input as is.
   */
  create?(actorId: string, admission: Admission): InputFrom<M>;
  /** What `spawn` and `waitFor` callers see of a committed state; without it, the generic view. */
  view?(actor: ActorView<ContextFrom<M>>): View;
  persist(actorId: string, snapshot: SnapshotFrom<M>, previous: SnapshotFrom<M> | undefined): void;
  /**
   * In the step's transaction, before an external event (delivered, or stored for a faulted actor and applied at its
   * retry) is applied to `snapshot`: the event the machine gets instead, with what the definition decided for it there
   * and wrote with the step (a payment's signing policy decision). Never called for effect outcomes or WAKEs. Throwing
   * fails the step as a throwing transition does. Without it, the event as delivered.
   */
  resolveEvent?(actorId: string, snapshot: SnapshotFrom<M>, event: EventObject): EventObject;
  /** Absolute epoch ms at which the actor wants `{type: 'WAKE', at}`, or null. Time is data. */
  wakeAt?(snapshot: SnapshotFrom<M>): number | null;
  /** In the operator's abandon transaction: tidy the rows the actor describes. */
  abandon?(actorId: string, state: StoredState): void;
}

// biome-ignore lint/suspicious/noExplicitAny: a registry of definitions of every machine, admission and view type
export type AnyMachineDefinition = MachineDefinition<AnyStateMachine, any, any>;

/** What `spawn` takes for a definition. */
export type AdmissionOf<D> = D extends MachineDefinition<AnyStateMachine, infer A, unknown> ? A : never;

/** What `spawn` and `waitFor` answer for a definition. */
export type ViewOf<D> = D extends MachineDefinition<AnyStateMachine, unknown, infer V> ? V : never;

/** An actor as callers see it: its last committed state. */
export interface ActorView<C = Record<string, unknown>> {
  actorId: string;
  machine: string;
  status: 'active' | 'done' | 'faulted';
  value: StateValue;
  context: C;
  step: number;
}

export type DeliverResult =
  /** Applied and committed. */
  | { outcome: 'applied'; actor: ActorView }
  /** An event with this id was already applied (or stored): ignored. */
  | { outcome: 'duplicate'; actor: ActorView }
  /** The actor had finished: nothing applied. */
  | { outcome: 'final'; actor: ActorView }
  /** The actor is faulted: the event is stored and applied, in order, when the operator retries it. */
  | { outcome: 'stored'; actor: ActorView };

export interface Clock {
  now(): number;
  setTimer(fn: () => void, ms: number): unknown;
  clearTimer(handle: unknown): void;
}

export const systemClock: Clock = {
  now: Date.now,
  setTimer: (fn, ms) => setTimeout(fn, ms),
  clearTimer: (h) => clearTimeout(h as NodeJS.Timeout),
};

export interface HostOptions {
  store: ActorStore;
  definitions: AnyMachineDefinition[];
  clock?: Clock;
  log?: (msg: string, err?: unknown) => void;
  /** Most actors in memory at once; past it, new work answers SERVICE_BUSY (503). */
  maxLive?: number;
  /** Consecutive failed steps before an actor is faulted. */
  maxStepFailures?: number;
  /** First back-off after a failed step or save (doubles, capped at 30 s). */
  retryBaseMs?: number;
  /** Actors woken per scheduler batch. */
  wakeBatch?: number;
  /** Called with the lateness (ms) of every WAKE applied. */
  onWakeLag?: (ms: number) => void;
  /**
   * How long `stop()` waits for at-most-once effects under way (a signature) to finish and their outcome to be
   * committed (default 10 s): a signature already made then reaches its record instead of being reported
   * interrupted at the next start.
   */
  stopDrainMs?: number;
}

/**
 * Thrown by a definition's `create` to refuse the spawn with `refusal` while keeping what it wrote before the throw (a
 * signing policy's decision log row, the case a hold opened): the transaction commits without the actor, and `spawn`
 * rejects with `refusal` once that is durable.
 */
export class SpawnRefused extends CodedError {
  constructor(readonly refusal: CodedError) {
    super(refusal.code, refusal.httpStatus, refusal.message, {
      transient: refusal.transient,
      ...(refusal.details ? { details: refusal.details } : {}),
    });
    this.name = 'SpawnRefused';
  }
}
