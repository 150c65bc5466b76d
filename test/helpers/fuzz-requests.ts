/**
 * Requests for the fuzzer, generated with fast-check from the running service's `/openapi.json`: every
 * operation under a prefix (path parameters, query strings, bodies built from the schemas and from valid
 * chain inputs), then mutated (wrong types, missing and extra fields, huge strings, deep nesting, odd
 * Unicode, broken JSON and bytes that are not UTF-8, other content types, other methods, missing or wrong
 * API keys). Each request carries notes saying what was generated, for the failure report.
 *
 * Bounded on purpose: deep, wide and huge values are never placed inside EIP-712 `domain`, `types` or
 * `message` (adversarial EIP-712 is bounded and tested elsewhere), and typed data stays small.
 */
import { isUtf8 } from 'node:buffer';
import fc from 'fast-check';
import { EIP712_MAIL } from '../../fixtures/eip712-mail.ts';
import type { FuzzSeeds } from './fuzz-seeds.ts';

/** The JSON Schema subset the service's OpenAPI document uses. */
export interface JsonSchema {
  type?: string;
  enum?: unknown[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  minimum?: number;
  maximum?: number;
  maxItems?: number;
  minProperties?: number;
  nullable?: boolean;
  $ref?: string;
}

interface Parameter {
  in: string;
  name: string;
  required?: boolean;
  schema: JsonSchema;
}

/** The parts of `/openapi.json` read here. */
export interface OpenApiDoc {
  paths: Record<
    string,
    Record<string, { parameters?: Parameter[]; requestBody?: { content: Record<string, { schema: JsonSchema }> } }>
  >;
  components?: { schemas?: Record<string, JsonSchema> };
}

/** One operation of the document. */
export interface Operation {
  method: string;
  template: string;
  pathParams: Parameter[];
  query: Parameter[];
  body?: JsonSchema;
}

/** One request as sent: the path already encoded, the body as bytes. */
export interface FuzzRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
  chunked?: boolean;
  /** The operation it came from (`POST /v1/wallets/{walletId}/sign-message`) or the probe's path. */
  operation: string;
  /** What was generated and mutated, in order. */
  notes: string[];
}

/** Who and what the requests are about. */
export interface FuzzTargets {
  /** A valid key of the fuzzed project (rate limit out of reach). */
  secret: string;
  /** A valid key of another project. */
  foreignSecret: string;
  /** A wallet of the fuzzed project of each type. */
  wallets: Record<WalletType, string>;
  /** Wallets of the fuzzed project that cannot sign over REST: a pre-generated one and a claimed one. */
  unsignableWalletIds: string[];
  /** A wallet of the other project. */
  foreignWalletIds: string[];
  seeds: FuzzSeeds;
}

export const WALLET_TYPES = ['EVM', 'COSMOS', 'SOLANA', 'STELLAR', 'SUI'] as const;
export type WalletType = (typeof WALLET_TYPES)[number];

/** What a value is generated for: the operation, and the wallet type the request is aimed at. */
interface ValueContext {
  op: Operation;
  seeds: FuzzSeeds;
  chain: WalletType;
}

/** The operations under `prefix`, with `$ref`s resolved. */
export function listOperations(doc: OpenApiDoc, prefix: string): Operation[] {
  const resolve = (s: JsonSchema): JsonSchema =>
    s.$ref ? resolve(doc.components?.schemas?.[s.$ref.split('/').at(-1)!] ?? {}) : s;
  const ops: Operation[] = [];
  for (const [template, methods] of Object.entries(doc.paths)) {
    if (!template.startsWith(prefix)) continue;
    for (const [method, op] of Object.entries(methods)) {
      const params = op.parameters ?? [];
      const body = op.requestBody?.content['application/json']?.schema;
      ops.push({
        method: method.toUpperCase(),
        template,
        pathParams: params.filter((p) => p.in === 'path'),
        query: params.filter((p) => p.in === 'query'),
        ...(body ? { body: resolve(body) } : {}),
      });
    }
  }
  return ops;
}

// ---------------------------------------------------------------------------------------------------------
// Values

/** An index picked evenly (fast-check's integers lean towards small values, here always the first node). */
const anyIndex = fc.noBias(fc.nat({ max: 1 << 20 }));

/** Strings that have broken services: invisible, reordering, non-characters, lone surrogates, injections. */
const ODD_STRINGS = [
  '',
  ' ',
  '\t\n\r',
  '\u0000',
  'a\u0000b',
  'a\ud800b',
  '\udc00',
  '\udbff\udfff',
  '\ufeff',
  '\ufffe\uffff',
  '\u202e\u2066abc',
  '\u2028\u2029',
  'e\u0301\u0301\u0301',
  '👨‍👩‍👧‍👦',
  '𝕏𝔂',
  'İıß',
  'ＡＢＣ',
  '%00%ff',
  '../../etc/passwd',
  "'; DROP TABLE wallets;--",
  '$' + '{process.env}', // a template placeholder, written split so that it stays a plain string
  '{{7*7}}',
  '<script>alert(1)</script>',
  'null',
  'undefined',
  '0x',
  '-0',
  '1e309',
  'NaN',
  '💥'.repeat(300),
  'z\u0336'.repeat(200),
] as const;

const oddString: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...ODD_STRINGS) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 40 }) },
  { weight: 1, arbitrary: fc.string({ maxLength: 40 }) },
);

