import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseTypedDataTypes } from './parse-typed-data-types.ts';
import { TYPED_DATA_LIMITS } from './typed-data-limits.ts';

const chain = (length: number) =>
  Object.fromEntries(
    Array.from({ length }, (_, i) => [`T${i}`, [{ name: 'x', type: i + 1 < length ? `T${i + 1}` : 'bool' }]]),
  );

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
    const parsed = parseTypedDataTypes(types);
    const namesAndTypes = Object.fromEntries(
      Object.entries(parsed).map(([struct, fields]) => [struct, fields.map(({ name, type }) => ({ name, type }))]),
    );
    assert.deepEqual(parsed.Group?.[0]?.parsed, {
      kind: 'array',
      text: 'Person[]',
      length: undefined,
      item: { kind: 'struct', text: 'Person', name: 'Person' },
    });
    assert.deepEqual(namesAndTypes, {
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

  it('caps the number of struct types and of members per struct', () => {
    const flat = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`T${i}`, []]));
    parseTypedDataTypes(flat(TYPED_DATA_LIMITS.types));
    assert.throws(() => parseTypedDataTypes(flat(TYPED_DATA_LIMITS.types + 1)), {
      field: 'types',
      message: `types defines ${TYPED_DATA_LIMITS.types + 1} struct types; at most ${TYPED_DATA_LIMITS.types} are accepted`,
    });
    const members = (n: number) => Array.from({ length: n }, (_, i) => ({ name: `f${i}`, type: 'uint8' }));
    parseTypedDataTypes({ Wide: members(TYPED_DATA_LIMITS.fieldsPerType) });
    assert.throws(() => parseTypedDataTypes({ Wide: members(TYPED_DATA_LIMITS.fieldsPerType + 1) }), {
      field: 'types.Wide',
      message: /has 65 members; at most 64 are accepted/,
    });
  });

  it('refuses recursive struct types, directly or through a ring, naming the member that closes it', () => {
    assert.throws(() => parseTypedDataTypes({ A: [{ name: 'self', type: 'A' }] }), {
      field: 'types.A[0].type',
      message: 'types.A[0].type: A refers back to itself (A → A); recursive struct types are not accepted',
    });
    assert.throws(
      () =>
        parseTypedDataTypes({
          A: [{ name: 'b', type: 'B[2]' }],
          B: [
            { name: 'flag', type: 'bool' },
            { name: 'c', type: 'C[][]' },
          ],
          C: [{ name: 'a', type: 'A' }],
        }),
      { field: 'types.C[0].type', message: /A refers back to itself \(A → B → C → A\)/ },
    );
    // A struct used twice on different paths is a diamond, not a ring.
    parseTypedDataTypes({
      A: [
        { name: 'b', type: 'B' },
        { name: 'c', type: 'C' },
      ],
      B: [{ name: 'd', type: 'D' }],
      C: [{ name: 'd', type: 'D[]' }],
      D: [],
    });
  });

  it('refuses types whose values would nest deeper than the limit, counting struct members and array levels', () => {
    // T0 → … → T31 holds a bool 32 levels below the message: accepted; one more level is refused.
    parseTypedDataTypes(chain(TYPED_DATA_LIMITS.depth));
    assert.throws(() => parseTypedDataTypes(chain(TYPED_DATA_LIMITS.depth + 1)), {
      field: 'types.T0[0].type',
      message: /makes T0 values nest 33 levels deep; at most 32 are accepted/,
    });
    parseTypedDataTypes({ A: [{ name: 'grid', type: `uint8${'[]'.repeat(TYPED_DATA_LIMITS.depth - 1)}` }] });
    assert.throws(
      () => parseTypedDataTypes({ A: [{ name: 'grid', type: `uint8${'[]'.repeat(TYPED_DATA_LIMITS.depth)}` }] }),
      { field: 'types.A[0].type', message: /nest 33 levels deep/ },
    );
  });

  it('reads suffix-heavy type strings once: a long run of [1] before a bad character is refused, not scanned again and again', () => {
    const type = `bool${'[1]'.repeat(80)}x`;
    const types = Object.fromEntries(
      Array.from({ length: TYPED_DATA_LIMITS.types }, (_, s) => [
        `S${s}`,
        Array.from({ length: TYPED_DATA_LIMITS.fieldsPerType }, (_, f) => ({ name: `f${f}`, type })),
      ]),
    );
    assert.throws(() => parseTypedDataTypes(types), { field: 'types.S0[0].type' });
  });
});
