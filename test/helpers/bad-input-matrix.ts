import zlib from 'node:zlib';
import { BODY_LIMIT } from '../../api/app.ts';
import { EIP712_MAIL } from '../../fixtures/eip712-mail.ts';
import { envelopeProblems, rawRequest } from './bad-input-http.ts';

export const JSON_CT = 'application/json';

/** One invalid request and what its refusal must look like (any 4xx envelope unless narrowed). */
export interface BadCase {
  name: string;
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  chunked?: boolean;
  status?: number | readonly number[];
  code?: string;
}

/** A body sent to a route whose path, auth and headers are otherwise valid. `contentType: null` sends none. */
export interface BodyVariant {
  name: string;
  body: string | Buffer;
  contentType?: string | null;
  headers?: Record<string, string>;
  chunked?: boolean;
  status?: number | readonly number[];
  code?: string;
}

/** The schema facts of one body field that the variants are derived from. */
export type FieldSpec =
  | { name: string; kind: 'string'; required: boolean; maxLength: number; notBlank?: boolean }
  | { name: string; kind: 'enum'; required: boolean; values: readonly string[]; bad: readonly string[] }
  | { name: string; kind: 'integer'; required: boolean; min: number; max: number }
  | { name: string; kind: 'boolean'; required: boolean }
  | { name: string; kind: 'object'; required: boolean }
  | {
      name: string;
      kind: 'string-array';
      required: boolean;
      maxItems: number;
      itemMaxLength: number;
      bad: ReadonlyArray<readonly string[]>;
    };

const json = (v: unknown) => JSON.stringify(v);
const DEPTH = 20_000;

function multipart(fields: Record<string, unknown>): string {
  const parts = Object.entries(fields).map(
    ([k, v]) => `--XBOUNDARY\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${String(v)}\r\n`,
  );
  return `${parts.join('')}--XBOUNDARY--\r\n`;
}

/**
 * Bodies that no route may accept whatever its schema: broken JSON, forbidden keys, a body over the
 * 1 MiB limit, and the valid body itself under a content type other than JSON.
 */
export function parseLevelVariants(valid: Record<string, unknown>): BodyVariant[] {
  const v = json(valid);
  const inner = v.slice(1, -1);
  const withInner = (s: string) => `{${s}${inner ? `,${inner}` : ''}}`;
  const form = new URLSearchParams(Object.entries(valid).map(([k, x]): [string, string] => [k, String(x)])).toString();
  const huge = json({ ...valid, padding: 'x'.repeat(BODY_LIMIT) });
  return [
    { name: 'malformed JSON {"type":', body: '{"type":', status: 400, code: 'INVALID_JSON' },
    { name: 'truncated JSON', body: v.slice(0, -1), status: 400 },
    { name: 'trailing garbage after JSON', body: `${v}x`, status: 400 },
    { name: 'two JSON documents', body: `${v}${v}`, status: 400 },
    { name: 'single-quoted JSON', body: inner ? v.replaceAll('"', "'") : "{'a':1}", status: 400 },
    { name: 'JSON with a comment', body: `/* hi */${v}`, status: 400 },
    { name: 'trailing comma', body: inner ? `{${inner},}` : '{"a":1,}', status: 400 },
    { name: 'NaN literal', body: withInner('"n":NaN'), status: 400 },
    { name: 'empty body with Content-Type: application/json', body: '', status: 400, code: 'INVALID_JSON' },
    { name: 'whitespace-only body', body: ' \n\t ', status: 400 },
    { name: '__proto__ key (prototype poisoning)', body: withInner('"__proto__":{"polluted":true}'), status: 400 },
    {
      name: 'constructor.prototype key (prototype poisoning)',
      body: withInner('"constructor":{"prototype":{"polluted":true}}'),
      status: 400,
    },
    {
      name: 'gzip-compressed body (Content-Encoding is not supported)',
      body: zlib.gzipSync(v),
      headers: { 'content-encoding': 'gzip' },
      status: [400, 415],
    },
    {
      name: 'UTF-16 body declared as such',
      body: Buffer.from(v, 'utf16le'),
      contentType: 'application/json; charset=utf-16le',
      status: [400, 415],
    },
    { name: 'body over the 1 MiB limit', body: huge, status: 413, code: 'PAYLOAD_TOO_LARGE' },
    { name: 'chunked body over the 1 MiB limit', body: huge, chunked: true, status: 413, code: 'PAYLOAD_TOO_LARGE' },
    { name: 'Content-Type: text/plain', body: v, contentType: 'text/plain', status: [400, 415] },
    {
      name: 'Content-Type: application/x-www-form-urlencoded',
      body: form,
      contentType: 'application/x-www-form-urlencoded',
      status: [400, 415],
    },
    {
      name: 'Content-Type: multipart/form-data',
      body: multipart(valid),
      contentType: 'multipart/form-data; boundary=XBOUNDARY',
      status: [400, 415],
    },
    { name: 'no Content-Type with a JSON body', body: v, contentType: null, status: [400, 415] },
    { name: 'Content-Type: application/xml', body: '<a/>', contentType: 'application/xml', status: [400, 415] },
    { name: 'Content-Type: text/json', body: v, contentType: 'text/json', status: [400, 415] },
  ];
}