/** Values of every JSON type, including numbers at the edges of what JSON and JavaScript can hold. */
const wrongTypeValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(null, true, false, 0, -1, 1.5, 1e308, -1e308, 5e-324, 2 ** 53, 2 ** 64, -0, [], {}, '', [[]], [null]),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.jsonValue({ maxDepth: 2 }),
  oddString,
);

const hexOf = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex');

const evmAddress = fc.oneof(
  fc.constantFrom(
    '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
    '0x70997970c51812dc3a010c7d01b50e0d17dc79c8',
    '0x70997970C51812DC3A010C7D01B50E0D17DC79C8',
    '0x0000000000000000000000000000000000000000',
    '0x1234',
  ),
  fc.uint8Array({ minLength: 20, maxLength: 20 }).map((b) => `0x${hexOf(b)}`),
  oddString,
);

/** Hex strings for sign-raw: digests, other lengths, odd lengths, no prefix, not hex. */
const hexData = fc.oneof(
  { weight: 4, arbitrary: fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => `0x${hexOf(b)}`) },
  { weight: 2, arbitrary: fc.uint8Array({ maxLength: 300 }).map((b) => hexOf(b)) },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 40 }).map((b) => `0x${hexOf(b)}f`) },
  { weight: 1, arbitrary: fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => `0X${hexOf(b).toUpperCase()}`) },
  {
    weight: 1,
    arbitrary: fc.constantFrom('0x', '0xzz', 'ab cd', `0x${'ab'.repeat(65_536)}`, `0x${'ab'.repeat(65_537)}`),
  },
  { weight: 1, arbitrary: oddString },
);

/** A byte-level mutation of a serialized transaction (what a parser of that format must survive). */
type ByteMutation =
  | { kind: 'flip'; at: number; bit: number }
  | { kind: 'set'; at: number; value: number }
  | { kind: 'truncate'; at: number }
  | { kind: 'insert'; at: number; bytes: Uint8Array }
  | { kind: 'max-length'; at: number };

const byteMutation: fc.Arbitrary<ByteMutation> = fc.oneof(
  fc.record({ kind: fc.constant('flip' as const), at: anyIndex, bit: fc.integer({ min: 0, max: 7 }) }),
  fc.record({ kind: fc.constant('set' as const), at: anyIndex, value: fc.integer({ min: 0, max: 255 }) }),
  fc.record({ kind: fc.constant('truncate' as const), at: anyIndex }),
  fc.record({
    kind: fc.constant('insert' as const),
    at: anyIndex,
    bytes: fc.uint8Array({ minLength: 1, maxLength: 16 }),
  }),
  fc.record({ kind: fc.constant('max-length' as const), at: anyIndex }),
);

function applyBytes(seed: Buffer, mutations: ByteMutation[]): Buffer {
  let b = Buffer.from(seed);
  for (const m of mutations) {
    const at = b.length === 0 ? 0 : m.at % b.length;
    if (m.kind === 'flip' && b.length > 0) b[at] = b[at]! ^ (1 << m.bit);
    else if (m.kind === 'set' && b.length > 0) b[at] = m.value;
    else if (m.kind === 'truncate') b = b.subarray(0, at);
    else if (m.kind === 'insert') b = Buffer.concat([b.subarray(0, at), m.bytes, b.subarray(at)]);
    // Four 0xff bytes where a length prefix may sit: a parser must not trust it.
    else if (m.kind === 'max-length') b.fill(0xff, at, Math.min(b.length, at + 4));
  }
  return b;
}

/** A transaction for a wallet of `chain`: the chain's own format, mutated; sometimes another chain's. */
function transactionValue(seeds: FuzzSeeds, chain: WalletType): fc.Arbitrary<unknown> {
  const own = chain === 'SOLANA' || chain === 'STELLAR' || chain === 'SUI' ? seeds.encodedTransactions[chain] : [];
  const any = Object.values(seeds.encodedTransactions).flat();
  const encoded = (pool: Buffer[]) =>
    fc
      .tuple(
        fc.constantFrom(...pool),
        fc.oneof(fc.constant([] as ByteMutation[]), fc.array(byteMutation, { minLength: 1, maxLength: 3 })),
        fc.constantFrom('base64', 'base64', 'base64', 'base64url', 'base64 unpadded', 'hex'),
      )
      .map(([seed, mutations, encoding]) => {
        const b = applyBytes(seed, mutations);
        if (encoding === 'hex') return b.toString('hex');
        if (encoding === 'base64url') return b.toString('base64url');
        const s = b.toString('base64');
        return encoding === 'base64' ? s : s.replace(/=+$/, '');
      });
  const options: Array<fc.WeightedArbitrary<unknown>> = [
    { weight: chain === 'EVM' ? 12 : 1, arbitrary: fc.constantFrom(...seeds.evmTransactions) },
    { weight: 2, arbitrary: encoded(any) },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 600 }).map((b) => Buffer.from(b).toString('base64')) },
    { weight: 1, arbitrary: fc.constantFrom('', 'AAAA', '====', 'not base64!', '\u00e9') },
  ];
  if (own.length > 0) options.push({ weight: 12, arbitrary: encoded(own) });
  return fc.oneof(...options);
}

/** Type names EIP-712 allows and ones it does not. */
const EIP712_TYPES = [
  'string',
  'address',
  'bool',
  'bytes',
  'bytes32',
  'bytes1',
  'uint8',
  'uint256',
  'int8',
  'int256',
  'uint',
  'int',
  'bytes0',
  'bytes33',
  'uint7',
  'uint257',
  'Person',
  'Person[]',
  'Person[2]',
  'Person[][]',
  'string[]',
  'address[3]',
  'Mail',
  'Nope',
  '',
  ' ',
  'uint256[0]',
  'EIP712Domain',
] as const;

