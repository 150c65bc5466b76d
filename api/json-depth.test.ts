import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { jsonDepthError, MAX_JSON_DEPTH } from './json-depth.ts';

const nested = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);

describe('jsonDepthError', () => {
  it('accepts nesting up to the cap and refuses one level more, with a 400 naming the path', () => {
    assert.equal(jsonDepthError(nested(MAX_JSON_DEPTH)), undefined);
    const error = jsonDepthError(nested(MAX_JSON_DEPTH + 1));
    assert.ok(error);
    assert.equal(error.code, 'INVALID_REQUEST');
    assert.equal(error.httpStatus, 400);
    assert.equal(error.details?.['field'], `body${'[0]'.repeat(MAX_JSON_DEPTH)}`);
    assert.match(error.message, /is nested more than 64 levels deep/);
  });

  it('names object keys and array indexes on the way down', () => {
    const text = '{"typedData":{"message":{"a":1,"extra":[0,{"x":[[[[]]]]}]}}}';
    const error = jsonDepthError(text, 6);
    assert.equal(error?.details?.['field'], 'body.typedData.message.extra[1].x[0]');
    assert.equal(jsonDepthError(text, 9), undefined);
    const quoted = jsonDepthError('{"we ird\\"key":{"a-b":[[1]]}}', 3);
    assert.equal(quoted?.details?.['field'], 'body["we ird\\"key"]["a-b"][0]');
  });

  it('is not fooled by brackets, quotes and backslashes inside strings', () => {
    const inString = JSON.stringify({ message: `${'['.repeat(1000)}\\"{{{${'{'.repeat(1000)}` });
    assert.equal(jsonDepthError(inString), undefined);
    const escapedBackslashes = `{"a":"\\\\\\\\","b":${nested(MAX_JSON_DEPTH)}}`;
    assert.equal(jsonDepthError(escapedBackslashes)?.details?.['field'], `body.b${'[0]'.repeat(MAX_JSON_DEPTH - 1)}`);
  });

  it('refuses a megabyte of nesting at its 65th level, and leaves malformed text to the parser', () => {
    const error = jsonDepthError(`{"message":${nested(500_000)}}`);
    assert.ok(error);
    assert.equal(error.details?.['field'], `body.message${'[0]'.repeat(MAX_JSON_DEPTH - 1)}`.slice(0, 200) + '…');
    assert.equal(jsonDepthError('{"a":"unterminated'), undefined);
    assert.equal(jsonDepthError(']]]]}}}'), undefined);
  });
});
