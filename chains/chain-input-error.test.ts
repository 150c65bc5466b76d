import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ChainInputError } from './chain-input-error.ts';

describe('ChainInputError', () => {
  it('is an Error carrying its message, name and field', () => {
    const error = new ChainInputError('chainId must be a positive integer', 'chainId');
    assert.ok(error instanceof Error);
    assert.ok(error instanceof ChainInputError);
    assert.equal(error.name, 'ChainInputError');
    assert.equal(error.message, 'chainId must be a positive integer');
    assert.equal(error.field, 'chainId');
    assert.match(String(error.stack), /^ChainInputError: chainId must be a positive integer/);
  });

  it('leaves field undefined when the problem is not one field', () => {
    assert.equal(new ChainInputError('bad').field, undefined);
  });
});