/** EIP-712 typed data around EIP-712's own example, mutated in its types and values; always small. */
function typedDataValue(): fc.Arbitrary<unknown> {
  const smallValue = fc.oneof(
    fc.constantFrom('0x', '0x00', `0x${'ff'.repeat(32)}`, '-1', '1e3', 'Cow'),
    evmAddress,
    fc.integer(),
    fc.bigInt({ min: -(2n ** 260n), max: 2n ** 260n }).map(String),
    fc.boolean(),
    fc.array(fc.oneof(fc.string({ maxLength: 8 }), fc.integer()), { maxLength: 4 }),
    fc.constant(null),
    oddString,
  );
  const field = fc.record({
    name: fc.oneof(fc.constantFrom('name', 'wallet', 'from', 'to', 'contents'), fc.string({ maxLength: 8 })),
    type: fc.constantFrom(...EIP712_TYPES),
  });
  const types = fc.oneof(
    fc.constant(EIP712_MAIL.types as unknown),
    fc.record(
      {
        Person: fc.oneof(fc.constant(EIP712_MAIL.types.Person as unknown), fc.array(field, { maxLength: 4 })),
        Mail: fc.oneof(fc.constant(EIP712_MAIL.types.Mail as unknown), fc.array(field, { maxLength: 4 })),
        Extra: fc.array(field, { maxLength: 3 }),
      },
      { requiredKeys: ['Mail'] },
    ),
  );
  const domain = fc.oneof(
    fc.constant(EIP712_MAIL.domain as unknown),
    fc.record(
      {
        name: fc.oneof(fc.string({ maxLength: 12 }), wrongTypeValue),
        version: fc.oneof(fc.constant('1'), wrongTypeValue),
        chainId: fc.oneof(fc.integer({ min: 0 }), fc.constantFrom('1', '0x1', -1, 2 ** 64, 1.5), wrongTypeValue),
        verifyingContract: evmAddress,
        salt: fc.oneof(
          fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => `0x${hexOf(b)}`),
          oddString,
        ),
        extra: smallValue,
      },
      { requiredKeys: [] },
    ),
  );
  const person = fc.record(
    { name: fc.oneof(fc.string({ maxLength: 12 }), smallValue), wallet: fc.oneof(evmAddress, smallValue) },
    { requiredKeys: [] },
  );
  const message = fc.oneof(
    fc.constant(EIP712_MAIL.message as unknown),
    fc.record(
      {
        from: fc.oneof(person, smallValue),
        to: fc.oneof(person, fc.array(person, { maxLength: 3 }), smallValue),
        contents: smallValue,
      },
      { requiredKeys: [] },
    ),
  );
  const mutated = fc.record({
    domain,
    types,
    primaryType: fc.oneof(fc.constantFrom('Mail', 'Person', 'Extra', 'EIP712Domain'), fc.string({ maxLength: 10 })),
    message,
  });
  return fc.oneof({ weight: 2, arbitrary: fc.constant(EIP712_MAIL as unknown) }, { weight: 3, arbitrary: mutated });
}

/** An override's way to leave an optional field out (so that a valid request stays likely). */
const ABSENT = Symbol('absent');

/** Mostly `value` or left out, sometimes anything `other` gives. */
const usually = (value: unknown, other: fc.Arbitrary<unknown>) =>
  fc.oneof({ weight: 6, arbitrary: fc.constant(value) }, { weight: 1, arbitrary: other });

