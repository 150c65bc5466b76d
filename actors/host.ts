import { type Actor, type AnyStateMachine, createActor, type SnapshotFrom } from 'xstate';
import type { Store } from '../store/index.ts';

/** A persisted snapshot as the host sees it. */
export type PersistedSnapshot = {
  status: 'active' | 'done' | 'error' | 'stopped';
  value: unknown;
  context: Record<string, unknown>;
};

/**
 * How the host runs one kind of machine. `persist` writes the row(s) the snapshot describes (and any
 * outbox events); it runs inside the same SQLite transaction as the snapshot itself.
 */
export interface MachineDefinition<M extends AnyStateMachine = AnyStateMachine> {
  name: string;
  version: number;
  machine: M;
  persist(actorId: string, snapshot: SnapshotFrom<M>, previous: SnapshotFrom<M> | undefined): void;
  /** Absolute epoch ms at which the actor wants a `{type: 'WAKE'}` event, or null. Time is data. */
  wakeAt?(snapshot: SnapshotFrom<M>): number | null;
}

type HostDeps = Pick<Store, 'writer' | 'snapshots'> & {
  definitions: MachineDefinition[];
  now?: () => number;
  log?: (msg: string, err?: unknown) => void;
};

type Waiter = { predicate: (s: PersistedSnapshot) => boolean; resolve: (s: PersistedSnapshot) => void };

interface Live {
  def: MachineDefinition;
  actor: Actor<AnyStateMachine>;
  /** Last snapshot handed to the writer. */
  lastQueued?: SnapshotFrom<AnyStateMachine>;
  /** Last snapshot the database holds (committed). */
  committed: PersistedSnapshot;
  waiters: Waiter[];
  timer?: NodeJS.Timeout;
  /** Serializes this actor's writes so they commit in order. */
  chain: Promise<unknown>;
}

