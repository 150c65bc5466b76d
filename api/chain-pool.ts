/**
 * Where the signing routes run chain steps whose cost grows with the input (chain-steps.ts): inline on the event
 * loop when the request body is small (a typical permit, transfer or Sui transaction: tens to hundreds of µs, less
 * than a hop to a worker), on a piscina pool of worker threads when it is large. A large payload then costs its
 * own request time, not every other wallet's: the event loop keeps parsing, authenticating and answering other
 * requests while a worker hashes it.
 */
import { availableParallelism } from 'node:os';
import { Piscina } from 'piscina';
import { ChainInputError } from '../chains/chain-input-error.ts';
import {
  type ChainStepName,
  type ChainSteps,
  type ChainTask,
  type ChainTaskResult,
  chainSteps,
} from './chain-steps.ts';

/** `.ts` when run from source (tsx), `.js` when run from the `npm run build` bundle in dist/. */
const SOURCE_EXT = import.meta.url.endsWith('.ts') ? '.ts' : '.js';

/**
 * Request bodies of at least this many bytes run their chain steps on a worker. At the costliest step measured
 * (Sui BCS, ~0.17 ms per KiB) a body just below it holds the event loop for ~0.35 ms, about what parsing and
 * validating a 100 KiB JSON body costs anyway.
 */
export const DEFAULT_INLINE_BELOW_BYTES = 2 * 1024;

function inline<S extends ChainStepName>(step: S, args: Parameters<ChainSteps[S]>): ReturnType<ChainSteps[S]> {
  return (chainSteps[step] as unknown as (...a: Parameters<ChainSteps[S]>) => ReturnType<ChainSteps[S]>)(...args);
}

export function createChainPool(
  options: {
    threads?: number;
    inlineBelowBytes?: number;
    /** Called for every step run, with where it ran (for metrics). */
    onRun?: (step: ChainStepName, where: 'inline' | 'worker') => void;
  } = {},
) {
  const onRun = options.onRun ?? (() => {});
  const threads = Math.max(1, options.threads ?? availableParallelism());
  const inlineBelowBytes = options.inlineBelowBytes ?? DEFAULT_INLINE_BELOW_BYTES;
  // Created with the first large input (or by warm()): a process that never sees one starts no thread.
  let pool: Piscina | undefined;
  const started = (): Piscina => {
    pool ??= new Piscina({
      filename: new URL(`./chain.worker${SOURCE_EXT}`, import.meta.url).href,
      minThreads: 1,
      maxThreads: threads,
      // Keep started workers: each one loads the chain libraries (viem, @mysten/sui) once (~0.3 s).
      idleTimeout: 10 * 60_000,
      // As in the enclave's pools: plain message events, no Atomics hand-off (which stalled under load there).
      atomics: 'disabled',
    });
    return pool;
  };

  return {
    /**
     * Runs `step` on `args`: inline when `inputBytes` (the request body's size; Infinity when unknown) is below
     * the threshold, else on a worker. Throws the step's ChainInputError either way.
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
      const task: ChainTask<S> = { step, args };
      let result: ChainTaskResult<S>;
      try {
        result = (await started().run(task)) as ChainTaskResult<S>;
      } catch (error) {
        // Input the structured clone cannot carry (nesting deeper than its stack) runs inline: the step refuses
        // such input early, as a ChainInputError, or fails exactly as it would have inline.
        if (error instanceof RangeError || (error as { name?: unknown }).name === 'DataCloneError') {
          return inline(step, args);
        }
        throw error;
      }
      if (!result.ok) throw new ChainInputError(result.message, result.field);
      return result.value;
    },
    /** Steps waiting for a thread. */
    get queueSize(): number {
      return pool?.queueSize ?? 0;
    },
    /** Starts the first worker now (in the background), so that the first large input does not wait for it. */
    warm(): void {
      started();
    },
    /** Stops the workers. */
    async close(): Promise<void> {
      await pool?.destroy();
    },
  };
}

export type ChainPool = ReturnType<typeof createChainPool>;