/** Domain-aware values for the fields where a schema-only value would stop at the first check. */
function fieldOverride(ctx: ValueContext, key: string): fc.Arbitrary<unknown> | undefined {
  const { op, seeds, chain } = ctx;
  const route = op.template.split('/').at(-1);
  if (route === 'sign-transaction' && key === 'transaction') return transactionValue(seeds, chain);
  if (route === 'sign-transaction' && key === 'networkPassphrase') {
    return usually(
      chain === 'STELLAR' ? seeds.passphrases[0] : ABSENT,
      fc.oneof(fc.constantFrom(...seeds.passphrases), oddString),
    );
  }
  if (route === 'sign-transaction' && key === 'broadcast') return usually(ABSENT, fc.boolean());
  if (route === 'sign-transaction' && key === 'network') {
    return usually(chain === 'SOLANA' ? 'SOLANA_DEVNET' : ABSENT, fc.constantFrom(ABSENT, 'SOLANA', 'SOLANA_DEVNET'));
  }
  if (route === 'sign-typed-data' && key === 'typedData') return typedDataValue();
  if (route === 'sign-raw' && key === 'data') return hexData;
  if (route === 'migrate-share' && key === 'encryptedPayload') {
    return fc.oneof(
      { weight: 3, arbitrary: fc.constantFrom(...seeds.migrationPayloads) },
      {
        weight: 2,
        arbitrary: fc
          .tuple(
            fc.constantFrom(...seeds.migrationPayloads),
            fc.constantFrom('encryptedData', 'keyId', 'ephemeral', 'algorithm'),
            wrongTypeValue,
          )
          .map(([p, k, v]) => JSON.stringify({ ...JSON.parse(p), [k]: v })),
      },
      { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)) },
      { weight: 1, arbitrary: oddString },
    );
  }
  if (key === 'address') return evmAddress;
  if (key === 'contractAddress') return usually(ABSENT, evmAddress);
  if (key === 'type' && route === 'wallets')
    return fc.oneof(
      { weight: 4, arbitrary: fc.constant(chain) },
      { weight: 1, arbitrary: fc.constantFrom(...WALLET_TYPES) },
    );
  if (key === 'scheme') {
    const own = chain === 'EVM' || chain === 'COSMOS' ? 'DKLS' : 'ED25519';
    return usually(ABSENT, fc.constantFrom(own, own, 'DKLS', 'ED25519'));
  }
  if (key === 'cosmosPrefix') {
    return usually(
      ABSENT,
      fc.oneof(
        { weight: 3, arbitrary: fc.constantFrom('cosmos', 'osmo', 'juno') },
        { weight: 1, arbitrary: oddString },
      ),
    );
  }
  if (key === 'walletType') return usually(ABSENT, fc.constantFrom(chain, chain, ...WALLET_TYPES));
  if (key === 'cursor') {
    const cursor = fc
      .oneof(fc.nat(), fc.constantFrom(0, 999_999_999_999_999, 2 ** 53))
      .map((n) => Buffer.from(`w:${n}`).toString('base64url'));
    return fc.oneof({ weight: 3, arbitrary: cursor }, { weight: 1, arbitrary: oddString });
  }
  // A small pool of identifiers, so that creations and updates collide (409s, and races when sent together).
  if (key === 'userIdentifier') {
    return fc.oneof(
      { weight: 3, arbitrary: fc.constantFrom('fuzz-a', 'fuzz-b', 'FUZZ-A', 'fuzz-a ') },
      { weight: 2, arbitrary: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 40 }) },
      { weight: 1, arbitrary: oddString },
    );
  }
  if (route === 'sign-message' && key === 'message') {
    return fc.oneof(
      { weight: 4, arbitrary: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 80 }) },
      { weight: 2, arbitrary: oddString },
      { weight: 1, arbitrary: fc.constantFrom('é'.repeat(32_768), 'é'.repeat(32_769), 'x'.repeat(65_536)) },
    );
  }
  return undefined;
}

/** A value valid for the schema (as far as a schema can say), with domain values where they matter. */
function schemaValue(schema: JsonSchema, ctx: ValueContext, key = ''): fc.Arbitrary<unknown> {
  const override = key ? fieldOverride(ctx, key) : undefined;
  if (override) return override;
  if (schema.enum) return fc.constantFrom(...schema.enum);
  switch (schema.type) {
    case 'string': {
      if (schema.pattern === '^(100|[1-9][0-9]?)$') return fc.integer({ min: 1, max: 100 }).map(String);
      const minLength = schema.minLength ?? 0;
      const maxLength = Math.max(minLength, Math.min(schema.maxLength ?? 40, 40));
      return fc.string({ unit: 'grapheme', minLength, maxLength }).filter((s) => /\S/.test(s) || minLength === 0);
    }
    case 'integer':
      return fc.integer({
        min: Math.max(schema.minimum ?? -(2 ** 31), Number.MIN_SAFE_INTEGER),
        max: Math.min(schema.maximum ?? 2 ** 31, Number.MAX_SAFE_INTEGER),
      });
    case 'number':
      return fc.double({ noNaN: true, noDefaultInfinity: true });
    case 'boolean':
      return fc.boolean();
    case 'array':
      return fc.array(schemaValue(schema.items ?? {}, ctx), { maxLength: Math.min(schema.maxItems ?? 4, 4) });
    case 'object': {
      const props = schema.properties ?? {};
      const model: Record<string, fc.Arbitrary<unknown>> = {};
      for (const [k, s] of Object.entries(props)) model[k] = schemaValue(s, ctx, k);
      // Fields with an override are always generated: the override itself leaves them out (ABSENT).
      const requiredKeys = Object.keys(props).filter((k) => schema.required?.includes(k) || fieldOverride(ctx, k));
      const record = fc.record(model, { requiredKeys }).map((r) => {
        for (const k of Object.keys(r)) if (r[k] === ABSENT) delete r[k];
        return r;
      });
      const min = schema.minProperties ?? 0;
      return min > 0 ? record.filter((r) => Object.keys(r).length >= min) : record;
    }
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

// ---------------------------------------------------------------------------------------------------------
// Mutations of a JSON value

type JsonMutation =
  | { kind: 'drop'; pick: number }
  | { kind: 'extra'; pick: number; key: string; value: unknown }
  | { kind: 'wrong-type'; pick: number; value: unknown }
  | { kind: 'odd-string'; pick: number; value: string }
  | { kind: 'huge'; pick: number; unit: string; count: number }
  | { kind: 'deep'; pick: number; depth: number; shape: 'array' | 'object' }
  | { kind: 'wide'; pick: number; count: number };

const HEAVY = new Set(['huge', 'deep', 'wide']);

const jsonMutation: fc.Arbitrary<JsonMutation> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('drop' as const), pick: anyIndex }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('extra' as const),
      pick: anyIndex,
      key: fc.oneof(
        fc.constantFrom(
          'extra',
          'constructor',
          'prototype',
          'toString',
          'hasOwnProperty',
          'valueOf',
          'then',
          'length',
          '',
          ' ',
          'id',
        ),
        fc.string({ maxLength: 12 }),
      ),
      value: wrongTypeValue,
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({ kind: fc.constant('wrong-type' as const), pick: anyIndex, value: wrongTypeValue }),
  },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('odd-string' as const), pick: anyIndex, value: oddString }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('huge' as const),
      pick: anyIndex,
      unit: fc.constantFrom('x', 'é', '😀', 'ab', '\\', '"', '\u0000'),
      count: fc.constantFrom(70_000, 250_000, 600_000),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('deep' as const),
      pick: anyIndex,
      depth: fc.integer({ min: 20, max: 5_000 }),
      shape: fc.constantFrom('array' as const, 'object' as const),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('wide' as const),
      pick: anyIndex,
      count: fc.integer({ min: 100, max: 20_000 }),
    }),
  },
);

