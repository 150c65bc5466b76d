import type Database from 'better-sqlite3';
import { StoreError } from './errors.ts';
import type { Writer } from './writer.ts';

/** An actor's row as stored. `snapshot` is JSON in the format of its machine version. */
export interface StoredActor {
  actorId: string;
  machine: string;
  machineVersion: number;
  snapshot: string;
  state: string | null;
  done: number;
  wakeAt: number | null;
  step: number;
  faultedAt: string | null;
  faultReason: string | null;
  abandonedAt: string | null;
  updatedAt: string;
  /** 1 when the actor holds effect intents (`get` only). */
  hasEffects?: number;
  /** 1 when the actor has stored events waiting (`get` only). */
  hasPending?: number;
}

/** What a step writes of the actor row itself. */
export interface ActorWrite {
  actorId: string;
  machine: string;
  machineVersion: number;
  snapshot: string;
  state: string;
  done: boolean;
  wakeAt: number | null;
  updatedAt: string;
}

/** An effect intent: an invoked source the committed state asked for, with its input. */
export interface StoredEffect {
  key: string;
  actorId: string;
  invokeId: string;
  src: string;
  /** JSON. */
  input: string;
  createdAt: string;
}

/** An external event stored for an actor that could not run it yet. */
export interface PendingEvent {
  seq: number;
  eventId: string;
  /** JSON. */
  event: string;
}

export interface ActorListFilter {
  machine?: string;
  state?: string;
  faulted?: boolean;
  /** Only actors whose id sorts after this one (paging). */
  after?: string;
  limit: number;
}

/** Another writer committed a step of this actor since it was read: the reader must reload. */
export class StepConflictError extends StoreError {
  constructor(actorId: string, expectedStep: number) {
    super('ACTOR_STEP_CONFLICT', `actor ${actorId} is no longer at step ${expectedStep}`, {
      httpStatus: 503,
      transient: true,
    });
  }
}

/**
 * The storage seam of the actor host: snapshots, the durable inbox, effect intents and wake times. Reads run
 * outside any transaction; writes run only inside `transact`, which resolves once its transaction is committed
 * and durable. Nothing here assumes one process: a step's write is conditional on the step it read
 * (`update`), event ids are unique per actor in the table itself, and effect keys are derived from the
 * committed step. A PostgreSQL implementation, with actors owned by leases across several API processes,
 * satisfies the same interface.
 */
export interface ActorStore {
  /** Runs `fn` in a transaction; resolves with its result once committed and on disk. */
  transact<T>(fn: () => T, opts?: { bounded?: boolean }): Promise<T>;
  /** Inside `transact`: runs `fn` in a nested savepoint, rolled back alone if it throws. */
  nested<T>(fn: () => T): T;

  get(actorId: string): StoredActor | undefined;
  effectsOf(actorId: string): StoredEffect[];
  pendingEventsOf(actorId: string): PendingEvent[];
  /** Machines and versions of every actor that is not done, with a count and one example id each. */
  liveVersions(): Array<{ machine: string; machineVersion: number; count: number; example: string }>;
  /** The earliest wake time of a runnable actor, or null. */
  nextWakeAt(): number | null;
  /** Runnable actors whose wake time is at or before `now`, earliest first. */
  dueWakes(now: number, limit: number): Array<{ actorId: string; wakeAt: number }>;
  /** Runnable actors holding effect intents or pending events (what a start must look at), by id. */
  actorsToRecover(after: string, limit: number): string[];
  list(filter: ActorListFilter): StoredActor[];
  counts(): { waiting: number; faulted: number };

  /** Inside `transact`. Throws a unique violation if the actor exists. */
  insert(row: ActorWrite): void;
  /** Inside `transact`. Writes the actor's next step; throws StepConflictError unless it is at `expectedStep`. */
  update(row: ActorWrite, expectedStep: number): void;
  /** Inside `transact`. True if this event id was already recorded for the actor (applied or pending). */
  hasEvent(actorId: string, eventId: string): boolean;
  /** Inside `transact`. Records an event id as applied. */
  recordApplied(actorId: string, eventId: string, at: string): void;
  /** Inside `transact`. Stores an event to apply later; false if its id is already recorded. */
  storePending(actorId: string, eventId: string, eventJson: string, at: string): boolean;
  /** Inside `transact`. Marks stored events applied (their payload is dropped, the id kept). */
  markApplied(seqs: readonly number[]): void;
  addEffect(effect: StoredEffect): void;
  deleteEffect(key: string): void;
  /** Inside `transact`. The actor is done: its effect intents and inbox rows go. */
  clearWork(actorId: string): void;
  fault(actorId: string, reason: string, at: string): void;
  clearFault(actorId: string, at: string): boolean;
  /** Inside `transact`. Marks a faulted actor done by the operator's decision. */
  abandon(actorId: string, at: string): boolean;
  /** Deletes applied inbox ids older than `before` (ISO): duplicates are only caught within that window. */
  purgeAppliedBefore(before: string, limit: number): number;
}

