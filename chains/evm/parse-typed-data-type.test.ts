import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseTypedDataType } from './parse-typed-data-type.ts';

const isStruct = (name: string) => name === 'Person' || name === 'Mail';

describe('parseTypedDataType', () => {
  it('takes atomic types apart', () => {
    assert.deepEqual(parseTypedDataType('uint256', isStruct), {
      kind: 'integer',
      text: 'uint256',
      signed: false,
      bits: 256,
    });
    assert.deepEqual(parseTypedDataType('int8', isStruct), { kind: 'integer', text: 'int8', signed: true, bits: 8 });
    assert.deepEqual(parseTypedDataType('bytes4', isStruct), { kind: 'fixed-bytes', text: 'bytes4', size: 4 });
    for (const kind of ['address', 'bool', 'string', 'bytes'] as const) {
      assert.deepEqual(parseTypedDataType(kind, isStruct), { kind, text: kind });
    }
    assert.deepEqual(parseTypedDataType('Person', isStruct), { kind: 'struct', text: 'Person', name: 'Person' });
  });

  it('reads array suffixes from the end: the last one is the outermost array', () => {
    assert.deepEqual(parseTypedDataType('Person[2][]', isStruct), {
      kind: 'array',
      text: 'Person[2][]',
      length: undefined,
      item: {
        kind: 'array',
        text: 'Person[2]',
        length: 2,
        item: { kind: 'struct', text: 'Person', name: 'Person' },
      },
    });
  });

  it('refuses what is not in the grammar', () => {
    for (const type of [
      '',
      '[]',
      'uint',
      'uint7',
      'uint264',
      'bytes0',
      'bytes33',
      'Nobody',
      'Person[0]',
      'Person[01]',
      'Person[1234567890]',
      'Person[-1]',
      'Person[',
      'Person]',
      'Person[1]]',
      'Person[[1]]',
      'Per[1]son',
      'uint256[ ]',
      'mail',
    ]) {
      assert.equal(parseTypedDataType(type, isStruct), undefined, type);
    }
  });
});
