import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseEvmAddress } from './parse-evm-address.ts';

const CHECKSUMMED = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed';

describe('parseEvmAddress', () => {
  it('returns the EIP-55 form of checksummed, lowercase and uppercase addresses', () => {
    assert.equal(parseEvmAddress(CHECKSUMMED, 'to'), CHECKSUMMED);
    assert.equal(parseEvmAddress(CHECKSUMMED.toLowerCase(), 'to'), CHECKSUMMED);
    assert.equal(parseEvmAddress(`0x${CHECKSUMMED.slice(2).toUpperCase()}`, 'to'), CHECKSUMMED);
  });

  it('refuses a mixed-case address with a wrong checksum', () => {
    const mistyped = `${CHECKSUMMED.slice(0, -1)}D`;
    assert.throws(() => parseEvmAddress(mistyped, 'to'), {
      name: 'ChainInputError',
      field: 'to',
      message: 'to has an invalid EIP-55 checksum (its mixed case does not match its hex): check it for a typo',
    });
  });

  it('refuses malformed values', () => {
    for (const value of [
      CHECKSUMMED.slice(2),
      `0X${CHECKSUMMED.slice(2)}`,
      `${CHECKSUMMED}00`,
      CHECKSUMMED.slice(0, -2),
      `${CHECKSUMMED.slice(0, -1)}g`,
      ` ${CHECKSUMMED}`,
      '',
    ]) {
      assert.throws(() => parseEvmAddress(value, 'to'), {
        name: 'ChainInputError',
        field: 'to',
        message: 'to must be an EVM address: 0x followed by 40 hex characters',
      });
    }
    for (const value of [undefined, null, 1, [CHECKSUMMED], { address: CHECKSUMMED }]) {
      assert.throws(() => parseEvmAddress(value, 'to'), {
        name: 'ChainInputError',
        message: /must be an EVM address string/,
      });
    }
  });
});
