/**
 * Caps on the shape of JSON request bodies, checked on the text before it is parsed, where refusing costs least:
 * the nesting depth, and the number of objects and arrays. `JSON.parse` takes deep nesting without overflowing, but
 * slowly, and whatever walks the parsed value next (the schema validator, the copy to a chain worker, a chain step)
 * would pay again; and the objects and arrays it builds are most of what parsing a body costs the event loop. No
 * route takes anything near either cap: the deepest, sign-typed-data, nests its message 32 levels below
 * `body.typedData.message`, and holds at most 16,384 values (typed-data-limits.ts) besides its types.
 */

import { invalidRequest, type ServiceError } from '../chains/domain/errors.ts';
import { TYPED_DATA_LIMITS } from '../chains/evm/typed-data-limits.ts';

/** Deepest nesting of objects and arrays a request body may have (the body itself is level 1). */
export const MAX_JSON_DEPTH = 64;

/** Most objects and arrays a request body may hold: twice the values typed data may have, for its types. */
export const MAX_JSON_CONTAINERS = 2 * TYPED_DATA_LIMITS.values;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const COMMA = 0x2c;

/** Longest field path written into the answer; deeper paths end with an ellipsis. */
const MAX_PATH_CHARS = 200;

/** Index of the quote that closes the string opened at `open`, or -1 when the text ends first. */
function stringEnd(text: string, open: number): number {
  let close = open;
  for (;;) {
    close = text.indexOf('"', close + 1);
    if (close === -1) return -1;
    // Escaped when preceded by an odd number of backslashes.
    let backslashes = 0;
    while (text.charCodeAt(close - 1 - backslashes) === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return close;
  }
}

function keyText(raw: string): string {
  try {
    const key = JSON.parse(raw) as string;
    return /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`;
  } catch {
    return '[?]';
  }
}

/**
 * The 400 for JSON `text` that nests objects and arrays more than `limits.depth` levels, or holds more than
 * `limits.containers` of them, naming the path of the first value past the cap
 * (`body.typedData.message.extra[0][0]…`); `undefined` when the text is within both. Reads the text once, skipping
 * strings whole, counting brackets only; a refused text is read again, up to the offending bracket, for the path.
 * It does not validate JSON (the parser that runs next does).
 */
export function jsonLimitsError(
  text: string,
  limits: { depth: number; containers: number } = { depth: MAX_JSON_DEPTH, containers: MAX_JSON_CONTAINERS },
): ServiceError | undefined {
  let depth = 0;
  let containers = 0;
  for (let i = 0; i < text.length; i++) {
    const char = text.charCodeAt(i);
    if (char === QUOTE) {
      i = stringEnd(text, i);
      if (i === -1) return undefined;
    } else if (char === OPEN_BRACE || char === OPEN_BRACKET) {
      if (++depth > limits.depth) {
        return refuse(
          text,
          i,
          `is nested more than ${limits.depth} levels deep; request bodies may nest objects and arrays ${limits.depth} levels at most`,
        );
      }
      if (++containers > limits.containers) {
        return refuse(
          text,
          i,
          `is object or array number ${containers} of the body; request bodies may hold ${limits.containers} objects and arrays at most`,
        );
      }
    } else if (char === CLOSE_BRACE || char === CLOSE_BRACKET) {
      depth--;
    }
  }
  return undefined;
}

/** The path of the value opening at `end`, read from the start of the text. */
function pathTo(text: string, end: number): string {
  // Per open container: whether it is an object, the key or index of the value being read in it.
  const isObject: boolean[] = [];
  const keys: string[] = [];
  const indexes: number[] = [];
  let expectKey = false;
  for (let i = 0; i < end; i++) {
    const char = text.charCodeAt(i);
    if (char === QUOTE) {
      const close = stringEnd(text, i);
      if (close === -1) break;
      const depth = isObject.length;
      if (expectKey && depth > 0) {
        keys[depth - 1] = text.slice(i, close + 1);
        expectKey = false;
      }
      i = close;
    } else if (char === OPEN_BRACE || char === OPEN_BRACKET) {
      isObject.push(char === OPEN_BRACE);
      keys.push('');
      indexes.push(0);
      expectKey = char === OPEN_BRACE;
    } else if (char === CLOSE_BRACE || char === CLOSE_BRACKET) {
      isObject.pop();
      keys.pop();
      indexes.pop();
      expectKey = false;
    } else if (char === COMMA && isObject.length > 0) {
      const depth = isObject.length;
      if (isObject[depth - 1]) expectKey = true;
      else indexes[depth - 1]!++;
    }
  }
  let field = 'body';
  for (let level = 0; level < isObject.length; level++) {
    field += isObject[level] ? keyText(keys[level] ?? '') : `[${indexes[level]}]`;
    if (field.length > MAX_PATH_CHARS) return `${field.slice(0, MAX_PATH_CHARS)}…`;
  }
  return field;
}

function refuse(text: string, at: number, problem: string): ServiceError {
  const field = pathTo(text, at);
  return invalidRequest(`${field} ${problem}`, { field });
}
