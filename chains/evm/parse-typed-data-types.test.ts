import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseTypedDataTypes } from './parse-typed-data-types.ts';

describe('parseTypedDataTypes', () => {
  it('returns a copy holding only names and types', () => {
    const types = {
      Person: [{ name: 'wallet', type: 'address', internalType: 'address' }],
      Group: [
        { name: 'members', type: 'Person[]' },
        { name: 'grid', type: 'uint8[2][]' },
        { name: 'tag', type: 'bytes32' },
        { name: 'n', type: 'int256' },
      ],
    };
    assert.deepEqual(parseTypedDataTypes(types), {
      Person: [{ name: 'wallet', type: 'address' }],
      Group: [
        { name: 'members', type: 'Person[]' },
        { name: 'grid', type: 'uint8[2][]' },
        { name: 'tag', type: 'bytes32' },
        { name: 'n', type: 'int256' },
      ],
    });
  });

  it('accepts every atomic type and refuses sizes outside the grammar', () => {
    const good = [
      'address',
      'bool',
      'string',
      'bytes',
      'bytes1',
      'bytes32',
      'uint8',
      'uint256',
      'int8',
      'int256',
      'uint136',
    ];
    for (const type of good) parseTypedDataTypes({ A: [{ name: 'x', type }] });
    const bad = [
      'uint',
      'int',
      'uint0',
      'uint7',
      'uint264',
      'int512',
      'bytes0',
      'bytes33',
      'byte',
      'uint08',
      'function',
      'Address',
      'uint256[-1]',
      'uint256[01]',
    ];
    for (const type of bad) {
      assert.throws(
        () => parseTypedDataTypes({ A: [{ name: 'x', type }] }),
        { name: 'ChainInputError', field: 'types.A[0].type' },
        type,
      );
    }
  });

  it('refuses EIP712Domain, bad struct names and bad members', () => {
    assert.throws(() => parseTypedDataTypes({ EIP712Domain: [], A: [] }), { field: 'types.EIP712Domain' });
    for (const name of ['uint256', 'bytes7', 'address', 'string', 'has space', 'a(b)', 'x'.repeat(300)]) {
      assert.throws(() => parseTypedDataTypes({ [name]: [] }), { name: 'ChainInputError' }, name);
    }
    assert.throws(() => parseTypedDataTypes({ A: [{ name: '1x', type: 'bool' }] }), { field: 'types.A[0].name' });
    assert.throws(() => parseTypedDataTypes({ A: [{ name: 'x)', type: 'bool' }] }), { field: 'types.A[0].name' });
    assert.throws(() => parseTypedDataTypes({ A: [{ type: 'bool' }] }), { field: 'types.A[0].name' });
    assert.throws(
      () =>
        parseTypedDataTypes({
          A: [
            { name: 'x', type: 'bool' },
            { name: 'x', type: 'bool' },
          ],
        }),
      {
        field: 'types.A[1].name',
        message: 'types.A declares x twice',
      },
    );
    assert.throws(() => parseTypedDataTypes({ A: [{ name: 'x', type: 'B' }] }), { field: 'types.A[0].type' });
    assert.throws(() => parseTypedDataTypes({ A: [['x', 'bool']] }), { field: 'types.A[0]' });
    assert.throws(() => parseTypedDataTypes({ A: { x: 'bool' } }), { field: 'types.A' });
  });

  it('refuses non-objects and empty types', () => {
    for (const types of [undefined, null, [], 'Mail', 1, {}]) {
      assert.throws(() => parseTypedDataTypes(types), { name: 'ChainInputError', field: 'types' });
    }
  });
});
