import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { keccak_256 } from '@noble/hashes/sha3.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { privateKeyToAccount } from 'viem/accounts';
import { recoverAuthorizationAddress, verifyAuthorization } from 'viem/utils';
import { ChainInputError } from '../chain-input-error.ts';
import type { Secp256k1Signature } from '../signing-types.ts';
import { encodeEvmSignature } from './encode-evm-signature.ts';
import { type EvmAuthorizationInput, prepareEvmAuthorization } from './prepare-evm-authorization.ts';

const PRIVATE_KEY = '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80';
const account = privateKeyToAccount(PRIVATE_KEY);
const CONTRACT = '0x5FbDB2315678afecb367f032d93F642f64180aa3';

function signDigest(digest: Uint8Array): Secp256k1Signature {
  const recovered = secp256k1.sign(digest, hexToBytes(PRIVATE_KEY.slice(2)), { prehash: false, format: 'recovered' });
  return { rs: recovered.slice(1), recovery: recovered[0] as 0 | 1 };
}

function throwsField(input: unknown, field: string | undefined, message?: RegExp): void {
  assert.throws(
    () => prepareEvmAuthorization(input as EvmAuthorizationInput),
    (error: unknown) => {
      assert.ok(error instanceof ChainInputError, `expected ChainInputError, got ${String(error)}`);
      assert.equal(error.field, field, error.message);
      if (message) assert.match(error.message, message);
      return true;
    },
  );
}

describe('prepareEvmAuthorization', () => {
  it('hashes 0x05 ‖ rlp([chainId, address, nonce]) (EIP-7702)', () => {
    const { digest } = prepareEvmAuthorization({ address: CONTRACT, chainId: 1, nonce: 0 });
    // rlp([0x01, 20-byte address, 0x80]) = 0xd7 01 94 <address> 80.
    const rlp = hexToBytes(`d70194${CONTRACT.slice(2).toLowerCase()}80`);
    assert.equal(bytesToHex(digest), bytesToHex(keccak_256(Uint8Array.of(0x05, ...rlp))));
  });

  for (const [name, input] of [
    ['address on chain 31337', { address: CONTRACT, chainId: 31337, nonce: 5 }],
    ['contractAddress alias, lowercase', { contractAddress: CONTRACT.toLowerCase(), chainId: 1, nonce: 0 }],
    [
      'both names, same address',
      { address: CONTRACT, contractAddress: CONTRACT.toLowerCase(), chainId: 8453, nonce: 1 },
    ],
    ['chain 0 (any chain)', { address: CONTRACT, chainId: 0, nonce: 2 ** 40 }],
  ] as const) {
    it(`signs like viem signAuthorization and recovers the wallet: ${name}`, async () => {
      const prepared = prepareEvmAuthorization(input);
      assert.equal(prepared.address, CONTRACT);
      assert.equal(prepared.chainId, input.chainId);
      assert.equal(prepared.nonce, input.nonce);
      const sig = signDigest(prepared.digest);
      const expected = await account.signAuthorization({
        address: CONTRACT,
        chainId: input.chainId,
        nonce: input.nonce,
      });
      assert.equal(`0x${bytesToHex(sig.rs.subarray(0, 32))}`, expected.r);
      assert.equal(`0x${bytesToHex(sig.rs.subarray(32))}`, expected.s);
      assert.equal(sig.recovery, expected.yParity);
      const signature = `0x${encodeEvmSignature(sig)}` as const;
      const authorization = { address: CONTRACT, chainId: prepared.chainId, nonce: prepared.nonce } as const;
      assert.equal(await recoverAuthorizationAddress({ authorization, signature }), account.address);
      assert.equal(await verifyAuthorization({ address: account.address, authorization, signature }), true);
    });
  }

  it('does not verify for another nonce, chain or a flipped signature byte', async () => {
    const prepared = prepareEvmAuthorization({ address: CONTRACT, chainId: 1, nonce: 7 });
    const signature = hexToBytes(encodeEvmSignature(signDigest(prepared.digest)));
    const hex = (bytes: Uint8Array) => `0x${bytesToHex(bytes)}` as const;
    const verify = (authorization: { chainId: number; nonce: number }, bytes: Uint8Array) =>
      verifyAuthorization({
        address: account.address,
        authorization: { address: CONTRACT, ...authorization },
        signature: hex(bytes),
      });
    assert.equal(await verify({ chainId: 1, nonce: 7 }, signature), true);
    assert.equal(await verify({ chainId: 1, nonce: 8 }, signature), false);
    assert.equal(await verify({ chainId: 0, nonce: 7 }, signature), false);
    signature[40] = signature[40]! ^ 0x01;
    assert.equal(await verify({ chainId: 1, nonce: 7 }, signature), false);
  });

  it('refuses missing, conflicting, malformed and unknown fields', () => {
    throwsField({ chainId: 1, nonce: 0 }, 'address', /is required/);
    throwsField(
      { address: CONTRACT, contractAddress: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8', chainId: 1, nonce: 0 },
      'contractAddress',
      /differ/,
    );
    throwsField({ address: `${CONTRACT.slice(0, -1)}A`, chainId: 1, nonce: 0 }, 'address', /checksum/);
    throwsField({ contractAddress: '0x1234', chainId: 1, nonce: 0 }, 'contractAddress');
    throwsField({ address: null, chainId: 1, nonce: 0 }, 'address');
    throwsField({ address: 1, chainId: 1, nonce: 0 }, 'address');
    for (const chainId of [-1, 1.5, '1', null, undefined, 2 ** 53, [1]])
      throwsField({ address: CONTRACT, chainId, nonce: 0 }, 'chainId');
    for (const nonce of [-1, 0.5, '0', null, undefined, 1e21, {}])
      throwsField({ address: CONTRACT, chainId: 1, nonce }, 'nonce');
    throwsField({ address: CONTRACT, chainId: 1, nonce: 0, yParity: 0 }, 'yParity', /not an authorization field/);
    for (const input of [null, undefined, CONTRACT, [CONTRACT, 1, 0], 5])
      throwsField(input, undefined, /must be an object/);
  });
});
