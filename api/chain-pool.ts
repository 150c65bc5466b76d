/**
 * Where the signing routes run chain steps whose cost grows with the input (chain-steps.ts): inline on the event
 * loop when the request body is small (a typical permit, transfer or Sui transaction: tens to hundreds of µs, less
 * than a hop to a worker), on a piscina pool of worker threads when it is large. A large payload then costs its
 * own request time, not every other wallet's: the event loop keeps parsing, authenticating and answering other
 * requests while a worker hashes it.
 *
 * Bounded at every step: the chain steps cap their own work (typed-data-limits.ts, the Sui and Stellar caps), input
 * that cannot be copied to a worker is refused (never run on the event loop instead), at most `maxQueue` steps wait
 * for a thread (past that a request is answered 503 with Retry-After at once), a step that has waited
 * `waitLimitMs` without starting is dropped from the queue (503), and a step still running `timeLimitMs` after its
 * worker started it is aborted: piscina stops that worker and starts another (503 for that request). See TaskClock.
 */
import { availableParallelism } from 'node:os';
import { Piscina } from 'piscina';
import { ChainInputError } from '../chains/chain-input-error.ts';
import { ServiceError } from '../chains/domain/errors.ts';
import {
  type ChainStepName,
  type ChainStepStarted,
  type ChainSteps,
  type ChainTask,
  type ChainTaskResult,
  chainSteps,
  JSON_ARGUMENT_STEPS,
} from './chain-steps.ts';

/** `.ts` when run from source (tsx), `.js` when run from the `npm run build` bundle in dist/. */
const SOURCE_EXT = import.meta.url.endsWith('.ts') ? '.ts' : '.js';

/**
 * Request bodies of at least this many bytes run their chain steps on a worker. Below it, the worst case of every
 * step (measured by `npm run bench:adversarial`, docs/benchmarks.md "Worst-case cost per request") holds the event loop for
 * about what parsing and validating a 100 KiB JSON body costs anyway.
 */
export const DEFAULT_INLINE_BELOW_BYTES = 2 * 1024;

/** Steps that may wait for a thread, per thread. */
export const DEFAULT_QUEUE_PER_THREAD = 8;

/**
 * Running time after which a step is aborted and its worker replaced. Every step's work is capped far below it, so
 * a step still running then is stuck (or the machine is overloaded beyond serving large inputs).
 */
export const DEFAULT_TIME_LIMIT_MS = 2_000;

/**
 * Time a step may wait for a thread before it is dropped (and, handed to a worker that is still loading, for that
 * worker to begin it). Loading the chain libraries takes a fraction of a second on an idle machine, seconds on a
 * loaded one.
 */
export const DEFAULT_WAIT_LIMIT_MS = 10_000;

function inline<S extends ChainStepName>(step: S, args: Parameters<ChainSteps[S]>): ReturnType<ChainSteps[S]> {
  return (chainSteps[step] as unknown as (...a: Parameters<ChainSteps[S]>) => ReturnType<ChainSteps[S]>)(...args);
}

function busy(message: string): ServiceError {
  // A transient 503: the error handler adds Retry-After.
  return new ServiceError('SERVICE_BUSY', 503, message, { transient: true });
}

