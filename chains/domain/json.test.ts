import assert from 'node:assert/strict';
import { test } from 'node:test';
import { jsonNumber, jsonString } from './json.ts';

test('jsonNumber writes what JSON.stringify writes, also for a number written again and after one that is not finite', () => {
  const numbers = [1795847689520, 1795847689520, Number.NaN, Number.NaN, 1795847689520, Number.POSITIVE_INFINITY];
  numbers.push(Number.NEGATIVE_INFINITY, -0, 0, -0, 1e21, 1e21, 0.1, -12.5, 2 ** 53, 7, 7);
  for (const n of numbers) assert.equal(jsonNumber(n), JSON.stringify(n), String(n));
});

test('jsonString writes what JSON.stringify writes: quotes, backslashes, control characters, lone surrogates', () => {
  for (const s of ['', 'plain', 'a"b', 'a\\b', '\u0000\u001f\u007f', 'line\nbreak', '\ud800', '\udc00x', '✓ 𝄞']) {
    assert.equal(jsonString(s), JSON.stringify(s));
  }
});