const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * The actor host: starts and restores persisted actors, persists every snapshot together with the row
 * it describes in one transaction (with the machine's version), and wakes actors at their stored
 * `wakeAt`, also after a restart. Only non-final actors stay in memory.
 */
export function createActorHost(deps: HostDeps) {
  const defs = new Map(deps.definitions.map((d) => [d.name, d]));
  const live = new Map<string, Live>();
  const now = deps.now ?? Date.now;
  const log = deps.log ?? ((msg: string, err?: unknown) => console.error(msg, err ?? ''));
  let stopped = false;

  function definition(name: string): MachineDefinition {
    const d = defs.get(name);
    if (!d) throw new Error(`unknown machine ${name}`);
    return d;
  }

  function snapshotRow(def: MachineDefinition, actorId: string, actor: Actor<AnyStateMachine>) {
    const snap = actor.getSnapshot();
    const persisted = actor.getPersistedSnapshot() as unknown as PersistedSnapshot;
    const wakeAt = def.wakeAt?.(snap) ?? null;
    return {
      snap,
      persisted,
      row: {
        actorId,
        machine: def.name,
        machineVersion: def.version,
        snapshot: JSON.stringify(persisted),
        done: snap.status === 'active' ? 0 : 1,
        wakeAt,
        updatedAt: new Date(now()).toISOString(),
      },
    };
  }

  function schedule(entry: Live, actorId: string, wakeAt: number | null): void {
    if (entry.timer) clearTimeout(entry.timer);
    entry.timer = undefined;
    if (wakeAt === null || stopped) return;
    const delay = Math.min(Math.max(0, wakeAt - now()), MAX_TIMER_MS);
    entry.timer = setTimeout(() => {
      entry.timer = undefined;
      if (live.get(actorId) === entry) entry.actor.send({ type: 'WAKE' });
    }, delay);
  }

  function settle(entry: Live, actorId: string, persisted: PersistedSnapshot): void {
    entry.committed = persisted;
    entry.waiters = entry.waiters.filter((w) => {
      if (!w.predicate(persisted)) return true;
      w.resolve(persisted);
      return false;
    });
    if (persisted.status !== 'active') {
      if (entry.timer) clearTimeout(entry.timer);
      live.delete(actorId);
      for (const w of entry.waiters) w.resolve(persisted);
      entry.waiters = [];
    }
  }

  /** Subscribes the persistence loop: each new snapshot is written with its row, in order. */
  function attach(entry: Live, actorId: string): void {
    entry.actor.subscribe({
      next: () => {
        const current = entry.actor.getSnapshot();
        if (stopped || current === entry.lastQueued || current.status === 'stopped') return;
        const { snap, persisted, row } = snapshotRow(entry.def, actorId, entry.actor);
        const previous = entry.lastQueued;
        entry.lastQueued = snap;
        entry.chain = entry.chain
          .then(() =>
            deps.writer.write(() => {
              entry.def.persist(actorId, snap, previous);
              deps.snapshots.save(row);
            }),
          )
          .then(
            () => {
              settle(entry, actorId, persisted);
              // Only the newest snapshot of a live actor decides its wake time.
              if (persisted.status === 'active' && entry.lastQueued === snap && live.get(actorId) === entry) {
                schedule(entry, actorId, row.wakeAt);
              }
            },
            (err) =>
              log(`actor ${actorId}: persisting a snapshot failed; the actor stays at its last stored state`, err),
          );
      },
      error: (err) => log(`actor ${actorId} errored`, err),
    });
  }

  return {
    /**
     * Creates an actor and durably stores its initial snapshot, with `initialWrite` (the row it
     * describes) in the same transaction, before it starts: a failing `initialWrite` (a duplicate, say)
     * rejects and nothing is stored or started.
     */
    async spawn(name: string, actorId: string, input: unknown, initialWrite?: () => void): Promise<void> {
      const def = definition(name);
      const actor = createActor(def.machine, { input, id: actorId });
      const { snap, persisted, row } = snapshotRow(def, actorId, actor);
      await deps.writer.write(() => {
        initialWrite?.();
        deps.snapshots.save(row);
      });
      const entry: Live = { def, actor, lastQueued: snap, committed: persisted, waiters: [], chain: Promise.resolve() };
      live.set(actorId, entry);
      attach(entry, actorId);
      actor.start();
      if (live.get(actorId) === entry && entry.lastQueued === snap) schedule(entry, actorId, row.wakeAt);
    },

    /** Restores every stored non-final actor (at boot) and re-arms its wake time. Returns how many. */
    restoreAll(): number {
      let n = 0;
      for (const row of deps.snapshots.listLive()) {
        const def = defs.get(row.machine);
        if (!def) {
          log(`actor ${row.actorId}: no machine named ${row.machine}; left as stored`);
          continue;
        }
        if (row.machineVersion !== def.version) {
          log(
            `actor ${row.actorId}: stored with ${row.machine} v${row.machineVersion}, host runs v${def.version}; left as stored`,
          );
          continue;
        }
        const persisted = JSON.parse(row.snapshot) as PersistedSnapshot;
        const actor = createActor(def.machine, { snapshot: persisted as never, id: row.actorId });
        const entry: Live = {
          def,
          actor,
          lastQueued: actor.getSnapshot(),
          committed: persisted,
          waiters: [],
          chain: Promise.resolve(),
        };
        live.set(row.actorId, entry);
        attach(entry, row.actorId);
        actor.start();
        if (live.get(row.actorId) === entry && entry.lastQueued === actor.getSnapshot()) {
          schedule(entry, row.actorId, row.wakeAt);
        }
        n += 1;
      }
      return n;
    },

    /** Sends an event to a live actor; false when the actor is not live (final, or unknown). */
    send(actorId: string, event: { type: string; [k: string]: unknown }): boolean {
      const entry = live.get(actorId);
      if (!entry) return false;
      entry.actor.send(event);
      return true;
    },

    /**
     * Resolves with the first committed snapshot satisfying `predicate`, or with the final one. For an
     * actor that is no longer live, resolves with its stored snapshot.
     */
    waitFor(actorId: string, predicate: (s: PersistedSnapshot) => boolean): Promise<PersistedSnapshot | undefined> {
      const entry = live.get(actorId);
      if (!entry) {
        const row = deps.snapshots.get(actorId);
        return Promise.resolve(row ? (JSON.parse(row.snapshot) as PersistedSnapshot) : undefined);
      }
      if (predicate(entry.committed)) return Promise.resolve(entry.committed);
      return new Promise((resolve) => entry.waiters.push({ predicate, resolve }));
    },

    isLive(actorId: string): boolean {
      return live.has(actorId);
    },

    liveCount(): number {
      return live.size;
    },

    /** Stops every live actor (their stored snapshots stay) after pending writes commit. */
    async stop(): Promise<void> {
      stopped = true;
      const entries = [...live.values()];
      for (const e of entries) {
        if (e.timer) clearTimeout(e.timer);
        e.actor.stop();
      }
      await Promise.allSettled(entries.map((e) => e.chain));
      live.clear();
    },
  };
}

export type ActorHost = ReturnType<typeof createActorHost>;
