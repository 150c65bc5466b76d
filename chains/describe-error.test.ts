import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BaseError } from 'viem';
import { describeError } from './describe-error.ts';

describe('describeError', () => {
  it("prefers viem's short message over its multi-line message", () => {
    const error = new BaseError('Address "0x12" is invalid.', { details: 'more' });
    assert.match(error.message, /\n/);
    assert.equal(describeError(error), 'Address "0x12" is invalid.');
  });

  it('keeps the first line of other errors, cut to 200 characters', () => {
    assert.equal(
      describeError(new RangeError('Offset is outside the bounds\nstack-ish')),
      'Offset is outside the bounds',
    );
    assert.equal(describeError(new Error('x'.repeat(500))).length, 200);
  });

  it('describes thrown non-errors without throwing itself', () => {
    assert.equal(describeError('plain string'), 'plain string');
    assert.equal(describeError(undefined), 'undefined');
    assert.equal(describeError(Object.create(null)), 'unknown error');
  });
});
