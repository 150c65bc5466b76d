/**
 * The scheduler: time is data. One timer is armed for the earliest wake time of all actors (read from the store);
 * shortly before it the actors due by then are loaded and their WAKE transitions computed ahead (pure), and at the
 * time they are woken in batches through their mailboxes. Also the hourly purge of old inbox ids.
 */
import type { EventObject } from 'xstate';
import type { Entry, HostCore } from './core.ts';

const MAX_TIMER_MS = 2 ** 31 - 1;
/** How long before a wake time its actors are loaded. */
const PREFETCH_MS = 100;
const INBOX_RETENTION_MS = 7 * 24 * 3600_000;
const PURGE_EVERY_MS = 3600_000;

export function createScheduler(
  core: HostCore,
  deps: {
    load(actorId: string): Entry | 'done' | 'faulted' | undefined;
    loadOrFault(actorId: string): Promise<unknown>;
    pump(e: Entry): void;
  },
) {
  let timer: unknown;
  let timerFor: number | undefined;
  /** Actors loaded ahead of their wake time (see arm). */
  const prefetched = new Set<Entry>();
  let waking = false;
  let purgeTimer: unknown;

  /**
   * Stopping or stopped: no timer is armed any more. Steps still commit while the host drains (the outcomes of
   * at-most-once effects, a wake under way), and a timer one of them armed would outlive `stop()`: it would keep the
   * process alive until it fired, and then fire into a stopped host.
   */
  const halted = () => core.state.stopped || core.state.draining;

  /** A commit set a wake time: arm the timer earlier if it is. */
  function noteWake(at: number): void {
    if (!core.state.started || halted() || waking) return;
    if (timerFor === undefined || at < timerFor) arm(at);
  }

  function arm(at: number | null): void {
    if (timer !== undefined) core.clock.clearTimer(timer);
    timer = undefined;
    timerFor = undefined;
    if (at === null || halted()) return;
    timerFor = at;
    const until = at - core.clock.now();
    // Shortly before a wake time, the actors due by then are loaded, so that at the time itself only their
    // steps remain to run. A delay above 2^31-1 ms would fire at once: wait the longest allowed, then look again.
    const early = until > PREFETCH_MS;
    const delay = Math.min(MAX_TIMER_MS, Math.max(0, early ? until - PREFETCH_MS : until));
    timer = core.clock.setTimer(() => {
      timer = undefined;
      timerFor = undefined;
      if (early) {
        if (at - core.clock.now() <= PREFETCH_MS) prefetch(at);
        arm(at);
      } else if (core.clock.now() < at) {
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
    for (const d of core.store.dueWakes(until, core.wakeBatch)) {
      if (core.state.stopped) return;
      let e = core.live.get(d.actorId);
      if (!e) {
        if (core.live.size >= core.loadWatermark) return;
        try {
          const loaded = deps.load(d.actorId);
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
        const result = core.steppers.get(e.def)!.next(e.snap, { type: 'WAKE', at: d.wakeAt } as EventObject);
        e.ahead = { from: e.snap, at: d.wakeAt, result };
      } catch {
        // Computed again at the time, where a failure counts.
      }
    }
  }

  async function wakeDue(): Promise<void> {
    if (core.state.stopped || waking) return;
    waking = true;
    try {
      for (;;) {
        const now = core.clock.now();
        const due = core.store.dueWakes(now, core.wakeBatch);
        const pending: Promise<unknown>[] = [];
        for (const d of due) {
          if (core.state.stopped) break;
          if (core.live.size >= core.loadWatermark && !core.live.has(d.actorId)) await core.capacity();
          pending.push(wake(d.actorId, d.wakeAt).catch((err) => core.log(`actor ${d.actorId}: wake failed`, err)));
        }
        await Promise.all(pending);
        if (due.length < core.wakeBatch || core.state.stopped) break;
      }
    } finally {
      waking = false;
      // Loaded ahead for a wake time that has moved since: they leave memory again.
      for (const e of prefetched) deps.pump(e);
      prefetched.clear();
    }
    if (!halted()) arm(core.store.nextWakeAt());
  }

  /** Drops applied event ids past the deduplication window, hourly, a bounded number at a time. */
  function schedulePurge(): void {
    purgeTimer = core.clock.setTimer(() => {
      const before = new Date(core.clock.now() - INBOX_RETENTION_MS).toISOString();
      core.store
        .transact(() => core.store.purgeAppliedBefore(before, 10_000))
        .catch((err) => core.log('purging old inbox ids failed', err))
        .finally(() => {
          if (!halted()) schedulePurge();
        });
    }, PURGE_EVERY_MS);
  }

  function wake(actorId: string, at: number): Promise<unknown> {
    let e: ReturnType<typeof deps.load>;
    try {
      e = deps.load(actorId);
    } catch {
      return deps.loadOrFault(actorId);
    }
    if (!e || typeof e === 'string') return Promise.resolve();
    const entry = e;
    return new Promise((resolve, reject) => {
      entry.mailbox.push({ event: { type: 'WAKE', at } as EventObject, wakeAt: at, resolve, reject });
      deps.pump(entry);
    });
  }

  return {
    noteWake,
    /** Arms the timer for the earliest stored wake time, and the hourly purge. */
    start(): void {
      arm(core.store.nextWakeAt());
      schedulePurge();
    },
    stop(): void {
      if (timer !== undefined) core.clock.clearTimer(timer);
      timer = undefined;
      if (purgeTimer !== undefined) core.clock.clearTimer(purgeTimer);
    },
  };
}

export type Scheduler = ReturnType<typeof createScheduler>;