type Path = Array<string | number>;

/** Paths of a value's nodes (the root included), breadth-first, at most `limit` of them. */
function pathsOf(value: unknown, limit = 64): Path[] {
  const out: Path[] = [];
  const queue: Array<[unknown, Path]> = [[value, []]];
  while (queue.length > 0 && out.length < limit) {
    const [node, path] = queue.shift()!;
    out.push(path);
    if (Array.isArray(node)) {
      for (let i = 0; i < node.length; i++) queue.push([node[i], [...path, i]]);
    } else if (typeof node === 'object' && node !== null) {
      for (const [k, v] of Object.entries(node)) queue.push([v, [...path, k]]);
    }
  }
  return out;
}

function getAt(value: unknown, path: Path): unknown {
  let node = value;
  for (const k of path) node = (node as Record<string | number, unknown>)[k];
  return node;
}

function setAt(value: unknown, path: Path, next: unknown): unknown {
  if (path.length === 0) return next;
  const parent = getAt(value, path.slice(0, -1)) as Record<string | number, unknown>;
  parent[path.at(-1)!] = next;
  return value;
}

/**
 * Deep nesting is spliced into the JSON text after serializing (JSON.stringify would recurse once per
 * level, on top of fast-check's own stack): the value holds a placeholder string until then.
 */
const DEEP_PLACEHOLDER = /"@@fuzz-deep:(\d+):(array|object)@@"/g;

function deepPlaceholder(depth: number, shape: 'array' | 'object'): string {
  return `@@fuzz-deep:${depth}:${shape}@@`;
}

function serialize(value: unknown): string {
  return JSON.stringify(value).replace(DEEP_PLACEHOLDER, (_, depth: string, shape: string) =>
    shape === 'array'
      ? `${'['.repeat(Number(depth))}1${']'.repeat(Number(depth))}`
      : `${'{"a":'.repeat(Number(depth))}1${'}'.repeat(Number(depth))}`,
  );
}

/** Free-form EIP-712 parts: heavy values are never put there (adversarial EIP-712 is bounded elsewhere). */
const isEip712Inside = (path: Path) => path[0] === 'typedData' && path.length >= 2;

function applyJsonMutation(value: unknown, m: JsonMutation): { value: unknown; note: string } {
  const heavy = HEAVY.has(m.kind);
  // The root itself is replaced by the byte-level literals; here only its members and itself for 'extra'.
  const all = pathsOf(value).filter((p) => !(heavy && isEip712Inside(p)) && (p.length > 0 || m.kind === 'extra'));
  const paths = all.length > 0 ? all : [[]];
  const path = paths[m.pick % paths.length]!;
  const where = ['body', ...path].join('.');
  const node = getAt(value, path);
  switch (m.kind) {
    case 'drop': {
      if (path.length === 0) return { value: undefined, note: 'dropped the whole body' };
      const parent = getAt(value, path.slice(0, -1));
      if (Array.isArray(parent)) parent.splice(path.at(-1) as number, 1);
      else delete (parent as Record<string, unknown>)[path.at(-1) as string];
      return { value, note: `dropped ${where}` };
    }
    case 'extra':
      if (typeof node === 'object' && node !== null && !Array.isArray(node)) {
        (node as Record<string, unknown>)[m.key] = m.value;
        return { value, note: `added ${where}.${JSON.stringify(m.key)}` };
      }
      return { value: setAt(value, path, m.value), note: `replaced ${where} with a ${typeof m.value}` };
    case 'wrong-type':
      return {
        value: setAt(value, path, m.value),
        note: `replaced ${where} with ${JSON.stringify(m.value)?.slice(0, 40)}`,
      };
    case 'odd-string':
      return { value: setAt(value, path, m.value), note: `replaced ${where} with an odd string` };
    case 'huge':
      return {
        value: setAt(value, path, m.unit.repeat(m.count)),
        note: `replaced ${where} with ${m.count} × ${JSON.stringify(m.unit)}`,
      };
    case 'deep':
      return {
        value: setAt(value, path, deepPlaceholder(m.depth, m.shape)),
        note: `replaced ${where} with ${m.depth} nested ${m.shape}s`,
      };
    case 'wide':
      return {
        value: setAt(
          value,
          path,
          Array.from({ length: m.count }, (_, i) => ({ i })),
        ),
        note: `replaced ${where} with ${m.count} objects`,
      };
  }
}

// ---------------------------------------------------------------------------------------------------------
// Mutations of the bytes

type RawMutation =
  | { kind: 'truncate'; at: number }
  | { kind: 'insert'; at: number; bytes: Uint8Array }
  | { kind: 'replace'; bytes: Uint8Array }
  | { kind: 'literal'; text: string }
  | { kind: 'bom' }
  | { kind: 'utf16' }
  | { kind: 'duplicate-key' }
  | { kind: 'proto-key'; spelled: string };

