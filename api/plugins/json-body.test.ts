import assert from 'node:assert/strict';
import { isUtf8 } from 'node:buffer';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { findPrototypeKey, firstInvalidUtf8Offset, parseJsonBody } from './json-body.ts';

const refusal = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    const e = err as { code: string; httpStatus: number; message: string; details?: Record<string, unknown> };
    return { code: e.code, status: e.httpStatus, message: e.message, details: e.details };
  }
  assert.fail('expected a refusal');
};

describe('firstInvalidUtf8Offset', () => {
  test('agrees with the native isUtf8 and with a fatal TextDecoder on arbitrary bytes', () => {
    const fatal = new TextDecoder('utf-8', { fatal: true });
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
        const at = firstInvalidUtf8Offset(bytes);
        assert.equal(at === -1, isUtf8(bytes));
        if (at === -1) return;
        // Everything before the reported offset decodes; the sequence starting there does not.
        fatal.decode(bytes.subarray(0, at));
        assert.throws(() => fatal.decode(bytes.subarray(at)));
      }),
      { numRuns: 5000, seed: 1 },
    );
  });

  test('names the lead byte of overlong forms, surrogates, code points past U+10FFFF and truncations', () => {
    const at = (hex: string) => firstInvalidUtf8Offset(Buffer.from(hex, 'hex'));
    assert.equal(at('61c3a9'), -1); // "aé"
    assert.equal(at('61c0af'), 1); // overlong "/"
    assert.equal(at('6161e0808f'), 2); // overlong 3-byte form
    assert.equal(at('eda080'), 0); // U+D800 encoded
    assert.equal(at('f4908080'), 0); // U+110000
    assert.equal(at('f09f98'), 0); // an emoji cut short
    assert.equal(at('41ff'), 1);
  });
});

describe('parseJsonBody', () => {
  test('parses a UTF-8 body, with or without a byte order mark and charset=utf-8', () => {
    assert.deepEqual(parseJsonBody(Buffer.from('{"message":"é ☃ 😀"}')), { message: 'é ☃ 😀' });
    assert.deepEqual(parseJsonBody(Buffer.from('\ufeff{"a":1}')), { a: 1 });
    assert.deepEqual(parseJsonBody(Buffer.from('{"a":1}'), 'application/json; charset=UTF-8'), { a: 1 });
    assert.deepEqual(parseJsonBody(Buffer.from('{"a":1}'), 'application/json;charset="utf8"'), { a: 1 });
  });

  test('bytes that are not UTF-8 are refused with the first bad byte and its offset, never replaced', () => {
    const body = Buffer.concat([Buffer.from('{"message":"a'), Buffer.from([0xff]), Buffer.from('b"}')]);
    const r = refusal(() => parseJsonBody(body));
    assert.equal(r.status, 400);
    assert.equal(r.code, 'INVALID_JSON');
    assert.equal(r.message, 'body is not valid UTF-8: byte 0xff at offset 13 does not start a UTF-8 character');
    // Latin-1 "é" (0xe9) followed by ASCII: a truncated three-byte lead.
    const latin1 = Buffer.from('{"message":"caf\u00e9"}', 'latin1');
    assert.match(refusal(() => parseJsonBody(latin1)).message, /byte 0xe9 at offset 15/);
  });

  test('a charset other than UTF-8 is a 415 naming it', () => {
    const r = refusal(() => parseJsonBody(Buffer.from('{"a":1}'), 'application/json; charset=iso-8859-1'));
    assert.equal(r.status, 415);
    assert.equal(r.code, 'UNSUPPORTED_MEDIA_TYPE');
    assert.match(r.message, /charset=iso-8859-1 is not accepted/);
  });

  test('broken JSON says what the parser saw; an empty body says it is empty', () => {
    const r = refusal(() => parseJsonBody(Buffer.from('{"a":1')));
    assert.equal(r.code, 'INVALID_JSON');
    assert.match(r.message, /^body is not valid JSON: .*position 6/);
    assert.equal(
      refusal(() => parseJsonBody(Buffer.alloc(0))).message,
      "body is empty but Content-Type is 'application/json'",
    );
  });

  test('a __proto__ key is refused as what it is, with where it is, however it is spelled', () => {
    for (const [body, where] of [
      ['{"__proto__":{"admin":true}}', 'body.__proto__'],
      ['{"typedData":{"message":{"__proto__":{}}}}', 'body.typedData.message.__proto__'],
      ['{"a":[1,{"b":[{"__proto__":null}]}]}', 'body.a.1.b.0.__proto__'],
      ['{"\\u005f\\u005fproto\\u005f\\u005f":1}', 'body.__proto__'],
      ['{"x":{"constructor":{"prototype":{"polluted":true}}}}', 'body.x.constructor.prototype'],
      ['{"constru\\u0063tor":{"prototype":1}}', 'body.constructor.prototype'],
    ] as const) {
      const r = refusal(() => parseJsonBody(Buffer.from(body)));
      assert.equal(r.status, 400, body);
      assert.equal(r.code, 'INVALID_REQUEST', body);
      assert.equal(
        r.message,
        `${where} is not accepted: "__proto__" and "constructor.prototype" keys could change object prototypes`,
      );
      assert.deepEqual(r.details, { field: where });
    }
  });

  test('the words alone, as values or harmless keys, are accepted', () => {
    for (const body of [
      '{"message":"__proto__ constructor"}',
      '{"constructor":"x","prototype":{}}',
      '{"constructor":{"name":"x"}}',
      '{"message":"\\u00e9"}',
      '["__proto__"]',
    ]) {
      assert.deepEqual(parseJsonBody(Buffer.from(body)), JSON.parse(body), body);
    }
  });

  test('deep nesting is walked without overflowing the stack', () => {
    const depth = 50_000;
    const deep = `${'{"a":'.repeat(depth)}{"__proto__":1}${'}'.repeat(depth)}`;
    // A body this deep is refused for its depth before it is parsed; the walker itself must still cope.
    assert.match(refusal(() => parseJsonBody(Buffer.from(deep))).message, /nested more than 64 levels deep/);
    assert.match(findPrototypeKey(JSON.parse(deep)) ?? '', /\.a\.__proto__$/);
    assert.equal(findPrototypeKey(JSON.parse(`${'['.repeat(depth)}"constructor"${']'.repeat(depth)}`)), undefined);
  });
});
