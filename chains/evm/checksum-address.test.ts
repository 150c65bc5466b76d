import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checksumEvmAddress } from './checksum-address.ts';

// The test vectors of EIP-55 itself.
const EIP55_VECTORS = [
  '0x52908400098527886E0F7030069857D2E4169EE7',
  '0x8617E340B3D01FA5F11F306F4090FD50E238070D',
  '0xde709f2102306220921060314715629080e2fb77',
  '0x27b1fdb04752bbc536007a920d24acb045561c26',
  '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed',
  '0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359',
  '0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB',
  '0xD1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb',
];

describe('checksumEvmAddress', () => {
  it('produces the EIP-55 vectors from lowercase and uppercase input', () => {
    for (const expected of EIP55_VECTORS) {
      assert.equal(checksumEvmAddress(expected.toLowerCase()), expected);
      assert.equal(checksumEvmAddress(`0x${expected.slice(2).toUpperCase()}`), expected);
      assert.equal(checksumEvmAddress(expected), expected);
    }
  });

  it('refuses anything that is not 0x plus 40 hex characters', () => {
    for (const bad of [
      '52908400098527886E0F7030069857D2E4169EE7',
      '0x52908400098527886E0F7030069857D2E4169EE',
      '0x52908400098527886E0F7030069857D2E4169EE700',
      '0x52908400098527886E0F7030069857D2E4169EEG',
      '',
    ]) {
      assert.throws(() => checksumEvmAddress(bad), { message: 'EVM address must be 0x followed by 40 hex characters' });
    }
  });
});
