import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isValidCosmosPrefix } from './validate-prefix.ts';

describe('isValidCosmosPrefix', () => {
  it('accepts the prefixes partners use', () => {
    for (const prefix of [
      'cosmos',
      'osmo',
      'juno',
      'celestia',
      'sei',
      'terra',
      'a',
      'dydx',
      'inj',
      'x1',
      'a'.repeat(20),
    ]) {
      assert.equal(isValidCosmosPrefix(prefix), true, prefix);
    }
  });

  it('refuses empty, too long, uppercase, leading digit, punctuation, whitespace and non-strings', () => {
    for (const prefix of [
      '',
      'a'.repeat(21),
      'Cosmos',
      'COSMOS',
      '1cosmos',
      'cosmos-hub',
      'cosmos_',
      'cosmos ',
      ' cosmos',
      'cosmos\n',
      'cösmos',
      undefined,
      null,
      42,
    ]) {
      assert.equal(isValidCosmosPrefix(prefix), false, String(prefix));
    }
  });
});
