import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createFrameDecoder, encodeFrame, parseRequest } from './framing.ts';
import { MAX_FRAME_BYTES } from './protocol.ts';

function collect() {
  const frames: unknown[] = [];
  const badLengths: number[] = [];
  const decoder = createFrameDecoder({
    onFrame: (body) => frames.push(JSON.parse(body.toString('utf8'))),
    onBadLength: (length) => badLengths.push(length),
  });
  return { decoder, frames, badLengths };
}

function header(length: number): Buffer {
  const buf = Buffer.alloc(4);
  buf.writeUInt32BE(length, 0);
  return buf;
}

describe('encodeFrame', () => {
  test('writes a 4-byte big-endian byte length then the UTF-8 JSON', () => {
    const frame = encodeFrame({ id: 1, op: 'ping', note: 'héllo €' });
    const json = JSON.stringify({ id: 1, op: 'ping', note: 'héllo €' });
    assert.equal(frame.readUInt32BE(0), Buffer.byteLength(json));
    assert.equal(frame.subarray(4).toString('utf8'), json);
  });

  test('refuses a message larger than MAX_FRAME_BYTES', () => {
    assert.throws(() => encodeFrame({ blob: 'x'.repeat(MAX_FRAME_BYTES) }), RangeError);
  });
});

describe('createFrameDecoder', () => {
  test('reassembles frames split at every byte', () => {
    const { decoder, frames } = collect();
    const messages = [
      { id: 1, op: 'ping' },
      { id: 2, op: 'generateKey', params: { walletId: 'wä€', scheme: 'DKLS' } },
    ];
    const bytes = Buffer.concat(messages.map((m) => encodeFrame(m)));
    for (let i = 0; i < bytes.length; i++) decoder.push(bytes.subarray(i, i + 1));
    assert.deepEqual(frames, messages);
    assert.equal(decoder.bufferedBytes, 0);
  });

  test('delivers many frames from one chunk, and a trailing partial frame later', () => {
    const { decoder, frames } = collect();
    const messages = Array.from({ length: 500 }, (_, i) => ({ id: i + 1, op: 'ping' }));
    const bytes = Buffer.concat(messages.map((m) => encodeFrame(m)));
    const partial = encodeFrame({ id: 501, op: 'ping' });
    decoder.push(Buffer.concat([bytes, partial.subarray(0, 6)]));
    assert.equal(frames.length, 500);
    assert.deepEqual(frames.at(-1), { id: 500, op: 'ping' });
    decoder.push(partial.subarray(6));
    assert.deepEqual(frames.at(-1), { id: 501, op: 'ping' });
  });

  test('handles a large frame arriving in uneven chunks', () => {
    const { decoder, frames } = collect();
    const message = { id: 7, op: 'x', blob: 'a'.repeat(200_000) };
    const bytes = encodeFrame(message);
    let offset = 0;
    for (const size of [1, 3, 70_000, 5, 65_536, 1_000_000]) {
      decoder.push(bytes.subarray(offset, offset + size));
      offset += size;
    }
    assert.deepEqual(frames, [message]);
  });

  test('refuses an oversized length as soon as the header arrives, then ignores the rest', () => {
    const { decoder, frames, badLengths } = collect();
    decoder.push(encodeFrame({ id: 1, op: 'ping' }));
    decoder.push(header(MAX_FRAME_BYTES + 1));
    assert.deepEqual(badLengths, [MAX_FRAME_BYTES + 1]);
    decoder.push(encodeFrame({ id: 2, op: 'ping' }));
    assert.deepEqual(frames, [{ id: 1, op: 'ping' }]);
    assert.equal(decoder.bufferedBytes, 0);
  });

  test('refuses a zero length', () => {
    const { decoder, badLengths } = collect();
    decoder.push(Buffer.concat([header(0), Buffer.from('{}')]));
    assert.deepEqual(badLengths, [0]);
  });

  test('accepts exactly MAX_FRAME_BYTES', () => {
    const { decoder, frames, badLengths } = collect();
    const body = Buffer.from(JSON.stringify({ id: 3, pad: 'p'.repeat(MAX_FRAME_BYTES - 20) }));
    const padded = Buffer.concat([
      body.subarray(0, body.length - 2),
      Buffer.from(' '.repeat(MAX_FRAME_BYTES - body.length)),
      body.subarray(-2),
    ]);
    assert.equal(padded.length, MAX_FRAME_BYTES);
    decoder.push(Buffer.concat([header(MAX_FRAME_BYTES), padded]));
    assert.deepEqual(badLengths, []);
    assert.equal(frames.length, 1);
  });
});

describe('parseRequest', () => {
  const parse = (text: string) => parseRequest(Buffer.from(text, 'utf8'));

  test('accepts a request, with params defaulting to {}', () => {
    assert.deepEqual(parse('{"id":4,"op":"ping"}'), { ok: true, request: { id: 4, op: 'ping', params: {} } });
    assert.deepEqual(parse('{"id":5,"op":"generateKey","params":{"walletId":"w"}}'), {
      ok: true,
      request: { id: 5, op: 'generateKey', params: { walletId: 'w' } },
    });
  });

  test('answers id 0 when the id cannot be read', () => {
    for (const text of [
      'not json',
      '\u0000\u00ff',
      '[]',
      'null',
      '42',
      '"s"',
      '{"op":"ping"}',
      '{"id":0,"op":"ping"}',
    ]) {
      const parsed = parse(text);
      assert.equal(parsed.ok, false, text);
      if (!parsed.ok) assert.equal(parsed.id, 0, text);
    }
    for (const id of ['-1', '1.5', '"7"', '1e300', 'null', String(Number.MAX_SAFE_INTEGER + 2)]) {
      const parsed = parse(`{"id":${id},"op":"ping"}`);
      assert.equal(parsed.ok, false, id);
      if (!parsed.ok) assert.equal(parsed.id, 0, id);
    }
  });

  test('answers with the id when the id is readable but the rest is not a request', () => {
    for (const text of [
      '{"id":9}',
      '{"id":9,"op":""}',
      '{"id":9,"op":3}',
      '{"id":9,"op":"ping","params":[]}',
      '{"id":9,"op":"ping","params":"x"}',
    ]) {
      const parsed = parse(text);
      assert.equal(parsed.ok, false, text);
      if (!parsed.ok) assert.equal(parsed.id, 9, text);
    }
  });
});
