import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { normalizeTypedDataValue } from './normalize-typed-data-value.ts';
import type { TypedDataTypes } from './parse-typed-data-types.ts';

const TYPES: TypedDataTypes = {
  Pair: [
    { name: 'left', type: 'uint8' },
    { name: 'right', type: 'int16' },
  ],
};

describe('normalizeTypedDataValue', () => {
  it('converts integers to bigint from numbers, decimal and hex strings', () => {
    assert.equal(normalizeTypedDataValue('uint256', 5, 'm', TYPES), 5n);
    assert.equal(normalizeTypedDataValue('uint256', '0x10', 'm', TYPES), 16n);
    assert.equal(normalizeTypedDataValue('int8', '-128', 'm', TYPES), -128n);
    assert.equal(normalizeTypedDataValue('uint256', (2n ** 256n - 1n).toString(), 'm', TYPES), 2n ** 256n - 1n);
  });

  it('builds structs from their declared members only and keeps array shapes', () => {
    assert.deepEqual(
      normalizeTypedDataValue(
        'Pair[2]',
        [
          { left: 1, right: '-2', extra: 'x' },
          { left: '255', right: 0 },
        ],
        'm',
        TYPES,
      ),
      [
        { left: 1n, right: -2n },
        { left: 255n, right: 0n },
      ],
    );
  });

  it('names the offending path', () => {
    assert.throws(
      () =>
        normalizeTypedDataValue(
          'Pair[]',
          [
            { left: 1, right: 0 },
            { left: 256, right: 0 },
          ],
          'message.pairs',
          TYPES,
        ),
      {
        name: 'ChainInputError',
        field: 'message.pairs[1].left',
        message: 'message.pairs[1].left is out of range for uint8',
      },
    );
    assert.throws(() => normalizeTypedDataValue('Pair', { left: 1 }, 'message', TYPES), {
      field: 'message.right',
      message: 'message.right is missing (int16)',
    });
    assert.throws(() => normalizeTypedDataValue('int16', 2 ** 60, 'message.x', TYPES), {
      message: /as decimal strings/,
    });
    assert.throws(
      () =>
        normalizeTypedDataValue('bytes2', '0x0102', 'message.x', TYPES) &&
        normalizeTypedDataValue('bytes2', '0x01', 'message.x', TYPES),
      {
        message: 'message.x must be exactly 2 bytes (bytes2), got 1',
      },
    );
    assert.throws(() => normalizeTypedDataValue('Unknown', 1, 'message.x', TYPES), { message: /unknown type/ });
  });
});