/** Bodies that parse but are not an object of the route's shape. */
export function shapeVariants(valid: Record<string, unknown>): BodyVariant[] {
  const v = json(valid);
  const nestedArrays = `${'['.repeat(DEPTH)}${']'.repeat(DEPTH)}`;
  const nestedObjects = `${'{"a":'.repeat(DEPTH)}1${'}'.repeat(DEPTH)}`;
  const firstKey = Object.keys(valid)[0]!;
  return [
    { name: 'JSON array', body: '[]', status: 400 },
    { name: 'array holding the valid body', body: `[${v}]`, status: 400 },
    { name: 'JSON string', body: '"x"', status: 400 },
    { name: 'JSON number', body: '1', status: 400 },
    { name: 'JSON true', body: 'true', status: 400 },
    { name: 'JSON null', body: 'null', status: 400 },
    { name: 'empty object', body: '{}', status: 400 },
    { name: 'unknown extra field', body: json({ ...valid, extra: 'x' }), status: 400 },
    { name: 'unknown extra field holding an object', body: json({ ...valid, meta: { a: 1 } }), status: 400 },
    {
      name: 'server-owned field id',
      body: json({ ...valid, id: '00000000-0000-4000-8000-000000000000' }),
      status: 400,
    },
    {
      name: 'deeply nested arrays in an unknown field',
      body: `${v.slice(0, -1)},"deep":${nestedArrays}}`,
      status: 400,
    },
    {
      name: `deeply nested objects in ${firstKey}`,
      body: json({ ...valid, [firstKey]: '__RAW__' }).replace('"__RAW__"', nestedObjects),
      status: 400,
    },
    { name: 'deeply nested top-level arrays', body: nestedArrays, status: 400 },
  ];
}

