/**
 * hashEvmTypedData is the service's own EIP-712 hashStruct (viem's hashTypedData rebuilds every struct's type
 * encoding for each instance, see typed-data-limits.ts and docs/benchmarks.md, "Worst-case cost per request"). These tests
 * prove it byte-for-byte equal to viem's hashTypedData: on the repository's fixtures and on random typed data of
 * every atomic type, nested structs and arrays, in every JSON form the service accepts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { getAddress, hashTypedData } from 'viem';
import { EIP712_MAIL } from '../../fixtures/eip712-mail.ts';
import { hashEvmTypedData } from './hash-evm-typed-data.ts';

type ViemTypedData = Parameters<typeof hashTypedData>[0];
type Field = { name: string; type: string };

/** A value as viem takes it (bigint, lowercase hex) and as a partner may send it in JSON. */
interface Sample {
  viem: unknown;
  json: unknown;
}

const hex = (bytes: Uint8Array) => `0x${Buffer.from(bytes).toString('hex')}`;
const upperHex = (bytes: Uint8Array) => `0x${Buffer.from(bytes).toString('hex').toUpperCase()}`;

function integerSample(signed: boolean, bits: number): fc.Arbitrary<Sample> {
  const min = signed ? -(2n ** BigInt(bits - 1)) : 0n;
  const max = signed ? 2n ** BigInt(bits - 1) - 1n : 2n ** BigInt(bits) - 1n;
  const edges = fc.constantFrom(min, max, 0n, min + 1n, max - 1n);
  return fc.tuple(fc.oneof(fc.bigInt({ min, max }), edges), fc.nat(2)).map(([value, form]): Sample => {
    const safe = value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER);
    const json =
      form === 0 && safe ? Number(value) : form === 1 && value >= 0n ? `0x${value.toString(16)}` : value.toString();
    return { viem: value, json };
  });
}

function atomicSample(type: string): fc.Arbitrary<Sample> {
  const integer = /^(u?)int(\d+)$/.exec(type);
  if (integer) return integerSample(integer[1] === '', Number(integer[2]));
  const fixed = /^bytes(\d+)$/.exec(type);
  if (fixed) {
    const size = Number(fixed[1]);
    return fc
      .tuple(fc.uint8Array({ minLength: size, maxLength: size }), fc.boolean())
      .map(([bytes, upper]) => ({ viem: hex(bytes), json: upper ? upperHex(bytes) : hex(bytes) }));
  }
  switch (type) {
    case 'address':
      return fc.tuple(fc.uint8Array({ minLength: 20, maxLength: 20 }), fc.nat(2)).map(([bytes, form]) => ({
        viem: hex(bytes),
        json: form === 0 ? hex(bytes) : form === 1 ? getAddress(hex(bytes)) : `0x${hex(bytes).slice(2).toUpperCase()}`,
      }));
    case 'bool':
      return fc.boolean().map((value) => ({ viem: value, json: value }));
    case 'string':
      return fc.string({ unit: 'binary', maxLength: 40 }).map((value) => ({ viem: value, json: value }));
    default:
      return fc
        .tuple(fc.uint8Array({ maxLength: 70 }), fc.boolean())
        .map(([bytes, upper]) => ({ viem: hex(bytes), json: upper ? upperHex(bytes) : hex(bytes) }));
  }
}

const ATOMIC = fc.oneof(
  fc.constantFrom('address', 'bool', 'string', 'bytes', 'uint256', 'int256', 'bytes32', 'uint8', 'int8'),
  fc.integer({ min: 1, max: 32 }).map((n) => `uint${n * 8}`),
  fc.integer({ min: 1, max: 32 }).map((n) => `int${n * 8}`),
  fc.integer({ min: 1, max: 32 }).map((n) => `bytes${n}`),
);
/** Zero to two array suffixes: dynamic or fixed (1–3 items). */
const SUFFIXES = fc.array(
  fc.oneof(
    fc.constant('[]'),
    fc.integer({ min: 1, max: 3 }).map((n) => `[${n}]`),
  ),
  {
    maxLength: 2,
  },
);

/**
 * Struct types S0…Sk where Si's members may use Sj only for j > i (no recursion), each member an atomic type or
 * a struct, with array suffixes.
 */
const TYPES = fc.integer({ min: 1, max: 4 }).chain((count) =>
  fc
    .tuple(
      ...Array.from({ length: count }, (_, i) =>
        fc.array(
          fc.tuple(
            i + 1 < count
              ? fc.oneof(
                  ATOMIC,
                  fc.integer({ min: i + 1, max: count - 1 }).map((j) => `S${j}`),
                )
              : ATOMIC,
            SUFFIXES,
          ),
          { maxLength: 5 },
        ),
      ),
    )
    .map((structs) => {
      const types: Record<string, Field[]> = {};
      structs.forEach((members, i) => {
        types[`S${i}`] = members.map(([base, suffixes], m) => ({ name: `m${m}`, type: base + suffixes.join('') }));
      });
      return types;
    }),
);

