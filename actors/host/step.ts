/**
 * Step and effects: an actor's mail applied in one transaction with XState's pure transition (the new state, the
 * effect intents it produced, its wake time, the rows it describes and their outbox events), then, once committed,
 * its effects dispatched, its senders answered and its waiters woken. A step that fails is retried with back-off and
 * faults the actor after too many; a save that fails drops it from memory (faults.ts reloads it).
 */
import type { AnyMachineSnapshot, EventObject, StateValue } from 'xstate';
import { InternalError } from '../../chains/domain/errors.ts';
import type { StoredEffect } from '../../store/actor-store.ts';
import { type Entry, type HostCore, type Intent, MAX_BACKOFF_MS, type Mail } from './core.ts';
import type { PureTransition } from './pure-transition.ts';
import type { AnyMachineDefinition, StoredState } from './types.ts';

/** Built-in actions the host accepts from a transition: the rest would need a live XState runtime. */
const PURE_BUILTINS = new Set(['xstate.assign', 'xstate.stopChild', 'xstate.log']);

export interface StepOutcome {
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

/**
 * An effect's failure as the machine sees it: `{code, message}` only, never a cause chain or a stack, and `at`, when
 * it was seen (time is data: a machine that retries later computes its wake time from it).
 */
function describeFailure(err: unknown, at: number): { code: string; message: string; at: number } {
  const e = err as { code?: unknown; message?: unknown } | null;
  return {
    code: typeof e?.code === 'string' ? e.code : 'EFFECT_FAILED',
    message: typeof e?.message === 'string' ? e.message : 'the effect failed',
    at,
  };
}

export function createSteps(
  core: HostCore,
  deps: {
    /** A commit set a wake time (the scheduler arms its timer earlier if it is). */
    noteWake(at: number): void;
    /** The actor kept failing: fault it (faults.ts). */
    fault(e: Entry, error: unknown): Promise<void>;
    /** A save failed: drop it and reload it from its committed state (faults.ts). */
    dropAfterFailedSave(e: Entry, err: unknown, batch: Mail[]): void;
    /** A step went through: the actor's reload back-off starts over. */
    forgetReloads(actorId: string): void;
  },
) {
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

  /** Applies a batch of mail in one transaction (called inside `core.store.transact`). Never throws for a bad step. */
  function runStep(e: Entry, batch: Mail[]): StepOutcome {
    const at = core.iso();
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
      if (mail.eventId !== undefined && mail.pendingSeq === undefined && core.store.hasEvent(e.id, mail.eventId)) {
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
        // An external event, resolved by its definition in this transaction (what it decides is written with the step).
        const event =
          e.def.resolveEvent && mail.eventId !== undefined ? e.def.resolveEvent(e.id, snap, mail.event) : mail.event;
        const [n, actions] = ahead ? ahead.result : core.steppers.get(e.def)!.next(snap, event);
        if (n.status === 'error') throw (n as { error?: unknown }).error ?? new Error('the machine errored');
        if (actions.length > 0) sortActions(e.def, e.id, nextStep, actions, intents, added, after);
        if (mail.intentKey !== undefined) intents.delete(mail.intentKey);
        if (intents.size > 0) {
          const active = activeInvokes(n);
          for (const [key, it] of intents) if (!active.has(it.invokeId)) intents.delete(key);
        }
        if (n !== snap) e.def.persist(e.id, n, snap);
        if (mail.pendingSeq !== undefined) core.store.markApplied([mail.pendingSeq]);
        // A finished actor's inbox is deleted with it in this same transaction: nothing to record then.
        else if (mail.eventId !== undefined && n.status !== 'done') core.store.recordApplied(e.id, mail.eventId, at);
        return n;
      };
      try {
        snap = alone ? apply() : core.store.nested(apply);
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
        out.lags.push(core.clock.now() - mail.wakeAt);
      }
    }
    out.snap = snap;
    if (out.applied.length === 0 && !e.needsWrite) return out;

    const done = snap.status === 'done';
    let wakeAt = done ? null : (e.def.wakeAt?.(snap) ?? null);
    if (wokeAt !== undefined && wakeAt !== null && wakeAt <= wokeAt) {
      core.log(`actor ${e.id}: a WAKE left its wake time at or before the one it answered; it is not woken again`);
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
          // Carried over from an older row: it may have run before.
          redelivered: true,
        };
        if (!activeInvokes(snap).has(l.invokeId)) continue;
        out.intents.set(intent.key, intent);
        out.added.push(intent);
      }
    }
    core.store.update(rowOf(e, snap, wakeAt, at), e.step);
    for (const key of e.intents.keys()) if (!out.intents.has(key)) core.store.deleteEffect(key);
    for (const it of out.added) {
      core.store.addEffect({ ...it, actorId: e.id, createdAt: at } satisfies StoredEffect);
    }
    if (done) core.store.clearWork(e.id);
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

  function dispatch(e: Entry, intent: Intent, spec = e.def.effects[intent.src]): void {
    if (!spec) {
      // Refused when the intent was made; only a definition that dropped an effect since can get here.
      core.log(`actor ${e.id}: effect ${intent.src} is not defined; reported to the machine as failed`);
      e.mailbox.push({
        event: {
          type: `xstate.error.actor.${intent.invokeId}`,
          error: { code: 'EFFECT_UNKNOWN', message: `effect ${intent.src} is not defined`, at: core.clock.now() },
          actorId: intent.invokeId,
        } as EventObject,
        intentKey: intent.key,
      });
      return;
    }
    e.running.add(intent.key);
    const input = JSON.parse(intent.input) as unknown;
    Promise.resolve()
      .then(() => spec.run(input, { actorId: e.id, key: intent.key, redelivered: intent.redelivered === true }))
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
            error: describeFailure(err, core.clock.now()),
            actorId: intent.invokeId,
          } as EventObject),
      );
  }

  function complete(e: Entry, intent: Intent, event: EventObject): void {
    e.running.delete(intent.key);
    // A dropped actor is reloaded from its committed state, where this intent is still pending.
    if (e.gone || core.state.stopped) return;
    e.mailbox.push({ event, intentKey: intent.key });
    pump(e);
  }

  function pump(e: Entry): void {
    if (e.busy || e.gone || e.retryTimer !== undefined) return;
    if (e.mailbox.length === 0 && !e.needsWrite) {
      core.maybeEvict(e);
      return;
    }
    if (core.state.stopped) return;
    const batch = e.mailbox.splice(0, e.mailbox.length);
    e.busy = true;
    core.store
      .transact(() => runStep(e, batch), { bounded: false })
      .then(
        (out) => afterStep(e, batch, out),
        (err) => {
          if (err instanceof StepFailure) {
            afterStep(e, batch, notWritten(e, err.error));
            return;
          }
          e.busy = false;
          deps.dropAfterFailedSave(e, err, batch);
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
      e.view = core.view(e);
      for (const key of previous.keys()) if (!e.intents.has(key)) e.running.delete(key);
      for (const lag of out.lags) core.onWakeLag?.(lag);
      if (out.wakeAt !== null) deps.noteWake(out.wakeAt);
    }
    for (const m of out.applied) m.resolve?.({ outcome: 'applied', actor: e.view });
    for (const m of out.duplicates) m.resolve?.({ outcome: 'duplicate', actor: e.view });
    for (const m of out.stale) m.resolve?.({ outcome: 'applied', actor: e.view });
    if (!core.state.stopped && !core.state.draining) for (const it of out.added) dispatch(e, it);
    for (const a of out.after) {
      try {
        a.exec?.(a.info, a.params);
      } catch (err) {
        core.log(`actor ${e.id}: an after-commit action failed`, err);
      }
    }
    settleWaiters(e);
    if (e.view.status === 'done') {
      core.remove(e);
      for (const m of e.mailbox) m.resolve?.({ outcome: 'final', actor: e.view });
      e.mailbox = [];
      return;
    }
    if (out.failed) {
      const rest = batch.slice(out.failed.index);
      e.mailbox.unshift(...rest);
      e.failures += 1;
      core.log(`actor ${e.id}: a step failed (${e.failures}/${core.maxStepFailures})`, out.failed.error);
      if (e.failures >= core.maxStepFailures) {
        void deps.fault(e, out.failed.error);
        return;
      }
      e.retryTimer = core.clock.setTimer(
        () => {
          e.retryTimer = undefined;
          pump(e);
        },
        Math.min(MAX_BACKOFF_MS, core.retryBaseMs * 2 ** (e.failures - 1)),
      );
      return;
    }
    e.failures = 0;
    deps.forgetReloads(e.id);
    pump(e);
  }

  return { runStep, sortActions, rowOf, activeInvokes, pump, dispatch, settleWaiters, failAll };
}

export type Steps = ReturnType<typeof createSteps>;
