import { prepareSuiTransaction } from './prepare-sui-transaction.ts';

/**
 * The Sui step whose cost grows with the transaction (BCS decoding), which the API may run on a worker thread. Apart
 * from the adapter so that a worker loads only it, not the SDK's signature encoding.
 */
export const suiPoolSteps = { prepareSuiTransaction };
