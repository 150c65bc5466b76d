import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { verifyTypedData } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { EIP712_MAIL as MAIL } from '../../fixtures/eip712-mail.ts';
import { ChainInputError } from '../chain-input-error.ts';
import type { Secp256k1Signature } from '../signing-types.ts';
import { encodeEvmSignature } from './encode-evm-signature.ts';
import { hashEvmTypedData } from './hash-evm-typed-data.ts';

// viem's generics want literal types, which these JSON-shaped fixtures do not carry.
type ViemTypedData = Parameters<typeof verifyTypedData>[0];

const PRIVATE_KEY = '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80';
const account = privateKeyToAccount(PRIVATE_KEY);

function signDigest(digest: Uint8Array): Secp256k1Signature {
  const recovered = secp256k1.sign(digest, hexToBytes(PRIVATE_KEY.slice(2)), { prehash: false, format: 'recovered' });
  return { rs: recovered.slice(1), recovery: recovered[0] as 0 | 1 };
}

// An EIP-2612 permit as a partner sends it over JSON: big amounts as strings, chainId as a string.
const PERMIT_JSON = {
  domain: {
    name: 'USD Coin',
    version: '2',
    chainId: '8453',
    verifyingContract: '0x833589fcd6edb6e08f4c7c32d4f71b54bda02913',
  },
  types: {
    Permit: [
      { name: 'owner', type: 'address' },
      { name: 'spender', type: 'address' },
      { name: 'value', type: 'uint256' },
      { name: 'nonce', type: 'uint256' },
      { name: 'deadline', type: 'uint256' },
    ],
  },
  primaryType: 'Permit',
  message: {
    owner: '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266',
    spender: '0x70997970c51812dc3a010c7d01b50e0d17dc79c8',
    value: '115792089237316195423570985008687907853269984665640564039457584007913129639935',
    nonce: 0,
    deadline: '0x6553f100',
  },
};
const PERMIT_VIEM = {
  domain: {
    name: 'USD Coin',
    version: '2',
    chainId: 8453,
    verifyingContract: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
  },
  types: PERMIT_JSON.types,
  primaryType: 'Permit',
  message: {
    owner: '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266',
    spender: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
    value: 2n ** 256n - 1n,
    nonce: 0n,
    deadline: 0x6553f100n,
  },
} as const;

