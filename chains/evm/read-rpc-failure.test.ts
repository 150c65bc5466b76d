import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HttpRequestError, RpcRequestError, TimeoutError } from 'viem';
import { readRpcFailure } from './read-rpc-failure.ts';

const url = 'https://node.example/v3/secret-key';

describe('readRpcFailure', () => {
  it("reads a node's JSON-RPC error as its verdict, without the URL", () => {
    const error = new RpcRequestError({
      body: { method: 'eth_sendRawTransaction' },
      error: { code: -32000, message: `nonce too low (see ${url})` },
      url,
    });
    assert.deepEqual(readRpcFailure(new Error('wrapped', { cause: error })), {
      kind: 'node',
      code: -32000,
      message: 'nonce too low (see [url])',
      data: undefined,
    });
    assert.deepEqual(readRpcFailure({ code: 3, message: 'execution reverted', data: '0x12' }), {
      kind: 'node',
      code: 3,
      message: 'execution reverted',
      data: '0x12',
    });
  });

  it('reads rate limits, internal errors, HTTP failures, timeouts and refused connections as unavailable', () => {
    const cases: unknown[] = [
      { code: -32005, message: 'limit exceeded' },
      { code: -32603, message: 'internal error' },
      new RpcRequestError({ body: {}, error: { code: -32000, message: 'busy' }, status: 503, url }),
      new RpcRequestError({ body: {}, error: { code: -32000, message: 'slow down' }, status: 429, url }),
      new HttpRequestError({ body: {}, status: 502, url }),
      new TimeoutError({ body: {}, url }),
      new HttpRequestError({
        body: {},
        url,
        cause: new TypeError('fetch failed', { cause: Object.assign(new Error('connect'), { code: 'ECONNREFUSED' }) }),
      }),
      new SyntaxError('Unexpected token <'),
      'a string',
    ];
    for (const error of cases) {
      const failure = readRpcFailure(error);
      assert.equal(failure.kind, 'unavailable', String(error));
      assert.ok(!failure.message.includes('secret-key'), failure.message);
    }
    const refused = readRpcFailure(cases[6]);
    assert.match(refused.message, /ECONNREFUSED/);
  });
});
