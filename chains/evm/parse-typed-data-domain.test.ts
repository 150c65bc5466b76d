import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseTypedDataDomain } from './parse-typed-data-domain.ts';

describe('parseTypedDataDomain', () => {
  it('returns the present fields with chainId as bigint and lowercase hex', () => {
    assert.deepEqual(
      parseTypedDataDomain({
        name: 'Ether Mail',
        version: '1',
        chainId: '8453',
        verifyingContract: '0xCcCCccccCCCCcCCCCCCcCcCccCcCCCcCcccccccC',
        salt: `0x${'AB'.repeat(32)}`,
      }),
      {
        name: 'Ether Mail',
        version: '1',
        chainId: 8453n,
        verifyingContract: '0xcccccccccccccccccccccccccccccccccccccccc',
        salt: `0x${'ab'.repeat(32)}`,
      },
    );
    assert.deepEqual(parseTypedDataDomain({ chainId: 1 }), { chainId: 1n });
    assert.deepEqual(parseTypedDataDomain({ chainId: 0 }), { chainId: 0n });
    assert.deepEqual(parseTypedDataDomain({}), {});
  });

  it('refuses fields outside EIP712Domain and malformed values', () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ chainID: 1 }, 'domain.chainID'],
      [{ name: 1 }, 'domain.name'],
      [{ version: ['1'] }, 'domain.version'],
      [{ name: null }, 'domain.name'],
      [{ chainId: -1 }, 'domain.chainId'],
      [{ chainId: 2 ** 53 }, 'domain.chainId'],
      [{ chainId: '0x1' }, 'domain.chainId'],
      [{ chainId: ' 1' }, 'domain.chainId'],
      [{ chainId: true }, 'domain.chainId'],
      [{ verifyingContract: '0xcc' }, 'domain.verifyingContract'],
      [{ salt: `0x${'ab'.repeat(31)}` }, 'domain.salt'],
      [{ salt: 'ab'.repeat(32) }, 'domain.salt'],
    ];
    for (const [domain, field] of cases) {
      assert.throws(() => parseTypedDataDomain(domain), { name: 'ChainInputError', field }, field);
    }
    for (const domain of [undefined, null, [], 'domain']) {
      assert.throws(() => parseTypedDataDomain(domain), { name: 'ChainInputError', field: 'domain' });
    }
  });
});
