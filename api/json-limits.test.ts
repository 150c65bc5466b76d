import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { jsonLimitsError, MAX_JSON_CONTAINERS, MAX_JSON_DEPTH } from './json-limits.ts';

const nested = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);

describe('jsonLimitsError', () => {
  it('accepts nesting up to the cap and refuses one level more, with a 400 naming the path', () => {
    assert.equal(jsonLimitsError(nested(MAX_JSON_DEPTH)), undefined);
    const error = jsonLimitsError(nested(MAX_JSON_DEPTH + 1));
    assert.ok(error);
    assert.equal(error.code, 'INVALID_REQUEST');
    assert.equal(error.httpStatus, 400);
    assert.equal(error.details?.['field'], `body${'[0]'.repeat(MAX_JSON_DEPTH)}`);
    assert.match(error.message, /is nested more than 64 levels deep/);
  });

  it('names object keys and array indexes on the way down', () => {
    const text = '{"typedData":{"message":{"a":1,"extra":[0,{"x":[[[[]]]]}]}}}';
    const error = jsonLimitsError(text, { depth: 6, containers: 1000 });
    assert.equal(error?.details?.['field'], 'body.typedData.message.extra[1].x[0]');
    assert.equal(jsonLimitsError(text, { depth: 9, containers: 1000 }), undefined);
    const quoted = jsonLimitsError('{"we ird\\"key":{"a-b":[[1]]}}', { depth: 3, containers: 1000 });
    assert.equal(quoted?.details?.['field'], 'body["we ird\\"key"]["a-b"][0]');
  });

  it('is not fooled by brackets, quotes and backslashes inside strings', () => {
    const inString = JSON.stringify({ message: `${'['.repeat(1000)}\\"{{{${'{'.repeat(1000)}` });
    assert.equal(jsonLimitsError(inString), undefined);
    const escapedBackslashes = `{"a":"\\\\\\\\","b":${nested(MAX_JSON_DEPTH)}}`;
    assert.equal(jsonLimitsError(escapedBackslashes)?.details?.['field'], `body.b${'[0]'.repeat(MAX_JSON_DEPTH - 1)}`);
  });

  it('refuses a megabyte of nesting at its 65th level, and leaves malformed text to the parser', () => {
    const error = jsonLimitsError(`{"message":${nested(500_000)}}`);
    assert.ok(error);
    assert.equal(error.details?.['field'], `body.message${'[0]'.repeat(MAX_JSON_DEPTH - 1)}`.slice(0, 200) + '…');
    assert.equal(jsonLimitsError('{"a":"unterminated'), undefined);
    assert.equal(jsonLimitsError(']]]]}}}'), undefined);
  });

  it('caps the objects and arrays of a body, naming the first one past the cap', () => {
    const items = (n: number) => `{"typedData":{"message":{"items":[${Array(n).fill('{"a":[]}').join(',')}]}}}`;
    // 4 wrappers, then two per item.
    assert.equal(jsonLimitsError(items((MAX_JSON_CONTAINERS - 4) / 2)), undefined);
    const error = jsonLimitsError(items((MAX_JSON_CONTAINERS - 4) / 2 + 1));
    assert.equal(error?.httpStatus, 400);
    assert.equal(error?.details?.['field'], `body.typedData.message.items[${(MAX_JSON_CONTAINERS - 4) / 2}]`);
    assert.match(String(error?.message), /is object or array number 32769 of the body; request bodies may hold 32768/);
    // Strings full of brackets are not containers.
    assert.equal(jsonLimitsError(JSON.stringify({ message: '[]'.repeat(100_000) })), undefined);
  });
});
