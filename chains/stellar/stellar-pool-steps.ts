import { attachStellarSignature } from './attach-stellar-signature.ts';
import { prepareStellarTransaction } from './prepare-stellar-transaction.ts';

/**
 * The Stellar steps whose cost grows with the envelope (XDR decoding), which the API may run on a worker thread.
 * Apart from the adapter so that a worker loads only these.
 */
export const stellarPoolSteps = { prepareStellarTransaction, attachStellarSignature };