function valueSample(type: string, types: Record<string, Field[]>): fc.Arbitrary<Sample> {
  const array = /^(.*)\[(\d*)\]$/.exec(type);
  if (array) {
    const [, item = '', length = ''] = array;
    const size = length === '' ? { maxLength: 3 } : { minLength: Number(length), maxLength: Number(length) };
    return fc
      .array(valueSample(item, types), size)
      .map((samples) => ({ viem: samples.map((s) => s.viem), json: samples.map((s) => s.json) }));
  }
  const fields = types[type];
  if (fields) {
    if (fields.length === 0) return fc.constant({ viem: {}, json: {} });
    return fc.tuple(...fields.map((field) => valueSample(field.type, types))).map((samples) => ({
      viem: Object.fromEntries(fields.map((field, i) => [field.name, samples[i]!.viem])),
      json: Object.fromEntries(fields.map((field, i) => [field.name, samples[i]!.json])),
    }));
  }
  return atomicSample(type);
}

const DOMAIN = fc
  .record(
    {
      name: fc.string({ unit: 'binary', maxLength: 20 }),
      version: fc.string({ maxLength: 5 }),
      chainId: fc.bigInt({ min: 0n, max: 2n ** 64n }),
      verifyingContract: fc.uint8Array({ minLength: 20, maxLength: 20 }).map(hex),
      salt: fc.uint8Array({ minLength: 32, maxLength: 32 }).map(hex),
    },
    { requiredKeys: [] },
  )
  .map((domain) => ({
    viem: domain,
    json: {
      ...domain,
      ...(domain.chainId === undefined
        ? {}
        : { chainId: domain.chainId <= 2n ** 53n - 1n ? Number(domain.chainId) : domain.chainId.toString() }),
    },
  }));

const TYPED_DATA = TYPES.chain((types) =>
  fc.tuple(DOMAIN, valueSample('S0', types)).map(([domain, message]) => ({
    viem: { domain: domain.viem, types, primaryType: 'S0', message: message.viem } as unknown as ViemTypedData,
    json: { domain: domain.json, types, primaryType: 'S0', message: message.json },
  })),
);

const viemDigest = (typedData: ViemTypedData) => hashTypedData(typedData).slice(2);
const ourDigest = (typedData: unknown) => Buffer.from(hashEvmTypedData(typedData)).toString('hex');

describe("hashEvmTypedData equals viem's hashTypedData", () => {
  it('on the EIP-712 Mail example and the Seaport-like nesting of structs in arrays', () => {
    assert.equal(ourDigest(EIP712_MAIL), viemDigest(EIP712_MAIL as unknown as ViemTypedData));
    const order = {
      domain: { name: 'Seaport', version: '1.6', chainId: 1, verifyingContract: `0x${'00'.repeat(19)}01` },
      types: {
        OrderComponents: [
          { name: 'offerer', type: 'address' },
          { name: 'offer', type: 'OfferItem[]' },
          { name: 'consideration', type: 'ConsiderationItem[]' },
          { name: 'salt', type: 'uint256' },
        ],
        OfferItem: [
          { name: 'token', type: 'address' },
          { name: 'amount', type: 'uint256' },
        ],
        ConsiderationItem: [
          { name: 'token', type: 'address' },
          { name: 'amount', type: 'uint256' },
          { name: 'recipient', type: 'address' },
        ],
        BulkOrder: [{ name: 'tree', type: 'OrderComponents[2][2][2]' }],
      },
      primaryType: 'BulkOrder',
      message: {
        tree: Array.from({ length: 2 }, (_, a) =>
          Array.from({ length: 2 }, (_, b) =>
            Array.from({ length: 2 }, (_, c) => ({
              offerer: `0x${'ab'.repeat(20)}`,
              offer: [{ token: `0x${'cd'.repeat(20)}`, amount: String(a * 4 + b * 2 + c) }],
              consideration: [{ token: `0x${'00'.repeat(20)}`, amount: '5', recipient: `0x${'ef'.repeat(20)}` }],
              salt: `0x${(a + b + c).toString(16)}`,
            })),
          ),
        ),
      },
    };
    const viem = JSON.parse(JSON.stringify(order), (key, value) =>
      key === 'amount' || key === 'salt' ? BigInt(value) : value,
    );
    assert.equal(ourDigest(order), viemDigest(viem));
  });

  it('on random typed data: every atomic type, nested structs, fixed and dynamic arrays, any domain', () => {
    fc.assert(
      fc.property(TYPED_DATA, ({ viem, json }) => {
        assert.equal(ourDigest(json), viemDigest(viem));
      }),
      { numRuns: 300 },
    );
  });

  it('changes whenever viem changes: one flipped member gives another digest in both', () => {
    fc.assert(
      fc.property(TYPED_DATA, fc.boolean(), ({ viem, json }, flag) => {
        const viemFlipped = { ...viem, types: { ...viem.types, Extra: [{ name: 'f', type: 'bool' }] } };
        const jsonFlipped = { ...json, types: { ...json.types, Extra: [{ name: 'f', type: 'bool' }] } };
        // An unused struct changes nothing; the same struct as primary type with another flag changes both.
        assert.equal(ourDigest(jsonFlipped), viemDigest(viemFlipped as ViemTypedData));
        const asPrimary = { primaryType: 'Extra', message: { f: flag } };
        assert.equal(
          ourDigest({ ...jsonFlipped, ...asPrimary }),
          viemDigest({ ...viemFlipped, ...asPrimary } as ViemTypedData),
        );
      }),
      { numRuns: 50 },
    );
  });
});
