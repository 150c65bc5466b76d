import assert from 'node:assert/strict';
import { ChainInputError } from '../../chains/chain-input-error.ts';

/** The ChainInputError `run` throws (to read its field and message); fails the test if it throws nothing else. */
export function refused(run: () => unknown): ChainInputError {
  try {
    run();
  } catch (err) {
    assert.ok(err instanceof ChainInputError, String(err));
    return err;
  }
  throw new Error('not refused');
}
