/**
 * The JSON body parser: the body is read as bytes and checked once, so that what a route signs is what the
 * partner sent. Fastify's own parser decodes invalid UTF-8 to U+FFFD replacement characters (a message would
 * then be signed as text the partner never sent) and answers a `__proto__` key with "Body is not valid JSON",
 * though the body is valid JSON. Here:
 * - a charset other than UTF-8 is a 415 (JSON is UTF-8, RFC 8259 §8.1; any other reading would differ);
 * - bytes that are not UTF-8 are a 400 `INVALID_JSON` naming the first bad byte and its offset;
 * - a `__proto__` key, or a `constructor` object holding `prototype`, is a 400 `INVALID_REQUEST` naming
 *   where it is (such keys change prototypes when a body is merged into another object);
 * - JSON nested deeper, or holding more objects and arrays, than any route takes is a 400 naming the path,
 *   found on the text before `JSON.parse` builds it (json-limits.ts).
 */
import { isUtf8 } from 'node:buffer';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { ServiceError } from '../../chains/domain/errors.ts';
import { jsonLimitsError } from '../json-limits.ts';

const invalidJson = (message: string) => new ServiceError('INVALID_JSON', 400, message);

/**
 * Offset of the first byte that does not start a well-formed UTF-8 sequence (Unicode 15, table 3-7: no
 * overlong forms, no surrogates, nothing above U+10FFFF), or -1 when all of `buf` is UTF-8.
 */
export function firstInvalidUtf8Offset(buf: Uint8Array): number {
  let i = 0;
  while (i < buf.length) {
    const b = buf[i]!;
    if (b < 0x80) {
      i += 1;
      continue;
    }
    let need: number;
    let lo = 0x80;
    let hi = 0xbf;
    if (b >= 0xc2 && b <= 0xdf) need = 1;
    else if (b >= 0xe0 && b <= 0xef) {
      need = 2;
      if (b === 0xe0) lo = 0xa0;
      if (b === 0xed) hi = 0x9f;
    } else if (b >= 0xf0 && b <= 0xf4) {
      need = 3;
      if (b === 0xf0) lo = 0x90;
      if (b === 0xf4) hi = 0x8f;
    } else return i;
    if (i + need >= buf.length) return i;
    const second = buf[i + 1]!;
    if (second < lo || second > hi) return i;
    for (let k = 2; k <= need; k++) {
      const c = buf[i + k]!;
      if (c < 0x80 || c > 0xbf) return i;
    }
    i += need + 1;
  }
  return -1;
}

/** A JSON key that decodes to `word`: each character written plainly or as a `\u00XX` escape, then a colon. */
function keyPattern(word: string): string {
  const chars = [...word].map((c) => {
    const hex = c.charCodeAt(0).toString(16).padStart(4, '0');
    return `(?:${c}|\\\\u${hex.slice(0, 3)}[${hex[3]}${hex[3]!.toUpperCase()}])`;
  });
  return `"${chars.join('')}"\\s*:`;
}

/** A body that may hold a `__proto__` or `constructor` key; only such bodies are walked. */
const SUSPECT = new RegExp(`${keyPattern('__proto__')}|${keyPattern('constructor')}`);

/**
 * Where the parsed value holds an own `__proto__` key or a `constructor` object with an own `prototype`
 * (secure-json-parse's two cases), as a dotted path from `body`; undefined when it holds neither.
 * Breadth-first over the containers only, each remembering its parent, so that deep nesting cannot
 * overflow the stack and the path is spelled only once something is found.
 */
export function findPrototypeKey(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const nodes: object[] = [value];
  const parents: number[] = [-1];
  const keys: Array<string | number> = ['body'];
  const pathOf = (i: number): string => {
    const parts: Array<string | number> = [];
    for (let at = i; at !== -1; at = parents[at]!) parts.push(keys[at]!);
    return parts.reverse().join('.');
  };
  for (let i = 0; i < nodes.length; i++) {
    const node = nodes[i]!;
    if (Array.isArray(node)) {
      for (let j = 0; j < node.length; j++) {
        const child: unknown = node[j];
        if (typeof child === 'object' && child !== null) {
          nodes.push(child);
          parents.push(i);
          keys.push(j);
        }
      }
      continue;
    }
    if (Object.hasOwn(node, '__proto__')) return `${pathOf(i)}.__proto__`;
    const record = node as Record<string, unknown>;
    for (const key in record) {
      const child = record[key];
      if (typeof child !== 'object' || child === null) continue;
      if (key === 'constructor' && Object.hasOwn(child, 'prototype')) return `${pathOf(i)}.constructor.prototype`;
      nodes.push(child);
      parents.push(i);
      keys.push(key);
    }
  }
  return undefined;
}

/** The charset parameter of a Content-Type, lower-cased and unquoted; undefined when there is none. */
function charsetOf(contentType: string | undefined): string | undefined {
  if (contentType === undefined || !contentType.includes(';')) return undefined;
  const m = /;\s*charset\s*=\s*(?:"([^"]*)"|([^;\s]*))/i.exec(contentType);
  return m ? (m[1] ?? m[2] ?? '').toLowerCase() : undefined;
}

/**
 * Parses a JSON request body from its bytes; throws a ServiceError naming the problem. Exported for the
 * unit tests; routes get it through the plugin below.
 */
export function parseJsonBody(body: Buffer, contentType?: string): unknown {
  const charset = charsetOf(contentType);
  if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') {
    throw new ServiceError(
      'UNSUPPORTED_MEDIA_TYPE',
      415,
      `charset=${charset} is not accepted: send the JSON body encoded as UTF-8 (charset=utf-8 or none)`,
    );
  }
  if (body.length === 0) throw invalidJson("body is empty but Content-Type is 'application/json'");
  if (!isUtf8(body)) {
    const at = firstInvalidUtf8Offset(body);
    const byte = body[at]!.toString(16).padStart(2, '0');
    throw invalidJson(`body is not valid UTF-8: byte 0x${byte} at offset ${at} does not start a UTF-8 character`);
  }
  // A UTF-8 byte order mark is allowed before JSON text (RFC 8259 §8.1 lets a parser ignore it).
  let text = body.toString('utf8');
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  const tooLarge = jsonLimitsError(text);
  if (tooLarge) throw tooLarge;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw invalidJson(`body is not valid JSON: ${(err as Error).message}`);
  }
  if (typeof value === 'object' && value !== null && SUSPECT.test(text)) {
    const where = findPrototypeKey(value);
    if (where !== undefined) {
      throw new ServiceError(
        'INVALID_REQUEST',
        400,
        `${where} is not accepted: "__proto__" and "constructor.prototype" keys could change object prototypes`,
        { details: { field: where } },
      );
    }
  }
  return value;
}

/** Replaces Fastify's `application/json` parser with `parseJsonBody` for every route of the app. */
export const jsonBodyPlugin = fp(async (app: FastifyInstance) => {
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser(
    'application/json',
    { parseAs: 'buffer' },
    (req: FastifyRequest, body: Buffer, done: (err: Error | null, value?: unknown) => void) => {
      let value: unknown;
      try {
        value = parseJsonBody(body, req.headers['content-type']);
      } catch (err) {
        done(err as Error);
        return;
      }
      done(null, value);
    },
  );
});