export function createChainPool(
  options: {
    threads?: number;
    inlineBelowBytes?: number;
    /** Steps that may wait for a thread; default DEFAULT_QUEUE_PER_THREAD per thread. */
    maxQueue?: number;
    /** Running time limit of a step; default DEFAULT_TIME_LIMIT_MS. */
    timeLimitMs?: number;
    /** Waiting time limit of a step; default DEFAULT_WAIT_LIMIT_MS. */
    waitLimitMs?: number;
    /** The worker module (default chain.worker); tests pass one that can also hang on purpose. */
    workerFile?: URL;
    /** Called for every step run, with where it ran (for metrics). */
    onRun?: (step: ChainStepName, where: 'inline' | 'worker') => void;
  } = {},
) {
  const onRun = options.onRun ?? (() => {});
  const threads = Math.max(1, options.threads ?? availableParallelism());
  const inlineBelowBytes = options.inlineBelowBytes ?? DEFAULT_INLINE_BELOW_BYTES;
  const maxQueue = Math.max(1, options.maxQueue ?? DEFAULT_QUEUE_PER_THREAD * threads);
  const timeLimitMs = options.timeLimitMs ?? DEFAULT_TIME_LIMIT_MS;
  const waitLimitMs = options.waitLimitMs ?? DEFAULT_WAIT_LIMIT_MS;
  /** Steps submitted to workers and not answered yet: at most one running per thread plus `maxQueue` waiting. */
  let inFlight = 0;
  /** The clocks of steps a worker has been handed and not yet reported as started, by task id. */
  const clocks = new Map<number, TaskClock>();
  /** Threads that have loaded their module (piscina's 'workerCreate'), until destroyed. */
  const loaded = new Set<number>();
  let nextId = 0;
  // Created with the first large input: a process that never sees one starts no thread. Each thread holds its own
  // V8 heap and the chain libraries of the steps, about 45 MB resident; started at once after listening, the two of
  // a 2-core machine were a third of the idle API's memory (docs/benchmarks.md, "Where the API's memory goes").
  let pool: Piscina | undefined;
  const started = (): Piscina => {
    if (pool) return pool;
    pool = new Piscina({
      filename: (options.workerFile ?? new URL(`./chain.worker${SOURCE_EXT}`, import.meta.url)).href,
      // Every thread starts at once, and stays: each loads the chain libraries once.
      minThreads: threads,
      maxThreads: threads,
      maxQueue,
      idleTimeout: Number.POSITIVE_INFINITY,
      // As in the enclave's pools: plain message events, no Atomics hand-off (which stalled under load there).
      atomics: 'disabled',
      // Piscina also hands tasks to a replacement worker still loading its module; this hands a task to an idle,
      // loaded worker only, so that a step never waits (and runs out its clock) behind a worker's start-up.
      loadBalancer: (task, workers) => {
        for (const worker of workers) {
          if (worker.currentUsage === 0 && loaded.has(worker.id) && !worker.terminating && !worker.destroyed) {
            ((task as unknown as Record<symbol, TaskClock | null>)[Piscina.queueOptionsSymbol] ?? null)?.dispatched();
            return worker;
          }
        }
        return null;
      },
    });
    pool.on('workerCreate', (worker: { id: number }) => loaded.add(worker.id));
    pool.on('workerDestroy', (worker: { id: number }) => loaded.delete(worker.id));
    pool.on('message', (message: Partial<ChainStepStarted> | null) => {
      if (typeof message?.chainStepStarted === 'number') clocks.get(message.chainStepStarted)?.running();
    });
    return pool;
  };

  /**
   * A step's deadline, by phase: queued (waitLimitMs from submission: aborting removes it from the queue), handed
   * to a worker (waitLimitMs more for the worker to begin, which a worker of the first set may take to load), and
   * running (timeLimitMs from the worker's "started" message: aborting stops that worker, piscina starts another).
   */
  class TaskClock {
    phase: 'queued' | 'dispatched' | 'running' = 'queued';
    readonly abort = new AbortController();
    private timer: NodeJS.Timeout;
    constructor(private readonly id: number) {
      this.timer = setTimeout(() => this.abort.abort(), waitLimitMs);
    }
    dispatched(): void {
      this.phase = 'dispatched';
      clocks.set(this.id, this);
      this.restart(waitLimitMs);
    }
    running(): void {
      this.phase = 'running';
      clocks.delete(this.id);
      this.restart(timeLimitMs);
    }
    stop(): void {
      clearTimeout(this.timer);
      clocks.delete(this.id);
    }
    private restart(ms: number): void {
      clearTimeout(this.timer);
      this.timer = setTimeout(() => this.abort.abort(), ms);
    }
  }

  async function onWorker<S extends ChainStepName>(
    step: S,
    args: Parameters<ChainSteps[S]>,
  ): Promise<ChainTaskResult<S>> {
    const workers = started();
    if (inFlight >= threads + maxQueue) {
      throw busy(`${maxQueue} large requests are already waiting for a thread; retry later`);
    }
    const id = nextId++;
    const clock = new TaskClock(id);
    inFlight++;
    try {
      // JSON text is quicker to copy than a structured clone of many small objects; the clone runs here, on the
      // event loop. The clock rides along for the balancer; the copy to the worker leaves symbol keys out.
      const payload: ChainTask<S> = JSON_ARGUMENT_STEPS.has(step)
        ? { id, step, argsJson: JSON.stringify(args) }
        : { id, step, args };
      const task = { ...payload, [Piscina.queueOptionsSymbol]: clock };
      return (await workers.run(task, { signal: clock.abort.signal })) as ChainTaskResult<S>;
    } catch (error) {
      if (clock.abort.signal.aborted) {
        throw busy(
          clock.phase === 'running'
            ? `the request's ${step} step did not finish within ${timeLimitMs} ms; retry later`
            : `the request waited ${waitLimitMs} ms for a thread; retry later`,
        );
      }
      if ((error as Error).message === 'Task queue is at limit') {
        throw busy(`${maxQueue} large requests are already waiting for a thread; retry later`);
      }
      // JSON.stringify and the structured clone refuse input nested deeper than their stack. Running it here instead
      // would hold the event loop, so it is refused like any input a step cannot take.
      if (error instanceof RangeError || (error as { name?: unknown }).name === 'DataCloneError') {
        throw new ChainInputError('the input is nested too deeply to be processed');
      }
      throw error;
    } finally {
      inFlight--;
      clock.stop();
    }
  }

  return {
    /**
     * Runs `step` on `args`: inline when `inputBytes` (the request body's size; Infinity when unknown) is below
     * the threshold, else on a worker. Throws the step's ChainInputError either way; on a worker also a 503
     * `SERVICE_BUSY` ServiceError when the queue is full or a time limit passes.
     */
    async run<S extends ChainStepName>(
      step: S,
      args: Parameters<ChainSteps[S]>,
      inputBytes: number,
    ): Promise<ReturnType<ChainSteps[S]>> {
      if (inputBytes < inlineBelowBytes) {
        onRun(step, 'inline');
        return inline(step, args);
      }
      onRun(step, 'worker');
      const result = await onWorker(step, args);
      if (!result.ok) throw new ChainInputError(result.message, result.field);
      return result.value;
    },
    /** Steps waiting for a thread. */
    get queueSize(): number {
      return pool?.queueSize ?? 0;
    },
    /** The worker threads' ids, for tests that watch a stuck worker being replaced. */
    get threadIds(): number[] {
      return pool?.threads.map((thread) => thread.threadId) ?? [];
    },
    /** Stops the workers. */
    async close(): Promise<void> {
      await pool?.destroy();
    },
  };
}

export type ChainPool = ReturnType<typeof createChainPool>;