const JSON_LITERALS = [
  '',
  ' \n\t ',
  'NaN',
  '{"a":NaN}',
  '{"a":1,}',
  "{'a':1}",
  '/* c */{}',
  '{"a":1e999}',
  '{"a":-0}',
  '{"a":01}',
  '{"a":.5}',
  '{"a":+1}',
  '{"a":"\\x41"}',
  '{"a":"\\uD800"}',
  '{"a":"\\u0000"}',
  '{"a":"\\ud83d\\ude00"}',
  '[]',
  'null',
  '"x"',
  '1',
  'true',
  '{}',
  '{"a":',
  `${'['.repeat(10_000)}`,
  `${'{"a":'.repeat(3_000)}1${'}'.repeat(3_000)}`,
  '{"a":"b"}{"a":"b"}',
  '\u0000',
] as const;

const rawMutation: fc.Arbitrary<RawMutation> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('truncate' as const), at: anyIndex }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('insert' as const),
      at: anyIndex,
      bytes: fc.uint8Array({ minLength: 1, maxLength: 8 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('replace' as const), bytes: fc.uint8Array({ maxLength: 200 }) }),
  },
  {
    weight: 3,
    arbitrary: fc.record({ kind: fc.constant('literal' as const), text: fc.constantFrom(...JSON_LITERALS) }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'bom' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'utf16' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'duplicate-key' as const }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('proto-key' as const),
      spelled: fc.constantFrom('__proto__', '\\u005f\\u005fproto\\u005f\\u005f', 'constructor'),
    }),
  },
);

function applyRawMutation(body: Buffer, m: RawMutation): { body: Buffer; note: string } {
  const at = body.length === 0 ? 0 : ('at' in m ? m.at : 0) % body.length;
  const objectStart = body[0] === 0x7b;
  switch (m.kind) {
    case 'truncate':
      return { body: body.subarray(0, at), note: `cut the body to ${at} bytes` };
    case 'insert':
      return {
        body: Buffer.concat([body.subarray(0, at), m.bytes, body.subarray(at)]),
        note: `inserted bytes ${hexOf(m.bytes)} at ${at}`,
      };
    case 'replace':
      return { body: Buffer.from(m.bytes), note: `replaced the body with ${m.bytes.length} random bytes` };
    case 'literal':
      return { body: Buffer.from(m.text), note: `replaced the body with ${JSON.stringify(m.text.slice(0, 30))}` };
    case 'bom':
      return { body: Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), body]), note: 'prefixed a UTF-8 BOM' };
    case 'utf16':
      return { body: Buffer.from(body.toString('utf8'), 'utf16le'), note: 're-encoded the body as UTF-16LE' };
    case 'duplicate-key': {
      if (!objectStart) return { body, note: 'duplicate key (not an object)' };
      const first = /^\{("(?:[^"\\]|\\.)*")/.exec(body.toString('utf8'))?.[1];
      if (!first) return { body, note: 'duplicate key (empty object)' };
      return {
        body: Buffer.concat([Buffer.from(`{${first}:"dup",`), body.subarray(1)]),
        note: `duplicated key ${first}`,
      };
    }
    case 'proto-key':
      if (!objectStart) return { body, note: 'prototype key (not an object)' };
      return {
        body: Buffer.concat([Buffer.from(`{"${m.spelled}":{"prototype":{"polluted":1}},`), body.subarray(1)]),
        note: `inserted key "${m.spelled}"`,
      };
  }
}

// ---------------------------------------------------------------------------------------------------------
// Requests

const METHODS = [
  'GET',
  'POST',
  'PUT',
  'PATCH',
  'DELETE',
  'OPTIONS',
  'HEAD',
  'PROPFIND',
  'SEARCH',
  'TRACE',
  'QUERY',
  'PURGE',
] as const;

const CONTENT_TYPES = [
  'application/json; charset=utf-8',
  'APPLICATION/JSON',
  'application/json;charset="UTF-8"',
  'application/json; charset=iso-8859-1',
  'application/json; charset=utf-16',
  'application/json; boundary=x',
  'application/json, text/plain',
  'application/jsonx',
  'application/vnd.api+json',
  'text/json',
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=XBOUNDARY',
  'application/octet-stream',
  ';',
  '*/*',
  'application/json;;;',
] as const;

/** Path segments a router or a schema must refuse cleanly. */
const oddSegment: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    '%',
    '%ZZ',
    '%00',
    '%C0%AF',
    '%ED%A0%80',
    '%FF',
    '..',
    '.',
    '%2F',
    '%2e%2e',
    'a%20b',
    '~',
    '*',
    ':id',
    'x'.repeat(129),
    'x'.repeat(300),
    '',
    '00000000-0000-0000-0000-000000000000',
  ),
  fc.string({ unit: 'grapheme', minLength: 1, maxLength: 30 }).map(encodeComponent),
  oddString.map(encodeComponent),
  fc.integer().map(String),
);

const queryValue: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    '0',
    '1',
    '100',
    '101',
    '-1',
    '1.5',
    'abc',
    '',
    '%ZZ',
    '%00',
    '%C0%AF',
    '+',
    'a+b',
    'x'.repeat(300),
    'true',
    'null',
  ),
  fc.string({ unit: 'grapheme', maxLength: 30 }).map(encodeComponent),
  oddString.map(encodeComponent),
);

