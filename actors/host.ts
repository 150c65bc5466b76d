import { randomUUID } from 'node:crypto';
import type {
  AnyMachineSnapshot,
  AnyStateMachine,
  ContextFrom,
  EventObject,
  InputFrom,
  SnapshotFrom,
  StateValue,
} from 'xstate';
import { InternalError } from '../chains/domain/errors.ts';
import type { ActorStore, StoredActor, StoredEffect } from '../store/actor-store.ts';
import { ActorFaultedError, ActorVersionError, actorNotFound, actorsBusy, hostStopped } from './errors.ts';
import { createPureTransition, type PureTransition } from './pure-transition.ts';

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

/** Upgrades a stored state from version `from` to `from + 1`. `effects` carries what the old row had in flight. */
export interface Migration {
  from: number;
  up(stored: unknown): StoredState & { effects?: LegacyEffect[] };
}

export interface EffectContext {
  actorId: string;
  /** `<actorId>:<step>:<n>`: the same on every run of this effect, so its target can deduplicate on it. */
  key: string;
}

/**
 * What the host runs for an invoked source. `at-least-once` (default): an effect interrupted by a crash runs
 * again after restart with the same key. `at-most-once`: it is never run again; the machine receives
 * `xstate.error.actor.<id>` with `error.code === 'EFFECT_INTERRUPTED'` and decides (a signing stage becomes
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
   * Throwing refuses the spawn: nothing is stored or started. Without it, the admission is the input as is.
   */
  create?(actorId: string, admission: Admission): InputFrom<M>;
  /** What `spawn` and `waitFor` callers see of a committed state; without it, the generic view. */
  view?(actor: ActorView<ContextFrom<M>>): View;
  persist(actorId: string, snapshot: SnapshotFrom<M>, previous: SnapshotFrom<M> | undefined): void;
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

const systemClock: Clock = {
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
}

