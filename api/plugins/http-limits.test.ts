import assert from 'node:assert/strict';
import { test } from 'node:test';
import { connectionCap, describeClientError, RESERVED_FILES } from './http-limits.ts';

test('the connection cap is HTTP_MAX_CONNECTIONS, lowered to leave RESERVED_FILES under the open-file limit', () => {
  assert.equal(connectionCap(10_000, 65_536), 10_000);
  assert.equal(connectionCap(10_000, 4096), 4096 - RESERVED_FILES);
  assert.equal(connectionCap(10_000, 1024), 1);
  assert.equal(connectionCap(10_000, undefined), 10_000);
});

test("client errors: Node's codes become the service's, the peer's own bytes never appear, a reset gets no answer", () => {
  const limits = { headersTimeoutMs: 10_000, requestTimeoutMs: 30_000 };
  const cases: Array<[string, number | undefined, string | undefined]> = [
    ['ERR_HTTP_REQUEST_TIMEOUT', 408, 'REQUEST_TIMEOUT'],
    ['HPE_HEADER_OVERFLOW', 431, 'HEADERS_TOO_LARGE'],
    ['HPE_CHUNK_EXTENSIONS_OVERFLOW', 413, 'PAYLOAD_TOO_LARGE'],
    ['HPE_INVALID_METHOD', 400, 'INVALID_REQUEST'],
    ['ECONNRESET', undefined, undefined],
    ['EPIPE', undefined, undefined],
  ];
  for (const [code, status, ours] of cases) {
    const err = Object.assign(new Error('Parse Error: <script>secret-bytes'), {
      code,
      reason: 'Invalid method encountered',
    });
    const answer = describeClientError(err, limits);
    assert.equal(answer?.status, status, code);
    assert.equal(answer?.code, ours, code);
    if (answer) assert.ok(!answer.message.includes('secret-bytes'), code);
  }
  assert.match(
    describeClientError(Object.assign(new Error('x'), { code: 'ERR_HTTP_REQUEST_TIMEOUT' }), limits)!.message,
    /10 s.*30 s/,
  );
});