/**
 * encodeURIComponent that also takes lone surrogates, writing them as their three-byte (WTF-8) forms: bytes
 * that are not UTF-8, which the server must refuse cleanly.
 */
function encodeComponent(s: string): string {
  let out = '';
  for (const ch of s) {
    const cp = ch.codePointAt(0)!;
    if (cp >= 0xd800 && cp <= 0xdfff) {
      out += [0xe0 | (cp >> 12), 0x80 | ((cp >> 6) & 0x3f), 0x80 | (cp & 0x3f)]
        .map((b) => `%${b.toString(16).toUpperCase()}`)
        .join('');
    } else out += encodeURIComponent(ch);
  }
  return out;
}

/** Probes outside the operations: health, and paths no route owns. */
const PROBES = [
  '/healthz',
  '/readyz',
  '/v1',
  '/v1/',
  '/v1/wallets/',
  '/v1//wallets',
  '/V1/WALLETS',
  '/v1/wallets/x/unknown',
  '/v1/wallets/%2e%2e/%2e%2e/readyz',
  '/v1/wallets?',
  '/%',
  '/v1/enclave',
] as const;

function apiKeyHeader(t: FuzzTargets): fc.Arbitrary<{ headers: Record<string, string>; note: string }> {
  return fc.oneof(
    { weight: 85, arbitrary: fc.constant({ headers: { 'x-api-key': t.secret }, note: 'valid key' }) },
    { weight: 4, arbitrary: fc.constant({ headers: {}, note: 'no key' }) },
    { weight: 3, arbitrary: fc.constant({ headers: { 'x-api-key': t.foreignSecret }, note: "another project's key" }) },
    {
      weight: 5,
      arbitrary: fc
        .oneof(
          fc.string({ maxLength: 64 }),
          fc.constantFrom('', ' ', 'k\u00e9y', `${t.secret}x`, t.secret.slice(0, -1), 'x'.repeat(300)),
        )
        // Only bytes an HTTP header may carry (Node's client refuses the others before sending).
        .map((k) => ({ headers: { 'x-api-key': k.replace(/[^\t\x20-\x7e\x80-\xff]/g, '?') }, note: 'wrong key' })),
    },
  );
}

const requestIdHeader: fc.Arbitrary<Record<string, string>> = fc.oneof(
  { weight: 6, arbitrary: fc.constant({}) },
  { weight: 3, arbitrary: fc.stringMatching(/^[A-Za-z0-9._:-]{1,128}$/).map((id) => ({ 'x-request-id': id })) },
  {
    weight: 1,
    arbitrary: fc
      .constantFrom('has space', 'x'.repeat(129), 'caf\u00e9', '', '\t')
      .map((id) => ({ 'x-request-id': id })),
  },
);

/** The wallet types an operation is aimed at: the routes that serve only some types mostly get those. */
function chainsFor(op: Operation): fc.Arbitrary<WalletType> {
  const route = op.template.split('/').at(-1);
  const preferred: readonly WalletType[] =
    route === 'sign-typed-data' || route === 'sign-authorization'
      ? ['EVM']
      : route === 'sign-transaction'
        ? ['EVM', 'SOLANA', 'STELLAR', 'SUI']
        : WALLET_TYPES;
  return fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom(...preferred) },
    { weight: 1, arbitrary: fc.constantFrom(...WALLET_TYPES) },
  );
}

/** A JSON body for the operation: valid about half the time, else mutated as a value and then as bytes. */
function bodyFor(op: Operation, ctx: ValueContext): fc.Arbitrary<{ body?: Buffer; notes: string[] }> {
  if (!op.body) {
    return fc.oneof(
      { weight: 9, arbitrary: fc.constant({ notes: [] as string[] }) },
      {
        weight: 1,
        arbitrary: fc
          .jsonValue({ maxDepth: 2 })
          .map((v) => ({ body: Buffer.from(JSON.stringify(v)), notes: ['a body where none is expected'] })),
      },
    );
  }
  return fc
    .tuple(
      schemaValue(op.body, ctx),
      fc.oneof(
        { weight: 6, arbitrary: fc.constant([] as JsonMutation[]) },
        { weight: 4, arbitrary: fc.array(jsonMutation, { minLength: 1, maxLength: 3 }) },
      ),
      fc.oneof({ weight: 7, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: rawMutation }),
    )
    .map(([valid, mutations, raw]) => {
      let value: unknown = structuredClone(valid);
      const notes: string[] = [];
      for (const m of mutations) {
        if (value === undefined) break;
        const r = applyJsonMutation(value, m);
        value = r.value;
        notes.push(r.note);
      }
      let body: Buffer = value === undefined ? Buffer.alloc(0) : Buffer.from(serialize(value));
      if (raw) {
        const r = applyRawMutation(body, raw);
        body = r.body;
        notes.push(r.note);
      }
      return { body, notes };
    });
}

