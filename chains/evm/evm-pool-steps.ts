import { hashEvmTypedData } from './hash-evm-typed-data.ts';
import { prepareEvmTransaction } from './prepare-evm-transaction.ts';
import { serializeSignedEvmTransaction } from './serialize-signed-evm-transaction.ts';

/**
 * The EVM steps whose cost grows with the input (typed data for sign-typed-data, transactions), which the API may
 * run on a worker thread. Apart from the adapter so that a worker loads only these.
 */
export const evmPoolSteps = { hashEvmTypedData, prepareEvmTransaction, serializeSignedEvmTransaction };
