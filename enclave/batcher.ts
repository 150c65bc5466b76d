/**
 * Adaptive batching of items into worker tasks, shared by every batched crypto operation (key generation,
 * signing). Piscina's per-task messaging is the largest main-thread cost per operation, so items travel in
 * batches:
 *
 * - at most `maxTasksInFlight` tasks (all lanes together) are in flight, so a worker finishing one task finds
 *   the next one already queued;
 * - items arriving while every slot is taken wait, and leave together as one task when a slot frees (at most
 *   the lane's `maxItemsPerTask`, spread over the free slots);
 * - under light load an item leaves alone, one event-loop turn (setImmediate) after it arrived, which gathers
 *   the items of one socket read without adding a timer's delay.
 *
 * Lanes (one per task kind) take turns round-robin. Each item settles with its own result, so one bad item
 * fails only itself; a task that fails as a whole (the worker died) fails its items.
 */
import { type ItemResult, unwrapItem } from './errors.ts';

interface Queued<I, R> {
  item: I;
  resolve(value: R): void;
  reject(error: unknown): void;
}

interface Lane {
  /** Items waiting; `head` is the first not yet dispatched. */
  queue: Queued<unknown, unknown>[];
  head: number;
  maxItemsPerTask: number;
  run(items: unknown[]): Promise<ItemResult<unknown>[]>;
}

/** Creates a batcher whose lanes share `maxTasksInFlight` task slots. */
export function createBatcher(options: { maxTasksInFlight: number }) {
  const maxTasksInFlight = Math.max(1, options.maxTasksInFlight);
  const lanes: Lane[] = [];
  let nextLane = 0;
  let tasksInFlight = 0;
  let scheduled: NodeJS.Immediate | undefined;
  let closed = false;

  function onTaskSettled(): void {
    tasksInFlight--;
    dispatch();
  }

  function send(lane: Lane, size: number): void {
    const chunk = lane.queue.slice(lane.head, lane.head + size);
    lane.head += size;
    if (lane.head === lane.queue.length) {
      lane.queue = [];
      lane.head = 0;
    }
    tasksInFlight++;
    lane
      .run(chunk.map((queued) => queued.item))
      .then(
        (results) => {
          for (let i = 0; i < chunk.length; i++) {
            const queued = chunk[i]!;
            const result = results[i];
            try {
              queued.resolve(unwrapItem(result ?? { ok: false, code: 'INTERNAL', message: 'missing item result' }));
            } catch (error) {
              queued.reject(error);
            }
          }
        },
        (error: unknown) => {
          for (const queued of chunk) queued.reject(error);
        },
      )
      .then(onTaskSettled);
  }

  function dispatch(): void {
    scheduled = undefined;
    let idleLanes = 0;
    while (tasksInFlight < maxTasksInFlight && idleLanes < lanes.length) {
      const lane = lanes[nextLane]!;
      nextLane = (nextLane + 1) % lanes.length;
      const waiting = lane.queue.length - lane.head;
      if (waiting === 0) {
        idleLanes++;
        continue;
      }
      idleLanes = 0;
      send(lane, Math.min(lane.maxItemsPerTask, Math.ceil(waiting / (maxTasksInFlight - tasksInFlight))));
    }
  }

  return {
    /**
     * Adds a lane: `run` sends one task holding `items` and resolves with one ItemResult per item, in order.
     * Returns the function that submits one item and settles with that item's own result.
     */
    lane<I, R>(laneOptions: {
      maxItemsPerTask: number;
      run(items: I[]): Promise<ItemResult<R>[]>;
    }): (item: I) => Promise<R> {
      const lane: Lane = {
        queue: [],
        head: 0,
        maxItemsPerTask: Math.max(1, laneOptions.maxItemsPerTask),
        run: laneOptions.run as Lane['run'],
      };
      lanes.push(lane);
      return (item: I): Promise<R> => {
        if (closed) return Promise.reject(new Error('the crypto pool is closed'));
        return new Promise<R>((resolve, reject) => {
          lane.queue.push({ item, resolve: resolve as (value: unknown) => void, reject });
          if (tasksInFlight < maxTasksInFlight) scheduled ??= setImmediate(dispatch);
        });
      };
    },
    /** Tasks currently in flight (for tests and metrics). */
    get tasksInFlight(): number {
      return tasksInFlight;
    },
    /** Refuses new items and fails those not yet dispatched; tasks in flight settle on their own. */
    close(): void {
      closed = true;
      if (scheduled) clearImmediate(scheduled);
      scheduled = undefined;
      for (const lane of lanes) {
        const refused = lane.queue.slice(lane.head);
        lane.queue = [];
        lane.head = 0;
        for (const queued of refused) queued.reject(new Error('the crypto pool is closed'));
      }
    },
  };
}

export type Batcher = ReturnType<typeof createBatcher>;