// Every atomic type, arrays (dynamic, fixed, nested, of structs), a salt and no name/version.
const KITCHEN_SINK = {
  domain: { chainId: 31337, salt: `0x${'ab'.repeat(32)}` },
  types: {
    Leg: [
      { name: 'asset', type: 'address' },
      { name: 'amounts', type: 'int64[2]' },
    ],
    Order: [
      { name: 'maker', type: 'address' },
      { name: 'legs', type: 'Leg[]' },
      { name: 'grid', type: 'uint8[][3]' },
      { name: 'flag', type: 'bool' },
      { name: 'memo', type: 'string' },
      { name: 'blob', type: 'bytes' },
      { name: 'tag', type: 'bytes4' },
      { name: 'root', type: 'bytes32' },
      { name: 'delta', type: 'int256' },
      { name: 'tiny', type: 'uint8' },
    ],
  },
  primaryType: 'Order',
  message: {
    maker: '0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266',
    legs: [
      { asset: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8', amounts: [-5, '9223372036854775807'] },
      { asset: '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC', amounts: ['-9223372036854775808', 0] },
    ],
    grid: [[1, 2], [], [255]],
    flag: true,
    memo: 'héllo 😀',
    blob: '0xDEADBEEF',
    tag: '0xa9059cbb',
    root: `0x${'11'.repeat(32)}`,
    delta: '-57896044618658097711785492504343953926634992332820282019728792003956564819968',
    tiny: 255,
  },
};
const KITCHEN_SINK_VIEM = {
  ...KITCHEN_SINK,
  message: {
    ...KITCHEN_SINK.message,
    legs: [
      { asset: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8', amounts: [-5n, 2n ** 63n - 1n] },
      { asset: '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC', amounts: [-(2n ** 63n), 0n] },
    ],
    blob: '0xdeadbeef',
    delta: -(2n ** 255n),
  },
} as const;

function throwsField(typedData: unknown, field: string | undefined, message?: RegExp): void {
  assert.throws(
    () => hashEvmTypedData(typedData),
    (error: unknown) => {
      assert.ok(error instanceof ChainInputError, `expected ChainInputError, got ${String(error)}`);
      assert.equal(error.field, field, error.message);
      if (message) assert.match(error.message, message);
      return true;
    },
  );
}

const clone = <T>(value: T): T => structuredClone(value);

describe('hashEvmTypedData', () => {
  it('computes the digest published in EIP-712 for its Mail example', () => {
    assert.equal(
      bytesToHex(hashEvmTypedData(MAIL)),
      'be609aee343fb3c4b28e1df9e632fca64fcfaede20f02e86244efddf30957bd2',
    );
  });

  for (const [name, typedData, viemTypedData] of [
    ['EIP-712 Mail', MAIL, MAIL],
    ['EIP-2612 permit from JSON', PERMIT_JSON, PERMIT_VIEM],
    ['every type, arrays and a salt', KITCHEN_SINK, KITCHEN_SINK_VIEM],
  ] as const) {
    it(`signs like viem signTypedData and verifies: ${name}`, async () => {
      const signature = `0x${encodeEvmSignature(signDigest(hashEvmTypedData(typedData)))}` as const;
      const viem = viemTypedData as unknown as ViemTypedData;
      assert.equal(signature, await account.signTypedData(viem));
      assert.equal(await verifyTypedData({ ...viem, address: account.address, signature }), true);
    });
  }

  it('treats a chainId string like the number', () => {
    const asNumber = clone(PERMIT_JSON);
    (asNumber.domain as Record<string, unknown>).chainId = 8453;
    assert.deepEqual(hashEvmTypedData(PERMIT_JSON), hashEvmTypedData(asNumber));
  });

  it('changes with any field of domain or message, and does not verify after a flipped byte', async () => {
    const base = hashEvmTypedData(PERMIT_JSON);
    const otherChain = clone(PERMIT_JSON);
    otherChain.domain.chainId = '1';
    assert.notDeepEqual(hashEvmTypedData(otherChain), base);
    const otherValue = clone(PERMIT_JSON);
    otherValue.message.value = '1';
    assert.notDeepEqual(hashEvmTypedData(otherValue), base);
    const signature = hexToBytes(encodeEvmSignature(signDigest(base)));
    signature[40] = signature[40]! ^ 0x01; // in s: r must stay a valid x coordinate
    const viem = PERMIT_VIEM as unknown as ViemTypedData;
    assert.equal(
      await verifyTypedData({ ...viem, address: account.address, signature: `0x${bytesToHex(signature)}` }),
      false,
    );
  });

  it('refuses a message member its type does not declare, at any depth, naming its path', () => {
    const top = clone(MAIL);
    (top.message as Record<string, unknown>).attachment = 'not signed';
    throwsField(top, 'message.attachment', /is not a member of Mail \(declared: from, to, contents\)/);
    const nested = clone(MAIL);
    (nested.message.to as Record<string, unknown>).note = [[['not signed']]];
    throwsField(nested, 'message.to.note', /is not a member of Person/);
    const inArray = clone(KITCHEN_SINK);
    (inArray.message.legs[1] as Record<string, unknown>).memo = 'x';
    throwsField(inArray, 'message.legs[1].memo', /is not a member of Leg/);
  });

  it('refuses EIP712Domain in types', () => {
    const withDomain = clone(MAIL) as { types: Record<string, unknown> };
    withDomain.types.EIP712Domain = [{ name: 'name', type: 'string' }];
    throwsField(withDomain, 'types.EIP712Domain', /must not include EIP712Domain/);
  });

  it('refuses malformed shapes with the path of the problem', () => {
    const cases: [(data: ReturnType<typeof clone<typeof MAIL>>) => unknown, string | undefined][] = [
      [() => null, undefined],
      [() => [], undefined],
      [() => 'typed data', undefined],
      [(d) => ({ ...d, extra: 1 }), 'extra'],
      [(d) => ({ ...d, types: undefined }), 'types'],
      [(d) => ({ ...d, types: [] }), 'types'],
      [(d) => ({ ...d, types: {} }), 'types'],
      [(d) => ({ ...d, types: { ...d.types, Mail: 'string' } }), 'types.Mail'],
      [(d) => ({ ...d, types: { ...d.types, Mail: [null] } }), 'types.Mail[0]'],
      [(d) => ({ ...d, types: { ...d.types, Mail: [{ name: 'a' }] } }), 'types.Mail[0].type'],
      [(d) => ({ ...d, types: { ...d.types, Mail: [{ name: 1, type: 'string' }] } }), 'types.Mail[0].name'],
      [(d) => ({ ...d, types: { ...d.types, Mail: [{ name: 'a,b', type: 'string' }] } }), 'types.Mail[0].name'],
      [
        (d) => ({
          ...d,
          types: {
            ...d.types,
            Mail: [
              { name: 'a', type: 'string' },
              { name: 'a', type: 'bool' },
            ],
          },
        }),
        'types.Mail[1].name',
      ],
      [(d) => ({ ...d, types: { ...d.types, Mail: [{ name: 'a', type: 'Nope' }] } }), 'types.Mail[0].type'],
      [(d) => ({ ...d, types: { ...d.types, Mail: [{ name: 'a', type: 'uint' }] } }), 'types.Mail[0].type'],
      [(d) => ({ ...d, types: { ...d.types, Mail: [{ name: 'a', type: 'uint7' }] } }), 'types.Mail[0].type'],
      [(d) => ({ ...d, types: { ...d.types, Mail: [{ name: 'a', type: 'bytes33' }] } }), 'types.Mail[0].type'],
      [(d) => ({ ...d, types: { ...d.types, Mail: [{ name: 'a', type: 'uint256[0]' }] } }), 'types.Mail[0].type'],
      [(d) => ({ ...d, types: { ...d.types, Mail: [{ name: 'a', type: 'uint256[' }] } }), 'types.Mail[0].type'],
      [
        (d) => ({ ...d, types: { ...d.types, Mail: [{ name: 'a', type: `uint256${'[]'.repeat(10_000)}` }] } }),
        'types.Mail[0].type',
      ],
      [(d) => ({ ...d, types: { ...d.types, uint256: [] } }), 'types.uint256'],
      [(d) => ({ ...d, types: { ...d.types, 'Bad Name': [] } }), 'types.Bad Name'],
      [(d) => ({ ...d, primaryType: undefined }), 'primaryType'],
      [(d) => ({ ...d, primaryType: 'EIP712Domain' }), 'primaryType'],
      [(d) => ({ ...d, primaryType: 'toString' }), 'primaryType'],
      [(d) => ({ ...d, primaryType: ['Mail'] }), 'primaryType'],
      [(d) => ({ ...d, domain: undefined }), 'domain'],
      [(d) => ({ ...d, domain: 'Ether Mail' }), 'domain'],
      [(d) => ({ ...d, domain: { ...d.domain, chainId: -1 } }), 'domain.chainId'],
      [(d) => ({ ...d, domain: { ...d.domain, chainId: 1.5 } }), 'domain.chainId'],
      [(d) => ({ ...d, domain: { ...d.domain, chainId: '0x1' } }), 'domain.chainId'],
      [(d) => ({ ...d, domain: { ...d.domain, chainId: (2n ** 256n).toString() } }), 'domain.chainId'],
      [(d) => ({ ...d, domain: { ...d.domain, chainId: null } }), 'domain.chainId'],
      [(d) => ({ ...d, domain: { ...d.domain, verifyingContract: '0x1234' } }), 'domain.verifyingContract'],
      [
        (d) => ({ ...d, domain: { ...d.domain, verifyingContract: '0xCcCCccccCCCCcCCCCCCcCcCccCcCCCcCcccccccc' } }),
        'domain.verifyingContract',
      ],
      [(d) => ({ ...d, domain: { ...d.domain, salt: '0x01' } }), 'domain.salt'],
      [(d) => ({ ...d, domain: { ...d.domain, salt: 1 } }), 'domain.salt'],
      [(d) => ({ ...d, domain: { ...d.domain, name: 5 } }), 'domain.name'],
      [(d) => ({ ...d, domain: { ...d.domain, version: null } }), 'domain.version'],
      [(d) => ({ ...d, domain: { ...d.domain, extra: 'x' } }), 'domain.extra'],
      [(d) => ({ ...d, message: undefined }), 'message'],
      [(d) => ({ ...d, message: [] }), 'message'],
      [(d) => ({ ...d, message: { ...d.message, from: undefined } }), 'message.from'],
      [(d) => ({ ...d, message: { ...d.message, from: 'Cow' } }), 'message.from'],
      [(d) => ({ ...d, message: { ...d.message, contents: 42 } }), 'message.contents'],
      [(d) => ({ ...d, message: { ...d.message, contents: '\udc00' } }), 'message.contents'],
      [(d) => ({ ...d, message: { ...d.message, to: { name: 'Bob' } } }), 'message.to.wallet'],
      [(d) => ({ ...d, message: { ...d.message, to: { name: 'Bob', wallet: '0x1234' } } }), 'message.to.wallet'],
      [(d) => ({ ...d, message: { ...d.message, to: { name: 'Bob', wallet: null } } }), 'message.to.wallet'],
    ];
    for (const [mutate, field] of cases) throwsField(mutate(clone(MAIL)), field);
  });

  it('checks values of every atomic type and array length', () => {
    const cases: [string, unknown][] = [
      ['legs', 'not an array'],
      ['legs', [{ asset: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8', amounts: [1] }]],
      ['legs', [{ asset: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8', amounts: [1, 2 ** 63] }]],
      ['legs', [{ asset: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8', amounts: [1, '9223372036854775808'] }]],
      ['grid', [[1], [2]]],
      ['grid', [[256], [], []]],
      ['grid', [[-1], [], []]],
      ['flag', 'true'],
      ['flag', 1],
      ['blob', '0xabc'],
      ['blob', 'deadbeef'],
      ['tag', '0xa9059c'],
      ['tag', '0xa9059cbb00'],
      ['root', 1],
      ['delta', 1.5],
      ['delta', '1e18'],
      ['delta', '01'],
      ['delta', (2n ** 255n).toString()],
      ['tiny', 256],
      ['tiny', '-1'],
      ['tiny', '0x100'],
      ['tiny', null],
      ['tiny', true],
      ['maker', '0xF39Fd6e51aad88F6F4ce6aB8827279cffFb92266'],
    ];
    for (const [member, value] of cases) {
      const data = clone(KITCHEN_SINK) as { message: Record<string, unknown> };
      data.message[member] = value;
      assert.throws(
        () => hashEvmTypedData(data),
        (error: unknown) => {
          assert.ok(error instanceof ChainInputError, `${member}=${String(value)}: ${String(error)}`);
          assert.ok(error.field?.startsWith(`message.${member}`), `${member}: field ${error.field}`);
          return true;
        },
      );
    }
  });

  it('refuses recursive struct types, which ethers refuses too, naming the member that closes the ring', () => {
    throwsField(
      { domain: {}, types: { Node: [{ name: 'children', type: 'Node[]' }] }, primaryType: 'Node', message: {} },
      'types.Node[0].type',
      /Node refers back to itself \(Node → Node\)/,
    );
  });

  it('survives prototype-looking names without throwing anything but ChainInputError', () => {
    for (const typedData of [
      JSON.parse(
        '{"domain":{},"types":{"__proto__":[{"name":"a","type":"string"}]},"primaryType":"__proto__","message":{"a":"x"}}',
      ),
      JSON.parse('{"domain":{"__proto__":{"chainId":1}},"types":{"A":[]},"primaryType":"A","message":{}}'),
      JSON.parse('{"domain":{},"types":{"A":[{"name":"constructor","type":"string"}]},"primaryType":"A","message":{}}'),
      { domain: {}, types: { A: [{ name: 'x', type: 'constructor' }] }, primaryType: 'A', message: { x: 1 } },
    ]) {
      try {
        hashEvmTypedData(typedData);
      } catch (error) {
        assert.ok(error instanceof ChainInputError, String(error));
      }
    }
  });
});
