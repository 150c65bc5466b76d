import { ChainRpcError } from '../payment-chain.ts';

export interface SolanaRpcCall {
  method: string;
  params: unknown[];
}

/** A JSON-RPC error object as the node sent it. */
export interface SolanaRpcErrorObject {
  code: number;
  message: string;
  data?: unknown;
}

export type SolanaRpcOutcome = { ok: true; result: unknown } | { ok: false; error: SolanaRpcErrorObject };

/** Counts the HTTP requests made on behalf of one operation (one per `send`, whatever it carries). */
export interface RoundTripCounter {
  count: number;
}

export interface SolanaRpc {
  /**
   * One HTTP request carrying `calls` (a JSON-RPC batch, or a plain call when there is one). Resolves with one
   * outcome per call, in call order; JSON-RPC errors are outcomes. Throws a transient `RPC_UNAVAILABLE`
   * ChainRpcError when the node does not answer usably.
   */
  send(calls: readonly SolanaRpcCall[], counter?: RoundTripCounter): Promise<SolanaRpcOutcome[]>;
  /** One call whose JSON-RPC error is also a transient `RPC_UNAVAILABLE` ChainRpcError. */
  call(method: string, params: unknown[], counter?: RoundTripCounter): Promise<unknown>;
}

const unavailable = (message: string, cause?: unknown): ChainRpcError =>
  new ChainRpcError('transient', 'RPC_UNAVAILABLE', message, { cause });

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function toOutcome(reply: Record<string, unknown>): SolanaRpcOutcome | undefined {
  if (isObject(reply['error'])) {
    const { code, message, data } = reply['error'];
    if (typeof code !== 'number') return undefined;
    return { ok: false, error: { code, message: typeof message === 'string' ? message : '', data } };
  }
  return Object.hasOwn(reply, 'result') ? { ok: true, result: reply['result'] } : undefined;
}

/**
 * A small JSON-RPC 2.0 client for a Solana node over `fetchFn`, batching calls into one HTTP request so that
 * callers can bound their round trips. Every failure to get a usable answer (refused connection, timeout, HTTP
 * 429 or other non-2xx status, a body that is not JSON-RPC) is a transient `RPC_UNAVAILABLE` ChainRpcError whose
 * message names neither the URL nor anything the node said; the cause keeps the detail for logs.
 */
/**
 * The result of one call of a batch, or the transient ChainRpcError the caller answers when the node refused it or
 * left it unanswered.
 */
export function rpcResult(outcome: SolanaRpcOutcome | undefined, method: string): unknown {
  if (outcome === undefined) {
    throw new ChainRpcError('transient', 'RPC_UNAVAILABLE', `the Solana RPC answered ${method} in an unexpected shape`);
  }
  if (!outcome.ok) {
    throw new ChainRpcError(
      'transient',
      'RPC_UNAVAILABLE',
      `the Solana RPC refused ${method} (error ${outcome.error.code})`,
      { cause: outcome.error },
    );
  }
  return outcome.result;
}

export function createSolanaRpc(options: { rpcUrl: string; timeoutMs: number; fetchFn: typeof fetch }): SolanaRpc {
  const { rpcUrl, timeoutMs, fetchFn } = options;
  let nextId = 1;

  async function post(body: unknown): Promise<unknown> {
    let text: string;
    try {
      const response = await fetchFn(rpcUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(timeoutMs),
      });
      if (response.status === 429) {
        await response.body?.cancel();
        throw unavailable('the Solana RPC is rate limiting requests (HTTP 429)');
      }
      if (!response.ok) {
        await response.body?.cancel();
        throw unavailable(`the Solana RPC answered HTTP ${response.status}`);
      }
      text = await response.text();
    } catch (error) {
      if (error instanceof ChainRpcError) throw error;
      const name = (error as { name?: unknown })?.name;
      if (name === 'TimeoutError' || name === 'AbortError') {
        throw unavailable(`the Solana RPC did not answer within ${timeoutMs} ms`, error);
      }
      throw unavailable('the Solana RPC is unreachable', error);
    }
    try {
      return JSON.parse(text);
    } catch (error) {
      throw unavailable('the Solana RPC answered something that is not JSON', error);
    }
  }

  async function send(calls: readonly SolanaRpcCall[], counter?: RoundTripCounter): Promise<SolanaRpcOutcome[]> {
    if (calls.length === 0) return [];
    const requests = calls.map((call) => ({ jsonrpc: '2.0', id: nextId++, method: call.method, params: call.params }));
    if (counter) counter.count++;
    const body = await post(requests.length === 1 ? requests[0] : requests);
    // A node refusing a whole batch (too large, batches disabled) answers one error object.
    const replies = Array.isArray(body) ? body : requests.length === 1 ? [body] : undefined;
    if (replies === undefined) {
      const outcome = isObject(body) ? toOutcome(body) : undefined;
      throw unavailable(
        outcome && !outcome.ok
          ? `the Solana RPC refused a batch of ${requests.length} calls (error ${outcome.error.code})`
          : 'the Solana RPC answered a batch with something that is not a JSON-RPC batch',
        outcome,
      );
    }
    const byId = new Map<unknown, Record<string, unknown>>();
    for (const reply of replies) if (isObject(reply)) byId.set(reply['id'], reply);
    return requests.map((request) => {
      const reply = byId.get(request.id);
      const outcome = reply === undefined ? undefined : toOutcome(reply);
      if (outcome === undefined) {
        throw unavailable(`the Solana RPC gave no usable answer to ${request.method}`);
      }
      return outcome;
    });
  }

  async function call(method: string, params: unknown[], counter?: RoundTripCounter): Promise<unknown> {
    const [outcome] = await send([{ method, params }], counter);
    if (!outcome!.ok) {
      throw unavailable(`the Solana RPC refused ${method} (error ${outcome!.error.code})`, outcome!.error);
    }
    return outcome!.result;
  }

  return { send, call };
}
