import { getHttpRpcClient } from 'viem/utils';
import { ChainRpcError } from '../payment-chain.ts';
import { type RpcFailure, readRpcFailure } from './read-rpc-failure.ts';

export interface RpcCall {
  method: string;
  params: unknown[];
}

export type RpcAnswer = { ok: true; result: unknown } | { ok: false; failure: RpcFailure };

export interface RpcBatchPosterOptions {
  rpcUrl: string;
  timeoutMs: number;
  fetchFn?: typeof fetch;
  /** Calls per HTTP request; more calls are sent as several requests at once. Default: all in one. */
  maxBatchSize?: number;
  /** Largest answer accepted, in bytes. */
  maxResponseBytes?: number;
}

interface RpcResponse {
  id?: unknown;
  result?: unknown;
  error?: unknown;
}

/**
 * Sends JSON-RPC calls as explicit batches, apart from the client's automatic batching, so that a caller knows
 * exactly which HTTP requests its calls took: `post` resolves with one answer per call, in order, and `requests`,
 * the number of HTTP requests it made (counted at `fetch` itself). A call the node answered with an error is a
 * failed answer; a batch without a usable answer throws a transient `ChainRpcError` RPC_UNAVAILABLE.
 */
export function createRpcBatchPoster(options: RpcBatchPosterOptions) {
  const baseFetch = options.fetchFn ?? fetch;
  const client = getHttpRpcClient(options.rpcUrl, {
    timeout: options.timeoutMs,
    maxResponseBodySize: options.maxResponseBytes ?? 64 * 1024 * 1024,
  });
  const maxBatchSize = options.maxBatchSize ?? Number.POSITIVE_INFINITY;

  async function postChunk(calls: readonly RpcCall[], fetchFn: typeof fetch): Promise<RpcAnswer[]> {
    const body = calls.map((call, id) => ({ id, method: call.method, params: call.params }));
    let responses: unknown;
    try {
      responses = await client.request({ body, fetchFn });
    } catch (error) {
      const failure = readRpcFailure(error);
      throw new ChainRpcError('transient', 'RPC_UNAVAILABLE', failure.message);
    }
    if (!Array.isArray(responses)) {
      throw new ChainRpcError(
        'transient',
        'RPC_UNAVAILABLE',
        "the chain's RPC node did not answer the batch with a list",
      );
    }
    // JSON-RPC lets a server answer a batch in any order: match answers to calls by id.
    const answers: (RpcAnswer | undefined)[] = new Array(calls.length);
    // A server refusing the whole batch ("batch too large") answers one error without a usable id.
    let batchFailure: RpcFailure | undefined;
    for (const response of responses as RpcResponse[]) {
      const id = response?.id;
      const failure =
        response?.error === undefined || response.error === null ? undefined : readRpcFailure(response.error);
      if (typeof id !== 'number' || !Number.isInteger(id) || id < 0 || id >= calls.length) {
        batchFailure ??= failure;
        continue;
      }
      answers[id] = failure === undefined ? { ok: true, result: response.result ?? null } : { ok: false, failure };
    }
    return answers.map(
      (answer) =>
        answer ?? {
          ok: false,
          failure: batchFailure ?? {
            kind: 'unavailable',
            message: "the chain's RPC node left a call of the batch unanswered",
          },
        },
    );
  }

  return {
    async post(calls: readonly RpcCall[]): Promise<{ answers: RpcAnswer[]; requests: number }> {
      let requests = 0;
      const counted: typeof fetch = (input, init) => {
        requests++;
        return baseFetch(input, init);
      };
      if (calls.length === 0) return { answers: [], requests };
      const chunks: RpcCall[][] = [];
      for (let start = 0; start < calls.length; start += maxBatchSize) {
        chunks.push(calls.slice(start, start + maxBatchSize));
      }
      try {
        const answered = await Promise.all(chunks.map((chunk) => postChunk(chunk, counted)));
        return { answers: answered.flat(), requests };
      } catch (error) {
        if (error instanceof ChainRpcError) throw error;
        throw new ChainRpcError('transient', 'RPC_UNAVAILABLE', readRpcFailure(error).message);
      }
    },
  };
}

export type RpcBatchPoster = ReturnType<typeof createRpcBatchPoster>;