/** One wrong value per field: wrong JSON types, out-of-range and unknown values, missing fields. */
export function fieldVariants(valid: Record<string, unknown>, fields: readonly FieldSpec[]): BodyVariant[] {
  const out: BodyVariant[] = [];
  for (const f of fields) {
    const set = (value: unknown, name: string): BodyVariant => ({
      name: `${f.name}: ${name}`,
      body: json({ ...valid, [f.name]: value }),
      status: 400,
    });
    const raw = (literal: string, name: string): BodyVariant => ({
      name: `${f.name}: ${name}`,
      body: json({ ...valid, [f.name]: '__RAW__' }).replace('"__RAW__"', literal),
      status: 400,
    });
    if (f.required) {
      const { [f.name]: _gone, ...rest } = valid;
      out.push({ name: `${f.name}: missing`, body: json(rest), status: 400 });
    }
    out.push(set(null, 'null'));
    switch (f.kind) {
      case 'string':
        out.push(set(1, 'number'), set(true, 'boolean'), set({}, 'object'), set([], 'empty array'));
        out.push(set(['x'], 'array of string'), set('', 'empty string'));
        if (f.notBlank) out.push(set('   ', 'blank'), set('\t\n', 'tab and newline only'));
        out.push(set('a'.repeat(f.maxLength + 1), `${f.maxLength + 1} characters`));
        out.push(set('a'.repeat(100 * 1024), '100 KB string'));
        break;
      case 'enum': {
        const good = f.values[0]!;
        out.push(set(1, 'number'), set(true, 'boolean'), set({}, 'object'), set([good], 'array of a valid value'));
        for (const b of f.bad) out.push(set(b, `unknown value ${json(b)}`));
        out.push(set(good.toLowerCase() === good ? good.toUpperCase() : good.toLowerCase(), 'other letter case'));
        out.push(set(`${good} `, 'trailing space'), set(`${good}\u0000`, 'trailing NUL'), set('', 'empty string'));
        break;
      }
      case 'integer':
        out.push(set(String(f.min), 'numeric string'), set(1.5, 'fraction'), set(true, 'boolean'));
        out.push(set({}, 'object'), set([f.min], 'array'), set(f.min - 1, 'below the minimum'), set(-1, 'negative'));
        out.push(
          set(f.max + 1, 'above the maximum'),
          raw('1e400', '1e400 (Infinity)'),
          raw('-0.0000001', 'tiny negative'),
        );
        break;
      case 'boolean':
        out.push(set('true', 'string "true"'), set(1, 'number 1'), set(0, 'number 0'));
        out.push(set({}, 'object'), set([], 'empty array'));
        break;
      case 'object':
        out.push(set('x', 'string'), set(1, 'number'), set(true, 'boolean'), set([], 'empty array'));
        out.push(set([valid[f.name]], 'array holding the valid value'));
        break;
      case 'string-array': {
        const item = (valid[f.name] as string[])[0]!;
        out.push(set(item, 'a string instead of an array'), set(1, 'number'), set({}, 'object'), set(true, 'boolean'));
        out.push(set([1], 'array of number'), set([null], 'array of null'), set([{}], 'array of object'));
        out.push(set([[item]], 'nested array'), set([''], 'array of empty string'));
        out.push(set(['x'.repeat(f.itemMaxLength + 1)], `item of ${f.itemMaxLength + 1} characters`));
        out.push(
          set(
            Array.from({ length: f.maxItems + 1 }, () => item),
            `${f.maxItems + 1} items`,
          ),
        );
        for (const b of f.bad) out.push(set(b, json(b)));
        break;
      }
    }
  }
  return out;
}

/**
 * Variants of an object nested under `key` of `outer`: each variant's JSON text becomes the value of `key`
 * (so the field variants of `authorization` or `typedData` are built from their own field specs).
 */
export function nestedVariants(
  outer: Record<string, unknown>,
  key: string,
  variants: readonly BodyVariant[],
): BodyVariant[] {
  const template = json({ ...outer, [key]: '__RAW__' });
  return variants.map((v) => {
    const inner = typeof v.body === 'string' ? v.body : v.body.toString('utf8');
    return { ...v, name: `${key}.${v.name}`, body: template.replace('"__RAW__"', () => inner) };
  });
}

/** Turns body variants into cases on one route. */
export function withBodies(
  route: { method: string; path: string; headers: Record<string, string> },
  variants: readonly BodyVariant[],
): BadCase[] {
  return variants.map((v) => ({
    name: v.name,
    method: route.method,
    path: route.path,
    headers: {
      ...route.headers,
      ...(v.contentType === null ? {} : { 'content-type': v.contentType ?? JSON_CT }),
      ...(v.headers ?? {}),
    },
    body: v.body,
    ...(v.chunked ? { chunked: true } : {}),
    ...(v.status === undefined ? {} : { status: v.status }),
    ...(v.code === undefined ? {} : { code: v.code }),
  }));
}

