import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { hashTypedData } from 'viem';
import {
  cyclicTypesTypedData,
  deepArrayTypeTypedData,
  manyFieldsTypedData,
  typeClosureTypedData,
  wideArraysTypedData,
} from '../../fixtures/adversarial-typed-data.ts';
import { ChainInputError } from '../chain-input-error.ts';
import { hashEvmTypedData } from './hash-evm-typed-data.ts';
import { TYPED_DATA_LIMITS } from './typed-data-limits.ts';

function refused(typedData: unknown, field: string | RegExp, message: RegExp): void {
  assert.throws(
    () => hashEvmTypedData(typedData),
    (error: unknown) => {
      assert.ok(error instanceof ChainInputError, String(error));
      if (typeof field === 'string') assert.equal(error.field, field, error.message);
      else assert.match(error.field ?? '', field, error.message);
      assert.match(error.message, message);
      return true;
    },
  );
}

const viem = (typedData: unknown) => hashTypedData(typedData as Parameters<typeof hashTypedData>[0]).slice(2);
const ours = (typedData: unknown) => Buffer.from(hashEvmTypedData(typedData)).toString('hex');

describe('TYPED_DATA_LIMITS', () => {
  it('refuses the chained-types body (1000 chained types under 20,000 instances) at its types, before any hashing', () => {
    refused(typeClosureTypedData(1000, 20_000), 'types', /types defines 1002 struct types; at most 64 are accepted/);
  });

  it('hashes the same shape within the limits, each type hash once, exactly as viem does', () => {
    // P.items[i].a[j] then two levels per chained type: the longest chain the depth limit allows.
    const typedData = typeClosureTypedData(14, 1000);
    assert.equal(ours(typedData), viem(typedData));
  });

  it('caps the members of a struct, the depth of a type and refuses recursion, naming the type', () => {
    refused(manyFieldsTypedData(TYPED_DATA_LIMITS.fieldsPerType + 1), 'types.Wide', /at most 64 are accepted/);
    assert.equal(ours(manyFieldsTypedData(TYPED_DATA_LIMITS.fieldsPerType)), viem(manyFieldsTypedData(64)));
    refused(deepArrayTypeTypedData(TYPED_DATA_LIMITS.depth), 'types.Deep[0].type', /nest 33 levels deep/);
    refused(cyclicTypesTypedData(3), 'types.A2[0].type', /A0 refers back to itself \(A0 → A1 → A2 → A0\)/);
  });

  it('caps the items of one array and of all arrays, naming the array that crosses the line', () => {
    const perArray = TYPED_DATA_LIMITS.arrayItems;
    assert.equal(ours(wideArraysTypedData(1, perArray)), viem(wideArraysTypedData(1, perArray)));
    refused(wideArraysTypedData(1, perArray + 1), 'message.a0', /holds 4097 items; at most 4096 are accepted/);
    const arrays = TYPED_DATA_LIMITS.totalItems / perArray;
    ours(wideArraysTypedData(arrays, perArray));
    refused(
      wideArraysTypedData(arrays + 1, perArray),
      `message.a${arrays}`,
      /brings the message's array items to 12288; at most 8192 are accepted in all/,
    );
  });

  it('caps the values of the whole message, naming the first value past the limit', () => {
    const wide = manyFieldsTypedData(TYPED_DATA_LIMITS.fieldsPerType);
    const structs = Math.ceil(TYPED_DATA_LIMITS.values / (TYPED_DATA_LIMITS.fieldsPerType + 1));
    const typedData = {
      domain: {},
      types: { Wide: wide.types.Wide, All: [{ name: 'rows', type: 'Wide[]' }] },
      primaryType: 'All',
      message: { rows: Array.from({ length: structs }, () => wide.message) },
    };
    refused(
      typedData,
      /^message\.rows\[\d+\]\.f\d+$/,
      /is value number 16385 of the message; at most 16384 are accepted/,
    );
    const fewer = { ...typedData, message: { rows: typedData.message.rows.slice(0, structs - 2) } };
    assert.equal(ours(fewer), viem(fewer));
  });

  it('caps the characters of type encodings hashed, naming the type', () => {
    // 15 chained structs of 40 members with 200-character names: the first one's encodeType covers them all.
    const name = (i: number) => `m${i}${'x'.repeat(198)}`;
    const types = Object.fromEntries(
      Array.from({ length: 15 }, (_, t) => [
        `T${t}`,
        Array.from({ length: 40 }, (_, i) => ({ name: name(i), type: i === 0 && t < 14 ? `T${t + 1}[]` : 'bool' })),
      ]),
    );
    const message = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [name(i), i === 0 ? [] : true]));
    refused({ domain: {}, types, primaryType: 'T0', message }, 'types.T0', /at most 65536 are accepted/);
  });
});
