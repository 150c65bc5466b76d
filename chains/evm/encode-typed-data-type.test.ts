import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EIP712_MAIL } from '../../fixtures/eip712-mail.ts';
import { encodeTypedDataType } from './encode-typed-data-type.ts';
import { parseTypedDataTypes } from './parse-typed-data-types.ts';

describe('encodeTypedDataType', () => {
  it("gives EIP-712's own example encoding of Mail", () => {
    assert.equal(
      encodeTypedDataType('Mail', parseTypedDataTypes(EIP712_MAIL.types)),
      'Mail(Person from,Person to,string contents)Person(string name,address wallet)',
    );
  });

  it('appends every struct referenced, through arrays and other structs, once each, sorted by name', () => {
    const types = parseTypedDataTypes({
      Order: [
        { name: 'zeta', type: 'Zeta[2][]' },
        { name: 'alpha', type: 'Alpha' },
        { name: 'again', type: 'Alpha[]' },
      ],
      Zeta: [{ name: 'm', type: 'Mid' }],
      Alpha: [{ name: 'm', type: 'Mid[]' }],
      Mid: [],
      Unused: [{ name: 'x', type: 'bool' }],
    });
    assert.equal(
      encodeTypedDataType('Order', types),
      'Order(Zeta[2][] zeta,Alpha alpha,Alpha[] again)Alpha(Mid[] m)Mid()Zeta(Mid m)',
    );
    assert.equal(encodeTypedDataType('Mid', types), 'Mid()');
  });
});