/** A type 2 EVM transaction that `sign-transaction` signs for any EVM wallet allowed to sign. */
export const EVM_TRANSACTION = {
  to: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
  value: '1',
  chainId: 1,
  type: 2,
  nonce: 0,
  gasLimit: '21000',
  maxFeePerGas: '2',
  maxPriorityFeePerGas: '1',
} as const;

/** Path parameter values no route may act on, written as they go on the wire. */
export const BAD_IDS: ReadonlyArray<{ name: string; segment: string }> = [
  { name: '10,000-character id', segment: 'a'.repeat(10_000) },
  { name: '129-character id (schema limit is 128)', segment: 'a'.repeat(129) },
  { name: '101-character id', segment: 'b'.repeat(101) },
  { name: '100-character id', segment: 'c'.repeat(100) },
  { name: 'NUL byte %00', segment: '%00' },
  { name: 'NUL inside the id', segment: 'abc%00def' },
  { name: 'dot-dot', segment: '..' },
  { name: 'percent-encoded dot-dot', segment: '%2e%2e' },
  { name: 'encoded-slash traversal', segment: '..%2F..%2Fetc%2Fpasswd' },
  { name: 'encoded space', segment: '%20' },
  { name: 'emoji', segment: '%F0%9F%92%A9' },
  { name: 'accented letter', segment: 'w%C3%A9' },
  { name: 'right-to-left override', segment: '%E2%80%AE' },
  { name: 'encoded lone surrogate (invalid UTF-8)', segment: '%ED%A0%80' },
  { name: 'lone percent sign', segment: '%' },
  { name: 'invalid percent escape', segment: '%zz' },
  { name: 'SQL-looking id', segment: '%27%20OR%20%271%27%3D%271' },
  { name: 'well-formed unknown UUID', segment: '00000000-0000-4000-8000-000000000000' },
];

/** Shortens long paths for failure messages. */
function shortPath(p: string): string {
  return p.length > 90 ? `${p.slice(0, 60)}…(${p.length} chars)` : p;
}

/**
 * Sends every case in order and returns one line per failing case (see `envelopeProblems`). Each
 * request carries its own `X-Request-Id`, which must come back in the header and the body.
 */
export async function runCases(
  /** The base URL, or a function of the case's path answering the listener that serves it. */
  base: string | ((path: string) => string),
  cases: readonly BadCase[],
  opts: { forbidden?: readonly string[] } = {},
): Promise<string[]> {
  const failures: string[] = [];
  for (const [i, c] of cases.entries()) {
    const requestId = `bad-input-${i}`;
    const label = `${c.method} ${shortPath(c.path)} [${c.name}]`;
    try {
      const res = await rawRequest(typeof base === 'string' ? base : base(c.path), {
        method: c.method,
        path: c.path,
        headers: { 'x-request-id': requestId, ...(c.headers ?? {}) },
        ...(c.body === undefined ? {} : { body: c.body }),
        ...(c.chunked ? { chunked: true } : {}),
      });
      const problems = envelopeProblems(res, {
        ...(c.status === undefined ? {} : { status: c.status }),
        ...(c.code === undefined ? {} : { code: c.code }),
        requestId,
        ...(opts.forbidden ? { forbidden: opts.forbidden } : {}),
      });
      if (problems.length > 0) failures.push(`${label}: ${problems.join('; ')}`);
    } catch (err) {
      failures.push(`${label}: no answer (${(err as Error).message})`);
    }
  }
  return failures;
}

/** The EIP-712 "Mail" example that `sign-typed-data` signs for any EVM wallet allowed to sign. */
export const MAIL_TYPED_DATA = EIP712_MAIL;