/** The SQLite implementation of the actor host's storage, over the service database and its writer. */
export function createActorStore(sqlite: Database.Database, writer: Pick<Writer, 'write'>): ActorStore {
  const q = {
    // One statement for what loading an actor needs to know: most have no intents and no stored events.
    get: sqlite.prepare(
      `select actor_id as actorId, machine, machine_version as machineVersion, snapshot, state, done,
              wake_at as wakeAt, step, faulted_at as faultedAt, fault_reason as faultReason,
              abandoned_at as abandonedAt, updated_at as updatedAt,
              exists (select 1 from actor_effects e where e.actor_id = s.actor_id) as hasEffects,
              exists (select 1 from actor_inbox i where i.actor_id = s.actor_id and i.status = 'pending') as hasPending
         from actor_snapshots s where actor_id = ?`,
    ),
    effectsOf: sqlite.prepare(
      `select key, actor_id as actorId, invoke_id as invokeId, src, input, created_at as createdAt
         from actor_effects where actor_id = ? order by key`,
    ),
    pendingOf: sqlite.prepare(
      `select seq, event_id as eventId, event from actor_inbox
        where actor_id = ? and status = 'pending' order by seq`,
    ),
    liveVersions: sqlite.prepare(
      `select machine, machine_version as machineVersion, count(*) as count, min(actor_id) as example
         from actor_snapshots where done = 0 group by machine, machine_version`,
    ),
    nextWake: sqlite.prepare(
      `select min(wake_at) as at from actor_snapshots
        where wake_at is not null and done = 0 and faulted_at is null`,
    ),
    due: sqlite.prepare(
      `select actor_id as actorId, wake_at as wakeAt from actor_snapshots
        where wake_at is not null and done = 0 and faulted_at is null and wake_at <= ?
        order by wake_at limit ?`,
    ),
    toRecover: sqlite.prepare(
      `select actor_id as actorId from (
          select actor_id from actor_effects where actor_id > @after
          union select actor_id from actor_inbox where status = 'pending' and actor_id > @after
        ) as w
        where exists (select 1 from actor_snapshots s
                       where s.actor_id = w.actor_id and s.done = 0 and s.faulted_at is null)
        order by actor_id limit @limit`,
    ),
    counts: sqlite.prepare(
      `select (select count(*) from actor_snapshots where done = 0 and faulted_at is null) as live,
              (select count(*) from actor_snapshots where faulted_at is not null and done = 0) as faulted`,
    ),
    insert: sqlite.prepare(
      `insert into actor_snapshots (actor_id, machine, machine_version, snapshot, state, done, wake_at, step, updated_at)
       values (@actorId, @machine, @machineVersion, @snapshot, @state, @done, @wakeAt, 1, @updatedAt)`,
    ),
    // Positional parameters: binding by name costs a lookup per parameter on the hottest statement of the host.
    update: sqlite.prepare(
      `update actor_snapshots
          set machine_version = ?, snapshot = ?, state = ?, done = ?, wake_at = ?, step = step + 1, updated_at = ?
        where actor_id = ? and step = ? and faulted_at is null and done = 0`,
    ),
    hasEvent: sqlite.prepare('select 1 from actor_inbox where actor_id = ? and event_id = ?').pluck(),
    recordApplied: sqlite.prepare(
      `insert into actor_inbox (actor_id, event_id, event, status, created_at) values (?, ?, null, 'applied', ?)`,
    ),
    storePending: sqlite.prepare(
      `insert into actor_inbox (actor_id, event_id, event, status, created_at) values (?, ?, ?, 'pending', ?)
       on conflict (actor_id, event_id) do nothing`,
    ),
    markApplied: sqlite.prepare(`update actor_inbox set status = 'applied', event = null where seq = ?`),
    addEffect: sqlite.prepare(
      `insert into actor_effects (key, actor_id, invoke_id, src, input, created_at)
       values (@key, @actorId, @invokeId, @src, @input, @createdAt)`,
    ),
    deleteEffect: sqlite.prepare('delete from actor_effects where key = ?'),
    clearEffects: sqlite.prepare('delete from actor_effects where actor_id = ?'),
    clearInbox: sqlite.prepare('delete from actor_inbox where actor_id = ?'),
    fault: sqlite.prepare(
      'update actor_snapshots set faulted_at = ?, fault_reason = ?, updated_at = ? where actor_id = ? and done = 0',
    ),
    clearFault: sqlite.prepare(
      `update actor_snapshots set faulted_at = null, fault_reason = null, updated_at = ?
        where actor_id = ? and faulted_at is not null and done = 0`,
    ),
    abandon: sqlite.prepare(
      `update actor_snapshots set done = 1, wake_at = null, abandoned_at = ?, updated_at = ?
        where actor_id = ? and faulted_at is not null and done = 0`,
    ),
    purge: sqlite.prepare(
      `delete from actor_inbox where seq in (
         select seq from actor_inbox where status = 'applied' and created_at < ? limit ?)`,
    ),
  };
  const savepoint = sqlite.prepare('SAVEPOINT actor_step');
  const release = sqlite.prepare('RELEASE actor_step');
  const rollbackTo = sqlite.prepare('ROLLBACK TO actor_step');

  const list = (f: ActorListFilter): StoredActor[] => {
    const where = ['actor_id > @after'];
    if (f.faulted === true) where.push('faulted_at is not null and done = 0');
    else if (f.faulted === false) where.push('faulted_at is null and done = 0');
    else where.push('done = 0');
    if (f.machine !== undefined) where.push('machine = @machine');
    if (f.state !== undefined) where.push('state = @state');
    return sqlite
      .prepare(
        `select actor_id as actorId, machine, machine_version as machineVersion, snapshot, state, done,
                wake_at as wakeAt, step, faulted_at as faultedAt, fault_reason as faultReason,
                abandoned_at as abandonedAt, updated_at as updatedAt
           from actor_snapshots where ${where.join(' and ')} order by actor_id limit @limit`,
      )
      .all({ after: f.after ?? '', machine: f.machine, state: f.state, limit: f.limit }) as StoredActor[];
  };

  const row = (r: ActorWrite) => ({ ...r, done: r.done ? 1 : 0 });

  return {
    transact: (fn, opts) => writer.write(fn, opts),
    nested<T>(fn: () => T): T {
      savepoint.run();
      try {
        const out = fn();
        release.run();
        return out;
      } catch (err) {
        rollbackTo.run();
        release.run();
        throw err;
      }
    },
    get: (actorId) => q.get.get(actorId) as StoredActor | undefined,
    effectsOf: (actorId) => q.effectsOf.all(actorId) as StoredEffect[],
    pendingEventsOf: (actorId) => q.pendingOf.all(actorId) as PendingEvent[],
    liveVersions: () =>
      q.liveVersions.all() as Array<{ machine: string; machineVersion: number; count: number; example: string }>,
    nextWakeAt: () => (q.nextWake.get() as { at: number | null }).at,
    dueWakes: (now, limit) => q.due.all(now, limit) as Array<{ actorId: string; wakeAt: number }>,
    actorsToRecover: (after, limit) =>
      (q.toRecover.all({ after, limit }) as Array<{ actorId: string }>).map((r) => r.actorId),
    list,
    counts() {
      const c = q.counts.get() as { live: number; faulted: number };
      return { waiting: c.live, faulted: c.faulted };
    },
    insert(r) {
      q.insert.run(row(r));
    },
    update(r, expectedStep) {
      const changed = q.update.run(
        r.machineVersion,
        r.snapshot,
        r.state,
        r.done ? 1 : 0,
        r.wakeAt,
        r.updatedAt,
        r.actorId,
        expectedStep,
      ).changes;
      if (changed !== 1) throw new StepConflictError(r.actorId, expectedStep);
    },
    hasEvent: (actorId, eventId) => q.hasEvent.get(actorId, eventId) !== undefined,
    recordApplied(actorId, eventId, at) {
      q.recordApplied.run(actorId, eventId, at);
    },
    storePending: (actorId, eventId, eventJson, at) =>
      q.storePending.run(actorId, eventId, eventJson, at).changes === 1,
    markApplied(seqs) {
      for (const seq of seqs) q.markApplied.run(seq);
    },
    addEffect(e) {
      q.addEffect.run(e);
    },
    deleteEffect(key) {
      q.deleteEffect.run(key);
    },
    clearWork(actorId) {
      q.clearEffects.run(actorId);
      q.clearInbox.run(actorId);
    },
    fault(actorId, reason, at) {
      q.fault.run(at, reason, at, actorId);
    },
    clearFault: (actorId, at) => q.clearFault.run(at, actorId).changes === 1,
    abandon(actorId, at) {
      if (q.abandon.run(at, at, actorId).changes !== 1) return false;
      q.clearEffects.run(actorId);
      q.clearInbox.run(actorId);
      return true;
    },
    purgeAppliedBefore: (before, limit) => q.purge.run(before, limit).changes,
  };
}
