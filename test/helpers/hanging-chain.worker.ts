/**
 * A chain-pool worker for tests: the real one (api/chain.worker.ts), plus a step `hang` that never returns, so that
 * a test can watch the pool's time limit abort it and a fresh worker serve the next task.
 */
import { parentPort } from 'node:worker_threads';
import runChainStep from '../../api/chain.worker.ts';
import type { ChainStepStarted, ChainTask, ChainTaskResult } from '../../api/chain-steps.ts';

export default function runOrHang(task: ChainTask | { id: number; step: 'hang' }): ChainTaskResult {
  if (task.step === 'hang') {
    parentPort?.postMessage({ chainStepStarted: task.id } satisfies ChainStepStarted);
    for (;;) {
      // Busy forever, as a worker stuck in a step would be.
    }
  }
  return runChainStep(task as ChainTask);
}
