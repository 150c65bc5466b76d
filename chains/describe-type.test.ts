import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { describeType } from './describe-type.ts';

describe('describeType', () => {
  it('tells null, arrays and bytes apart from plain objects', () => {
    assert.equal(describeType(null), 'null');
    assert.equal(describeType([1]), 'array');
    assert.equal(describeType(new Uint8Array(2)), 'bytes');
    assert.equal(describeType(Buffer.alloc(2)), 'bytes');
    assert.equal(describeType({}), 'object');
  });

  it('falls back to typeof', () => {
    assert.equal(describeType(undefined), 'undefined');
    assert.equal(describeType(1), 'number');
    assert.equal(describeType(1n), 'bigint');
    assert.equal(describeType('x'), 'string');
    assert.equal(describeType(true), 'boolean');
  });
});
