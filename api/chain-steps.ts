/**
 * The chain steps of the signing routes whose cost grows with the partner's input: EIP-712 typed data, EVM, Sui and
 * Stellar transactions (docs/benchmarks.md, "Worst-case cost per request", has their measured worst cases). chain-pool.ts
 * runs them on worker threads when the input is large, so that one partner's large payload never holds the API's
 * event loop, and with it every other wallet's request. Each is a pure function of structured-clonable arguments to
 * a structured-clonable result, and bounds its own work (caps in chains/).
 *
 * Each chain folder declares its own (`*-pool-steps.ts`, its adapter's `poolSteps`); this table registers them with
 * the workers by name. It imports those files rather than chains/wallet-families.ts so that a worker loads only the
 * steps' code, not every chain's signing libraries; chain-steps.test.ts checks that it holds exactly the adapters'.
 */
import { evmPoolSteps } from '../chains/evm/evm-pool-steps.ts';
import { stellarPoolSteps } from '../chains/stellar/stellar-pool-steps.ts';
import { suiPoolSteps } from '../chains/sui/sui-pool-steps.ts';

export const chainSteps = { ...evmPoolSteps, ...suiPoolSteps, ...stellarPoolSteps };

export type ChainSteps = typeof chainSteps;
export type ChainStepName = keyof ChainSteps;

/**
 * Steps whose arguments are JSON from the request body: they travel to a worker as JSON text, which V8 writes and
 * reads several times faster than its structured clone walks a graph of many small objects (the clone runs on the
 * event loop). The others carry bytes or bigints and travel by structured clone.
 */
export const JSON_ARGUMENT_STEPS: ReadonlySet<ChainStepName> = new Set([
  'hashEvmTypedData',
  'prepareEvmTransaction',
  'prepareSuiTransaction',
  'prepareStellarTransaction',
]);

/**
 * One step to run on a worker; `id` names it in the worker's "started" message (chain-pool.ts). The arguments come
 * as `args`, or as `argsJson` (their JSON text) for the steps of JSON_ARGUMENT_STEPS.
 */
export type ChainTask<S extends ChainStepName = ChainStepName> = { id: number; step: S } & (
  | { args: Parameters<ChainSteps[S]>; argsJson?: undefined }
  | { args?: undefined; argsJson: string }
);

/** What a worker posts on its port as it starts a task, so that the pool's time limit counts from then. */
export interface ChainStepStarted {
  chainStepStarted: number;
}

/** A worker's answer: the step's result, or the ChainInputError it threw (errors lose their class in transit). */
export type ChainTaskResult<S extends ChainStepName = ChainStepName> =
  | { ok: true; value: ReturnType<ChainSteps[S]> }
  | { ok: false; message: string; field: string | undefined };
