import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isPlainObject } from './is-plain-object.ts';

describe('isPlainObject', () => {
  it('accepts JSON objects and null-prototype objects', () => {
    assert.equal(isPlainObject({}), true);
    assert.equal(isPlainObject(JSON.parse('{"a":1,"__proto__":{"b":2}}')), true);
    assert.equal(isPlainObject(Object.create(null)), true);
  });

  it('refuses null, arrays, bytes, class instances and primitives', () => {
    for (const value of [null, undefined, [], new Uint8Array(1), new Date(0), new Map(), 'x', 1, true]) {
      assert.equal(isPlainObject(value), false, String(value));
    }
  });
});