interface Mail {
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

interface Intent {
  key: string;
  invokeId: string;
  src: string;
  input: string;
}

interface Waiter {
  predicate: (v: ActorView) => boolean;
  resolve: (v: ActorView) => void;
  reject: (e: unknown) => void;
}

interface Entry {
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
   * The WAKE transition computed ahead of its time (while the actor was loaded ahead, see `prefetch`): XState's
   * transition is pure, so the result for this snapshot and this wake time is the one the step would compute.
   * Used only if the snapshot is still `from` when the WAKE is applied.
   */
  ahead?: { from: AnyMachineSnapshot; at: number; result: ReturnType<PureTransition['next']> };
}

interface StepOutcome {
  applied: Mail[];
  duplicates: Mail[];
  stale: Mail[];
  failed?: { index: number; error: unknown };
  wrote: boolean;
  snap: AnyMachineSnapshot;
  intents: Map<string, Intent>;
  added: Intent[];
  after: Array<{ exec?: (...args: unknown[]) => unknown; info?: unknown; params?: unknown; args?: unknown[] }>;
  wakeAt: number | null;
  lags: number[];
}

/** A step's one mail failed: thrown out of the step's job so that the writer rolls the job back whole. */
class StepFailure extends InternalError {
  constructor(readonly error: unknown) {
    super('STEP_FAILED', 'the step failed');
  }
}

const MAX_TIMER_MS = 2 ** 31 - 1;
const MAX_BACKOFF_MS = 30_000;
/** How long before a wake time its actors are loaded. */
const PREFETCH_MS = 100;
const INBOX_RETENTION_MS = 7 * 24 * 3600_000;
const PURGE_EVERY_MS = 3600_000;
/** Built-in actions the host accepts from a transition: the rest would need a live XState runtime. */
const PURE_BUILTINS = new Set(['xstate.assign', 'xstate.stopChild', 'xstate.log']);

/** `a`, `a.b`, or JSON for parallel states: what the operator lists actors by. */
export function stateText(value: StateValue): string {
  if (typeof value === 'string') return value;
  const keys = Object.keys(value);
  if (keys.length === 1) {
    const inner = value[keys[0]!];
    if (inner !== undefined && (typeof inner === 'string' || Object.keys(inner).length <= 1)) {
      const rest = typeof inner === 'string' ? inner : Object.keys(inner).length === 0 ? '' : stateText(inner);
      return rest ? `${keys[0]}.${rest}` : keys[0]!;
    }
  }
  return JSON.stringify(value);
}

/** An effect's failure as the machine sees it: `{code, message}` only, never a cause chain or a stack. */
function describeFailure(err: unknown): { code: string; message: string } {
  const e = err as { code?: unknown; message?: unknown } | null;
  return {
    code: typeof e?.code === 'string' ? e.code : 'EFFECT_FAILED',
    message: typeof e?.message === 'string' ? e.message : 'the effect failed',
  };
}

function reasonOf(err: unknown): string {
  const m = (err as { message?: unknown } | null)?.message;
  return (typeof m === 'string' ? m : String(err)).slice(0, 500);
}

/**
 * The actor host. Each actor's events are applied in order, one step at a time, with XState's pure
 * `transition()`: the new state, the effect intents it produced, its wake time, the rows it describes and its
 * outbox events are written in one transaction, and effects are dispatched only after that commits. See
 * actors/README.md for the contract.
 */
export function createActorHost(opts: HostOptions) {
  const { store } = opts;
  const defs = new Map(opts.definitions.map((d) => [d.name, d]));
  const steppers = new Map<AnyMachineDefinition, PureTransition>(
    opts.definitions.map((d) => [d, createPureTransition(d.machine)]),
  );
  const clock = opts.clock ?? systemClock;
  const log = opts.log ?? ((msg: string, err?: unknown) => console.error(msg, err ?? ''));
  const maxLive = opts.maxLive ?? 10_000;
  /** The scheduler and the restore load actors only below this, leaving room for new work. */
  const loadWatermark = Math.max(1, Math.floor(maxLive * 0.8));
  const maxStepFailures = opts.maxStepFailures ?? 5;
  const retryBaseMs = opts.retryBaseMs ?? 100;
  const wakeBatch = opts.wakeBatch ?? 1024;
  const live = new Map<string, Entry>();
  /** Reload attempts of actors dropped after a failed save, for their back-off. */
  const reloads = new Map<string, number>();
  const reloadTimers = new Set<unknown>();
  let capacityWaiters: Array<() => void> = [];
  let stopped = false;
  let started = false;
  let restored = false;
  let restoreMs: number | undefined;
  let timer: unknown;
  let timerFor: number | undefined;
  /** Actors loaded ahead of their wake time (see arm). */
  const prefetched = new Set<Entry>();
  let waking = false;
  let purgeTimer: unknown;

  const iso = () => new Date(clock.now()).toISOString();

  function definition(name: string) {
    const d = defs.get(name);
    if (!d) throw new ActorVersionError(`no machine named ${name}`);
    return d;
  }

  /** `def` is the definition this host runs under its name (not another object of the same name). */
  function registered(def: AnyMachineDefinition): void {
    if (defs.get(def.name) !== def) throw new Error(`the machine ${def.name} is not one this host was created with`);
  }

  function viewFor<D extends AnyMachineDefinition>(def: D, v: ActorView): ViewOf<D> {
    return (def.view ? def.view(v) : v) as ViewOf<D>;
  }

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
      const up = m.up(raw);
      if (up.effects) effects = up.effects;
      raw = { value: up.value, context: up.context };
    }
    const s = raw as StoredState;
    return { value: s.value, context: s.context, effects };
  }

  function rowOf(e: Entry, snap: AnyMachineSnapshot, wakeAt: number | null, at: string) {
    const stored: StoredState = { value: snap.value, context: snap.context as Record<string, unknown> };
    return {
      actorId: e.id,
      machine: e.def.name,
      machineVersion: e.def.version,
      snapshot: JSON.stringify(stored),
      state: stateText(snap.value),
      done: snap.status === 'done',
      wakeAt,
      updatedAt: at,
    };
  }

  /** The invoke ids of every state the snapshot is in. */
  function activeInvokes(snap: AnyMachineSnapshot): Set<string> {
    const ids = new Set<string>();
    for (const node of (snap as unknown as { _nodes: Array<{ invoke: Array<{ id: string }> }> })._nodes) {
      for (const inv of node.invoke) ids.add(inv.id);
    }
    return ids;
  }

  /**
   * Sorts a transition's actions: invoked sources become effect intents (keyed by the step that commits them),
   * pure built-ins are dropped (their work is in the snapshot), other actions run after the commit. Anything
   * that needs XState's live runtime (delays, messages to other actors) is refused: it would not survive a
   * restart.
   */
  function sortActions(
    def: AnyMachineDefinition,
    actorId: string,
    step: number,
    actions: ReturnType<PureTransition['next']>[1],
    intents: Map<string, Intent>,
    added: Intent[],
    after: StepOutcome['after'],
  ): void {
    for (const a of actions) {
      if (a.type === 'xstate.spawnChild') {
        const p = a.params as unknown as { id: string; src: unknown; input: unknown; systemId?: unknown };
        if (typeof p.src !== 'string' || !def.effects[p.src]) {
          throw new Error(`${def.name}: invoked source ${String(p.src)} is not one of the definition's effects`);
        }
        if (p.systemId !== undefined)
          throw new Error(`${def.name}: invoke ${p.id} names a systemId; the host has no system`);
        for (const [key, it] of intents) {
          if (it.invokeId === p.id) intents.delete(key);
        }
        const intent: Intent = {
          key: `${actorId}:${step}:${added.length}`,
          invokeId: p.id,
          src: p.src,
          input: JSON.stringify(p.input ?? null),
        };
        intents.set(intent.key, intent);
        added.push(intent);
      } else if (a.type === 'xstate.raise' || a.type.startsWith('xstate.')) {
        if (!PURE_BUILTINS.has(a.type)) {
          throw new Error(
            `${def.name}: action ${a.type} needs a live XState runtime and would not survive a restart (use wakeAt for time)`,
          );
        }
      } else {
        after.push(a as StepOutcome['after'][number]);
      }
    }
  }

  /** Applies a batch of mail in one transaction (called inside `store.transact`). Never throws for a bad step. */
  function runStep(e: Entry, batch: Mail[]): StepOutcome {
    const at = iso();
    const nextStep = e.step + 1;
    let snap = e.snap;
    const out: StepOutcome = {
      applied: [],
      duplicates: [],
      stale: [],
      wrote: false,
      snap,
      intents: new Map(e.intents),
      added: [],
      after: [],
      wakeAt: e.wakeAt,
      lags: [],
    };
    let wokeAt: number | undefined;
    for (let i = 0; i < batch.length; i++) {
      const mail = batch[i]!;
      if (mail.eventId !== undefined && mail.pendingSeq === undefined && store.hasEvent(e.id, mail.eventId)) {
        out.duplicates.push(mail);
        continue;
      }
      if (mail.intentKey !== undefined && !out.intents.has(mail.intentKey)) {
        out.stale.push(mail);
        continue;
      }
      if (mail.wakeAt !== undefined && (e.wakeAt === null || mail.wakeAt !== e.wakeAt || wokeAt !== undefined)) {
        out.stale.push(mail);
        continue;
      }
      // One mail alone needs no savepoint of its own: if it fails, the whole job is rolled back (StepFailure).
      const alone = batch.length === 1;
      const intents = alone ? out.intents : new Map(out.intents);
      const added = alone ? out.added : [...out.added];
      const after = alone ? out.after : [...out.after];
      const ahead =
        mail.wakeAt !== undefined && e.ahead?.from === snap && e.ahead.at === mail.wakeAt ? e.ahead : undefined;
      e.ahead = undefined;
      const apply = (): AnyMachineSnapshot => {
        const [n, actions] = ahead ? ahead.result : steppers.get(e.def)!.next(snap, mail.event);
        if (n.status === 'error') throw (n as { error?: unknown }).error ?? new Error('the machine errored');
        if (actions.length > 0) sortActions(e.def, e.id, nextStep, actions, intents, added, after);
        if (mail.intentKey !== undefined) intents.delete(mail.intentKey);
        if (intents.size > 0) {
          const active = activeInvokes(n);
          for (const [key, it] of intents) if (!active.has(it.invokeId)) intents.delete(key);
        }
        if (n !== snap) e.def.persist(e.id, n, snap);
        if (mail.pendingSeq !== undefined) store.markApplied([mail.pendingSeq]);
        // A finished actor's inbox is deleted with it in this same transaction: nothing to record then.
        else if (mail.eventId !== undefined && n.status !== 'done') store.recordApplied(e.id, mail.eventId, at);
        return n;
      };
      try {
        snap = alone ? apply() : store.nested(apply);
      } catch (error) {
        if (alone) throw new StepFailure(error);
        out.failed = { index: i, error };
        break;
      }
      out.intents = intents;
      out.added = added.length > 0 ? added.filter((x) => intents.has(x.key)) : added;
      out.after = after;
      out.applied.push(mail);
      if (mail.wakeAt !== undefined) {
        wokeAt = mail.wakeAt;
        out.lags.push(clock.now() - mail.wakeAt);
      }
    }
    out.snap = snap;
    if (out.applied.length === 0 && !e.needsWrite) return out;

    const done = snap.status === 'done';
    let wakeAt = done ? null : (e.def.wakeAt?.(snap) ?? null);
    if (wokeAt !== undefined && wakeAt !== null && wakeAt <= wokeAt) {
      log(`actor ${e.id}: a WAKE left its wake time at or before the one it answered; it is not woken again`);
      wakeAt = null;
    }
    out.wakeAt = wakeAt;
    if (e.needsWrite) {
      for (const l of e.legacy) {
        const intent: Intent = {
          key: `${e.id}:${nextStep}:legacy:${l.invokeId}`,
          invokeId: l.invokeId,
          src: l.src,
          input: JSON.stringify(l.input ?? null),
        };
        if (!activeInvokes(snap).has(l.invokeId)) continue;
        out.intents.set(intent.key, intent);
        out.added.push(intent);
      }
    }
    store.update(rowOf(e, snap, wakeAt, at), e.step);
    for (const key of e.intents.keys()) if (!out.intents.has(key)) store.deleteEffect(key);
    for (const it of out.added) {
      store.addEffect({ ...it, actorId: e.id, createdAt: at } satisfies StoredEffect);
    }
    if (done) store.clearWork(e.id);
    out.wrote = true;
    return out;
  }

  /** The outcome of a one-mail step whose mail failed: nothing was written. */
  function notWritten(e: Entry, error: unknown): StepOutcome {
    return {
      applied: [],
      duplicates: [],
      stale: [],
      failed: { index: 0, error },
      wrote: false,
      snap: e.snap,
      intents: e.intents,
      added: [],
      after: [],
      wakeAt: e.wakeAt,
      lags: [],
    };
  }

  function settleWaiters(e: Entry): void {
    if (e.waiters.length === 0) return;
    const v = e.view;
    e.waiters = e.waiters.filter((w) => {
      if (v.status === 'active' && !w.predicate(v)) return true;
      w.resolve(v);
      return false;
    });
  }

  function failAll(e: Entry, err: unknown, mails: Mail[]): void {
    for (const m of mails) m.reject?.(err);
    for (const w of e.waiters) w.reject(err);
    e.waiters = [];
  }

  function remove(e: Entry): void {
    e.gone = true;
    if (e.retryTimer !== undefined) clock.clearTimer(e.retryTimer);
    if (live.get(e.id) === e) live.delete(e.id);
    if (capacityWaiters.length > 0 && live.size < loadWatermark) {
      const ws = capacityWaiters;
      capacityWaiters = [];
      for (const w of ws) w();
    }
  }

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

  function dispatch(e: Entry, intent: Intent, spec = e.def.effects[intent.src]): void {
    if (!spec) {
      // Refused when the intent was made; only a definition that dropped an effect since can get here.
      log(`actor ${e.id}: effect ${intent.src} is not defined; reported to the machine as failed`);
      e.mailbox.push({
        event: {
          type: `xstate.error.actor.${intent.invokeId}`,
          error: { code: 'EFFECT_UNKNOWN', message: `effect ${intent.src} is not defined` },
          actorId: intent.invokeId,
        } as EventObject,
        intentKey: intent.key,
      });
      return;
    }
    e.running.add(intent.key);
    const input = JSON.parse(intent.input) as unknown;
    Promise.resolve()
      .then(() => spec.run(input, { actorId: e.id, key: intent.key }))
      .then(
        (output) =>
          complete(e, intent, {
            type: `xstate.done.actor.${intent.invokeId}`,
            output,
            actorId: intent.invokeId,
          } as EventObject),
        (err) =>
          complete(e, intent, {
            type: `xstate.error.actor.${intent.invokeId}`,
            error: describeFailure(err),
            actorId: intent.invokeId,
          } as EventObject),
      );
  }

  function complete(e: Entry, intent: Intent, event: EventObject): void {
    e.running.delete(intent.key);
    // A dropped actor is reloaded from its committed state, where this intent is still pending.
    if (e.gone || stopped) return;
    e.mailbox.push({ event, intentKey: intent.key });
    pump(e);
  }

  function pump(e: Entry): void {
    if (e.busy || e.gone || e.retryTimer !== undefined) return;
    if (e.mailbox.length === 0 && !e.needsWrite) {
      maybeEvict(e);
      return;
    }
    if (stopped) return;
    const batch = e.mailbox.splice(0, e.mailbox.length);
    e.busy = true;
    store
      .transact(() => runStep(e, batch), { bounded: false })
      .then(
        (out) => afterStep(e, batch, out),
        (err) => {
          if (err instanceof StepFailure) {
            afterStep(e, batch, notWritten(e, err.error));
            return;
          }
          e.busy = false;
          dropAfterFailedSave(e, err, batch);
        },
      );
  }

  function afterStep(e: Entry, batch: Mail[], out: StepOutcome): void {
    e.busy = false;
    if (out.wrote) {
      const previous = e.intents;
      e.snap = out.snap;
      e.step += 1;
      e.wakeAt = out.wakeAt;
      e.intents = out.intents;
      e.needsWrite = false;
      e.legacy = [];
      e.view = view(e);
      for (const key of previous.keys()) if (!e.intents.has(key)) e.running.delete(key);
      for (const lag of out.lags) opts.onWakeLag?.(lag);
      if (out.wakeAt !== null) noteWake(out.wakeAt);
    }
    for (const m of out.applied) m.resolve?.({ outcome: 'applied', actor: e.view });
    for (const m of out.duplicates) m.resolve?.({ outcome: 'duplicate', actor: e.view });
    for (const m of out.stale) m.resolve?.({ outcome: 'applied', actor: e.view });
    if (!stopped) for (const it of out.added) dispatch(e, it);
    for (const a of out.after) {
      try {
        a.exec?.(a.info, a.params);
      } catch (err) {
        log(`actor ${e.id}: an after-commit action failed`, err);
      }
    }
    settleWaiters(e);
    if (e.view.status === 'done') {
      remove(e);
      for (const m of e.mailbox) m.resolve?.({ outcome: 'final', actor: e.view });
      e.mailbox = [];
      return;
    }
    if (out.failed) {
      const rest = batch.slice(out.failed.index);
      e.mailbox.unshift(...rest);
      e.failures += 1;
      log(`actor ${e.id}: a step failed (${e.failures}/${maxStepFailures})`, out.failed.error);
      if (e.failures >= maxStepFailures) {
        void faultActor(e, out.failed.error);
        return;
      }
      e.retryTimer = clock.setTimer(
        () => {
          e.retryTimer = undefined;
          pump(e);
        },
        Math.min(MAX_BACKOFF_MS, retryBaseMs * 2 ** (e.failures - 1)),
      );
      return;
    }
    e.failures = 0;
    reloads.delete(e.id);
    pump(e);
  }

  /** The actor keeps failing: its external events are stored, it is marked faulted and leaves memory. */
  async function faultActor(e: Entry, error: unknown): Promise<void> {
    remove(e);
    const mails = e.mailbox;
    e.mailbox = [];
    const reason = reasonOf(error);
    const at = iso();
    try {
      await store.transact(
        () => {
          for (const m of mails) {
            if (m.eventId !== undefined && m.pendingSeq === undefined) {
              store.storePending(e.id, m.eventId, JSON.stringify(m.event), at);
            }
          }
          store.fault(e.id, reason, at);
        },
        { bounded: false },
      );
    } catch (err) {
      failAll(e, err, mails);
      scheduleReload(e.id);
      return;
    }
    log(`actor ${e.id} (${e.def.name}) faulted: ${reason}`);
    const v = view(e, 'faulted');
    for (const m of mails) m.resolve?.({ outcome: 'stored', actor: v });
    failAll(e, new ActorFaultedError(e.id, reason), []);
  }

  /** A save failed: what is in memory may be ahead of the database. Drop it and reload the committed state later. */
  function dropAfterFailedSave(e: Entry, err: unknown, batch: Mail[]): void {
    remove(e);
    log(`actor ${e.id}: saving a step failed; reloading it from its last committed state`, err);
    const mails = [...batch, ...e.mailbox];
    e.mailbox = [];
    failAll(e, err, mails);
    scheduleReload(e.id);
  }

  function scheduleReload(actorId: string): void {
    if (stopped) return;
    const attempt = (reloads.get(actorId) ?? 0) + 1;
    reloads.set(actorId, attempt);
    const handle = clock.setTimer(
      () => {
        reloadTimers.delete(handle);
        if (stopped || live.has(actorId)) return;
        loadOrFault(actorId).catch((err) => {
          log(`actor ${actorId}: reload failed`, err);
          scheduleReload(actorId);
        });
      },
      Math.min(MAX_BACKOFF_MS, retryBaseMs * 2 ** (attempt - 1)),
    );
    reloadTimers.add(handle);
  }

  /**
   * Loads a stored actor into memory: migrates an older row, re-dispatches its at-least-once effects, reports
   * its at-most-once ones as interrupted, queues its stored events. Returns the entry, or the row's reason for
   * not running (`done`, `faulted`), or undefined when there is no such actor.
   */
  function load(actorId: string): Entry | 'done' | 'faulted' | undefined {
    const existing = live.get(actorId);
    if (existing) return existing;
    const row = store.get(actorId);
    if (!row) return undefined;
    if (row.done) return 'done';
    if (row.faultedAt) return 'faulted';
    const def = definition(row.machine);
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
      legacy: state.effects,
    };
    e.view = view(e);
    const redo: Intent[] = [];
    for (const s of row.hasEffects ? store.effectsOf(actorId) : []) {
      const intent: Intent = { key: s.key, invokeId: s.invokeId, src: s.src, input: s.input };
      e.intents.set(s.key, intent);
      if (def.effects[s.src]?.delivery === 'at-most-once') {
        e.mailbox.push({
          event: {
            type: `xstate.error.actor.${s.invokeId}`,
            error: {
              code: 'EFFECT_INTERRUPTED',
              message: 'the service stopped while this effect was under way: whether it took place is unknown',
            },
            actorId: s.invokeId,
          } as EventObject,
          intentKey: s.key,
        });
      } else {
        redo.push(intent);
      }
    }
    for (const p of row.hasPending ? store.pendingEventsOf(actorId) : []) {
      e.mailbox.push({ event: JSON.parse(p.event) as EventObject, eventId: p.eventId, pendingSeq: p.seq });
    }
    live.set(actorId, e);
    for (const it of redo) dispatch(e, it);
    // The caller queues what it loaded the actor for; an actor with nothing to do leaves with its next step.
    if (e.mailbox.length > 0 || e.needsWrite) pump(e);
    return e;
  }

  function admit(): void {
    if (stopped) throw hostStopped();
    if (live.size >= maxLive) throw actorsBusy();
  }

  /** Waits until the live count is below the watermark (the scheduler and the restore do not crowd out new work). */
  function capacity(): Promise<void> {
    if (live.size < loadWatermark || stopped) return Promise.resolve();
    return new Promise((resolve) => capacityWaiters.push(resolve));
  }

  // ---- scheduler -------------------------------------------------------------------------------------------

  /** A commit set a wake time: arm the timer earlier if it is. */
  function noteWake(at: number): void {
    if (!started || stopped || waking) return;
    if (timerFor === undefined || at < timerFor) arm(at);
  }

  function arm(at: number | null): void {
    if (timer !== undefined) clock.clearTimer(timer);
    timer = undefined;
    timerFor = undefined;
    if (at === null || stopped) return;
    timerFor = at;
    const until = at - clock.now();
    // Shortly before a wake time, the actors due by then are loaded, so that at the time itself only their
    // steps remain to run. A delay above 2^31-1 ms would fire at once: wait the longest allowed, then look again.
    const early = until > PREFETCH_MS;
    const delay = Math.min(MAX_TIMER_MS, Math.max(0, early ? until - PREFETCH_MS : until));
    timer = clock.setTimer(() => {
      timer = undefined;
      timerFor = undefined;
      if (early) {
        if (at - clock.now() <= PREFETCH_MS) prefetch(at);
        arm(at);
      } else if (clock.now() < at) {
        // Fired a moment early (timers round to the millisecond): waking now would find nothing due and send the
        // actors loaded ahead out of memory again. Wait the rest.
        arm(at);
      } else void wakeDue();
    }, delay);
  }

  /**
   * Loads the actors due by `until` that are not in memory (below the watermark, one batch at most) and computes
   * their WAKE transitions ahead, so that at the time itself only their writes remain.
   */
  function prefetch(until: number): void {
    for (const d of store.dueWakes(until, wakeBatch)) {
      if (stopped) return;
      let e = live.get(d.actorId);
      if (!e) {
        if (live.size >= loadWatermark) return;
        try {
          const loaded = load(d.actorId);
          if (!loaded || typeof loaded === 'string') continue;
          e = loaded;
          prefetched.add(e);
        } catch {
          // The wake itself faults it, with the reason.
          continue;
        }
      }
      if (e.busy || e.mailbox.length > 0 || e.wakeAt !== d.wakeAt) continue;
      try {
        const result = steppers.get(e.def)!.next(e.snap, { type: 'WAKE', at: d.wakeAt } as EventObject);
        e.ahead = { from: e.snap, at: d.wakeAt, result };
      } catch {
        // Computed again at the time, where a failure counts.
      }
    }
  }

  async function wakeDue(): Promise<void> {
    if (stopped || waking) return;
    waking = true;
    try {
      for (;;) {
        const now = clock.now();
        const due = store.dueWakes(now, wakeBatch);
        const pending: Promise<unknown>[] = [];
        for (const d of due) {
          if (stopped) break;
          if (live.size >= loadWatermark && !live.has(d.actorId)) await capacity();
          pending.push(wake(d.actorId, d.wakeAt).catch((err) => log(`actor ${d.actorId}: wake failed`, err)));
        }
        await Promise.all(pending);
        if (due.length < wakeBatch || stopped) break;
      }
    } finally {
      waking = false;
      // Loaded ahead for a wake time that has moved since: they leave memory again.
      for (const e of prefetched) pump(e);
      prefetched.clear();
    }
    if (!stopped) arm(store.nextWakeAt());
  }

  /** Drops applied event ids past the deduplication window, hourly, a bounded number at a time. */
  function schedulePurge(): void {
    purgeTimer = clock.setTimer(() => {
      const before = new Date(clock.now() - INBOX_RETENTION_MS).toISOString();
      store
        .transact(() => store.purgeAppliedBefore(before, 10_000))
        .catch((err) => log('purging old inbox ids failed', err))
        .finally(() => {
          if (!stopped) schedulePurge();
        });
    }, PURGE_EVERY_MS);
  }

  function wake(actorId: string, at: number): Promise<unknown> {
    let e: ReturnType<typeof load>;
    try {
      e = load(actorId);
    } catch {
      return loadOrFault(actorId);
    }
    if (!e || typeof e === 'string') return Promise.resolve();
    const entry = e;
    return new Promise((resolve, reject) => {
      entry.mailbox.push({ event: { type: 'WAKE', at } as EventObject, wakeAt: at, resolve, reject });
      pump(entry);
    });
  }

  /** The actor's committed state (from memory if live, else from the store), or undefined. */
  function read(actorId: string): ActorView | undefined {
    const e = live.get(actorId);
    if (e && e.step > 0) return e.view;
    const row = store.get(actorId);
    if (!row) return undefined;
    let s: StoredState;
    try {
      const def = defs.get(row.machine);
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
      log(`actor ${actorId} faulted: ${reason}`, err);
      await store.transact(() => store.fault(actorId, reason, iso()), { bounded: false });
      return 'faulted';
    }
  }

  // ---- public ----------------------------------------------------------------------------------------------

  return {
    /**
     * Refuses to run stored actors this code cannot read: a machine it does not know, a version newer than its
     * own, or an older one without a migration path. Call before serving; the message names each.
     */
    checkStoredVersions(): void {
      const problems: string[] = [];
      for (const v of store.liveVersions()) {
        const def = defs.get(v.machine);
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
    },

    /**
     * Starts the scheduler and, in the background, recovers actors a previous run left with effects under way or
     * stored events, in pages, below the live watermark. Resolves when that recovery is done (`restored`).
     */
    async start(): Promise<void> {
      started = true;
      const t0 = performance.now();
      arm(store.nextWakeAt());
      schedulePurge();
      let after = '';
      for (;;) {
        if (stopped) return;
        const ids = store.actorsToRecover(after, 256);
        for (const id of ids) {
          await capacity();
          if (stopped) return;
          await loadOrFault(id).catch((err) => log(`actor ${id}: recovery failed`, err));
        }
        if (ids.length < 256) break;
        after = ids[ids.length - 1]!;
      }
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
      admit();
      if (live.has(actorId)) throw new Error(`actor ${actorId} already exists`);
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
      live.set(actorId, e);
      try {
        await store.transact(() => {
          // The initial state is computed inside the transaction: `create` decides the input from what it reads and
          // writes there (a payment's nonce is allocated with its record).
          const input = def.create ? def.create(actorId, admission) : admission;
          const [snap, actions] = steppers.get(def)!.initial(input);
          e.snap = snap;
          e.intents.clear();
          added = [];
          after = [];
          sortActions(def, actorId, 1, actions, e.intents, added, after);
          wakeAt = snap.status === 'done' ? null : (def.wakeAt?.(snap) ?? null);
          def.persist(actorId, snap, undefined);
          store.insert(rowOf(e, snap, wakeAt, iso()));
          const at = iso();
          for (const it of added) store.addEffect({ ...it, actorId, createdAt: at });
          if (snap.status === 'done') store.clearWork(actorId);
        });
      } catch (err) {
        remove(e);
        failAll(e, err, e.mailbox);
        throw err;
      }
      e.busy = false;
      e.step = 1;
      e.wakeAt = wakeAt;
      e.view = view(e);
      if (wakeAt !== null) noteWake(wakeAt);
      for (const it of added) dispatch(e, it);
      for (const a of after) {
        try {
          a.exec?.(a.info, a.params);
        } catch (err) {
          log(`actor ${actorId}: an after-commit action failed`, err);
        }
      }
      if (e.view.status === 'done') remove(e);
      else pump(e);
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
        if (stopped) throw hostStopped();
        let e = live.get(actorId);
        if (!e) {
          admit();
          const loaded = load(actorId);
          if (loaded === undefined) throw actorNotFound(actorId);
          if (loaded === 'done') {
            return Promise.resolve({ outcome: 'final', actor: read(actorId)! });
          }
          if (loaded === 'faulted') {
            const eventId = o.id ?? randomUUID();
            const at = iso();
            return store
              .transact(() => store.storePending(actorId, eventId, JSON.stringify(event), at))
              .then((stored) => ({ outcome: stored ? 'stored' : 'duplicate', actor: read(actorId)! }) as const);
          }
          e = loaded;
        }
        const entry = e;
        return new Promise<DeliverResult>((resolve, reject) => {
          entry.mailbox.push({ event, eventId: o.id ?? randomUUID(), resolve, reject });
          pump(entry);
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
      let e = live.get(actorId);
      if (!e) {
        const stored = read(actorId);
        if (!stored || stored.machine !== def.name) return Promise.reject(actorNotFound(actorId));
        if (stored.status !== 'active' || test(stored)) return Promise.resolve(answer(stored));
        try {
          admit();
          const loaded = load(actorId);
          if (!loaded || typeof loaded === 'string') return Promise.resolve(answer(read(actorId)!));
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

    read,

    /** The operator's retry of a faulted actor: it runs again from its stored state, stored events first. */
    async retry(actorId: string): Promise<ActorView | undefined> {
      admit();
      const cleared = await store.transact(() => store.clearFault(actorId, iso()));
      if (!cleared) return undefined;
      reloads.delete(actorId);
      await loadOrFault(actorId);
      return read(actorId);
    },

    /** The operator's abandon of a faulted actor: it is marked done and never runs again. */
    async abandon(actorId: string): Promise<boolean> {
      const row = store.get(actorId);
      if (!row?.faultedAt || row.done) return false;
      const def = defs.get(row.machine);
      let state: StoredState | undefined;
      try {
        state = def ? readRow(def, row) : undefined;
      } catch {
        state = { value: row.state ?? 'unknown', context: {} };
      }
      return store.transact(() => {
        const ok = store.abandon(actorId, iso());
        if (ok && def?.abandon && state) def.abandon(actorId, { value: state.value, context: state.context });
        return ok;
      });
    },

    isLive(actorId: string): boolean {
      return live.has(actorId);
    },
    liveCount(): number {
      return live.size;
    },

    /** Stops the scheduler and every live actor after the steps being written commit; their rows stay. */
    async stop(): Promise<void> {
      stopped = true;
      if (timer !== undefined) clock.clearTimer(timer);
      timer = undefined;
      if (purgeTimer !== undefined) clock.clearTimer(purgeTimer);
      for (const h of reloadTimers) clock.clearTimer(h);
      reloadTimers.clear();
      const busy = [...live.values()].filter((e) => e.busy);
      // Steps under way finish (their transaction is queued); wait for them a few turns at most.
      for (let i = 0; i < 50 && busy.some((e) => e.busy); i++) await new Promise((r) => setTimeout(r, 10));
      for (const e of [...live.values()]) {
        remove(e);
        failAll(e, hostStopped(), e.mailbox);
        e.mailbox = [];
      }
      for (const w of capacityWaiters) w();
      capacityWaiters = [];
    },
  };
}

export type ActorHost = ReturnType<typeof createActorHost>;
