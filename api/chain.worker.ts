/**
 * Piscina worker of the API's chain pool (chain-pool.ts): runs one chain step on a partner's large input. Holds
 * no secret and no state; a ChainInputError comes back as data so that the API answers it with its field.
 */
import { setPriority } from 'node:os';
import { parentPort } from 'node:worker_threads';
import { ChainInputError } from '../chains/chain-input-error.ts';
import { type ChainStepStarted, type ChainTask, type ChainTaskResult, chainSteps } from './chain-steps.ts';

/**
 * The nice value of these threads. One partner's large payload then yields the CPU to the event loop that answers
 * every other request (and to the enclave's signing) instead of sharing it equally. Only on Linux, where the
 * nice value is per thread (elsewhere it would lower the whole API process); where the system refuses, the worker
 * keeps the normal priority.
 */
const WORKER_NICE = 10;
if (process.platform === 'linux') {
  try {
    setPriority(WORKER_NICE);
  } catch {
    // Not permitted here: the worker runs at normal priority.
  }
}

/** Runs one step, first telling the pool it has started (its time limit counts from here). */
export default function runChainStep(task: ChainTask): ChainTaskResult {
  parentPort?.postMessage({ chainStepStarted: task.id } satisfies ChainStepStarted);
  const step = chainSteps[task.step] as (...args: unknown[]) => unknown;
  if (typeof step !== 'function') throw new Error(`unknown chain step ${String(task.step)}`);
  try {
    const args = task.argsJson === undefined ? task.args : (JSON.parse(task.argsJson) as unknown[]);
    return { ok: true, value: step(...args) } as ChainTaskResult;
  } catch (error) {
    if (error instanceof ChainInputError) return { ok: false, message: error.message, field: error.field };
    throw error;
  }
}
