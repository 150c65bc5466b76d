/**
 * Piscina worker of the API's chain pool (chain-pool.ts): runs one chain step on a partner's large input. Holds
 * no secret and no state; a ChainInputError comes back as data so that the API answers it with its field.
 */
import { ChainInputError } from '../chains/chain-input-error.ts';
import { type ChainTask, type ChainTaskResult, chainSteps } from './chain-steps.ts';

/** Runs one step. */
export default function runChainStep(task: ChainTask): ChainTaskResult {
  const step = chainSteps[task.step] as (...args: unknown[]) => unknown;
  if (typeof step !== 'function') throw new Error(`unknown chain step ${String(task.step)}`);
  try {
    return { ok: true, value: step(...task.args) } as ChainTaskResult;
  } catch (error) {
    if (error instanceof ChainInputError) return { ok: false, message: error.message, field: error.field };
    throw error;
  }
}