/** Requests for one operation. */
function operationRequest(op: Operation, t: FuzzTargets): fc.Arbitrary<FuzzRequest> {
  const route = op.template.split('/').at(-1);
  return chainsFor(op).chain((chain) => {
    const ctx: ValueContext = { op, seeds: t.seeds, chain };
    const walletId = fc.oneof(
      { weight: route === 'migrate-share' ? 1 : 12, arbitrary: fc.constant(t.wallets[chain]) },
      { weight: route === 'migrate-share' ? 12 : 2, arbitrary: fc.constantFrom(...t.unsignableWalletIds) },
      { weight: 1, arbitrary: fc.constantFrom(...Object.values(t.wallets)) },
      { weight: 1, arbitrary: fc.constantFrom(...t.foreignWalletIds) },
      { weight: 1, arbitrary: fc.uuid() },
      { weight: 2, arbitrary: oddSegment },
    );
    const pathParams = fc.tuple(...op.pathParams.map((p) => (p.name === 'walletId' ? walletId : oddSegment)));
    const query =
      op.query.length > 0
        ? fc.array(
            fc.oneof(
              {
                weight: 3,
                arbitrary: fc
                  .constantFrom(...op.query)
                  .chain((p) =>
                    schemaValue(p.schema, ctx, p.name).map((v) => `${p.name}=${encodeComponent(String(v))}`),
                  ),
              },
              {
                weight: 1,
                arbitrary: fc
                  .tuple(
                    fc.constantFrom(...op.query.map((p) => p.name), '__proto__', 'constructor', 'x', ''),
                    queryValue,
                  )
                  .map(([k, v]) => `${k}=${v}`),
              },
            ),
            { maxLength: 5 },
          )
        : fc.oneof(
            { weight: 9, arbitrary: fc.constant([] as string[]) },
            {
              weight: 1,
              arbitrary: fc.array(
                queryValue.map((v) => `q=${v}`),
                { maxLength: 2 },
              ),
            },
          );
    const method = fc.oneof(
      { weight: 12, arbitrary: fc.constant(op.method) },
      { weight: 1, arbitrary: fc.constantFrom(...METHODS) },
    );
    const contentType = fc.oneof(
      { weight: 24, arbitrary: fc.constant<string | null>('application/json') },
      { weight: 2, arbitrary: fc.constantFrom<string | null>(...CONTENT_TYPES) },
      { weight: 1, arbitrary: fc.constant<string | null>(null) },
    );
    return fc
      .record({
        params: pathParams,
        query,
        body: bodyFor(op, ctx),
        method,
        contentType,
        key: apiKeyHeader(t),
        requestId: requestIdHeader,
        chunked: fc.integer({ min: 0, max: 9 }).map((n) => n === 0),
      })
      .map(({ params, query: q, body, method: m, contentType: ct, key, requestId, chunked }) => {
        let i = 0;
        const path = op.template.replace(/\{[^}]+\}/g, () => String(params[i++]));
        const headers: Record<string, string> = { ...key.headers, ...requestId };
        if (body.body !== undefined && ct !== null) headers['content-type'] = ct;
        const notes = [
          `${chain} wallet`,
          key.note,
          ...(m !== op.method ? [`method ${m}`] : []),
          ...(ct !== 'application/json' && body.body ? [`content-type ${ct}`] : []),
          ...body.notes,
        ];
        return {
          method: m,
          path: `${path}${q.length > 0 ? `?${q.join('&')}` : ''}`,
          headers,
          ...(body.body !== undefined ? { body: body.body } : {}),
          ...(chunked && body.body !== undefined ? { chunked: true } : {}),
          operation: `${op.method} ${op.template}`,
          notes,
        };
      });
  });
}

function probeRequest(t: FuzzTargets): fc.Arbitrary<FuzzRequest> {
  return fc
    .record({
      path: fc.constantFrom(...PROBES),
      method: fc.oneof(
        { weight: 4, arbitrary: fc.constant('GET') },
        { weight: 1, arbitrary: fc.constantFrom(...METHODS) },
      ),
      key: apiKeyHeader(t),
      requestId: requestIdHeader,
    })
    .map(({ path, method, key, requestId }) => ({
      method,
      path,
      headers: { ...key.headers, ...requestId },
      operation: path,
      notes: [key.note],
    }));
}

/** Prints a request the way a person can replay it: UTF-8 bodies as JSON strings, others as hex (shortened). */
export function describeRequest(r: FuzzRequest): string {
  let body = '';
  if (r.body !== undefined) {
    const head = r.body.subarray(0, 300);
    const more = r.body.length > 300 ? `… (${r.body.length} bytes)` : '';
    body = isUtf8(r.body) ? `${JSON.stringify(head.toString('utf8'))}${more}` : `hex ${head.toString('hex')}${more}`;
  }
  const headers = Object.entries(r.headers).map(([k, v]) => `${k}: ${v.length > 80 ? `${v.slice(0, 80)}…` : v}`);
  const path = r.path.length > 300 ? `${r.path.slice(0, 300)}…` : r.path;
  return [`${r.method} ${path}${r.chunked ? ' (chunked)' : ''}`, ...headers, body, `(${r.notes.join('; ')})`]
    .filter(Boolean)
    .join('\n  ');
}

/** Every operation under the prefix, health probes and unknown paths, weighted evenly by operation. */
export function fuzzRequests(ops: Operation[], t: FuzzTargets): fc.Arbitrary<FuzzRequest> {
  return fc
    .oneof(...ops.map((op) => operationRequest(op, t)), probeRequest(t))
    .map((r) => Object.assign(r, { [fc.toStringMethod]: () => describeRequest(r) }));
}

/** One to four requests sent at once (races between them are part of what is fuzzed). */
export function fuzzBursts(ops: Operation[], t: FuzzTargets): fc.Arbitrary<FuzzRequest[]> {
  return fc.oneof(
    { weight: 3, arbitrary: fuzzRequests(ops, t).map((r) => [r]) },
    { weight: 1, arbitrary: fc.array(fuzzRequests(ops, t), { minLength: 2, maxLength: 4 }) },
  );
}
