import { HttpRequestError, ResponseBodyTooLargeError, RpcRequestError, TimeoutError } from 'viem';

/**
 * Why a JSON-RPC call failed, in two kinds:
 * - `node`: the node read the call and answered a JSON-RPC error: a verdict (`code`, the node's `message`).
 * - `unavailable`: no usable answer (connection refused, timeout, HTTP 5xx, 429 or 401, JSON-RPC rate limit or
 *   internal error, a body that is not JSON-RPC): the node may never have seen the call.
 * Messages never carry the RPC URL (it may hold a provider's API key): they are shown to partners.
 */
export type RpcFailure =
  | { kind: 'node'; code: number; message: string; data?: unknown }
  | { kind: 'unavailable'; message: string };

// JSON-RPC codes that say the node did not process the call: internal error, limit exceeded (rate limits).
const UNAVAILABLE_RPC_CODES = new Set([-32603, -32005, 429]);
const URL_PATTERN = /\b[a-z][a-z0-9+.-]*:\/\/[^\s)\]}"'<>]+/gi;

/** A node's text, made safe for a partner: no URL, one line, at most 200 characters. */
function safeRpcText(text: string): string {
  return text.replace(URL_PATTERN, '[url]').split('\n')[0]!.slice(0, 200);
}

function causes(error: unknown): unknown[] {
  const chain: unknown[] = [];
  for (let current = error; current !== undefined && current !== null && chain.length < 12; ) {
    chain.push(current);
    current = (current as { cause?: unknown }).cause;
  }
  return chain;
}

function systemCode(chain: unknown[]): string | undefined {
  for (const link of chain) {
    const code = (link as { code?: unknown }).code;
    if (typeof code === 'string' && /^E[A-Z_]+$/.test(code)) return code;
  }
  return undefined;
}

function fromErrorObject(code: number, message: string, data: unknown): RpcFailure {
  if (UNAVAILABLE_RPC_CODES.has(code)) {
    return {
      kind: 'unavailable',
      message: `the chain's RPC node could not serve the request: ${safeRpcText(message)}`,
    };
  }
  return { kind: 'node', code, message: safeRpcText(message), data };
}

/**
 * Reads what went wrong from an error thrown by a viem request (walking its `cause` chain), or from the `error`
 * member of a JSON-RPC response (`{ code, message, data }`).
 */
export function readRpcFailure(error: unknown): RpcFailure {
  if (!(error instanceof Error) && typeof error === 'object' && error !== null) {
    const { code, message, data } = error as { code?: unknown; message?: unknown; data?: unknown };
    if (typeof code === 'number' && typeof message === 'string') return fromErrorObject(code, message, data);
  }
  const chain = causes(error);
  for (const link of chain) {
    if (link instanceof RpcRequestError) {
      const status = link.status;
      if (status !== undefined && (status >= 500 || status === 429 || status === 401 || status === 403)) {
        return { kind: 'unavailable', message: `the chain's RPC node answered HTTP ${status}` };
      }
      return fromErrorObject(link.code, link.details, link.data);
    }
    if (link instanceof TimeoutError) {
      return { kind: 'unavailable', message: "the chain's RPC node did not answer in time" };
    }
    if (link instanceof ResponseBodyTooLargeError) {
      return { kind: 'unavailable', message: "the chain's RPC node answered more than the size limit" };
    }
    if (link instanceof HttpRequestError) {
      if (link.status !== undefined) {
        return { kind: 'unavailable', message: `the chain's RPC node answered HTTP ${link.status}` };
      }
      if (chain.some((cause) => cause instanceof SyntaxError)) break;
      const code = systemCode(chain);
      return {
        kind: 'unavailable',
        message: `the chain's RPC node could not be reached${code === undefined ? '' : ` (${code})`}`,
      };
    }
  }
  const code = systemCode(chain);
  if (code !== undefined)
    return { kind: 'unavailable', message: `the chain's RPC node could not be reached (${code})` };
  // What is left is an answer that was not JSON-RPC (a proxy's HTML page, a truncated body, a wrong batch length).
  return { kind: 'unavailable', message: "the chain's RPC node gave an answer that is not valid JSON-RPC" };
}
