import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { hexToBytes } from '@noble/hashes/utils.js';
import { keccak256, recoverAddress, toBytes } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import type { Secp256k1Signature } from '../signing-types.ts';
import { encodeEvmSignature } from './encode-evm-signature.ts';

const PRIVATE_KEY = '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80';
const account = privateKeyToAccount(PRIVATE_KEY);

function signDigest(digest: Uint8Array): Secp256k1Signature {
  const recovered = secp256k1.sign(digest, hexToBytes(PRIVATE_KEY.slice(2)), { prehash: false, format: 'recovered' });
  return { rs: recovered.slice(1), recovery: recovered[0] as 0 | 1 };
}

describe('encodeEvmSignature', () => {
  it('encodes r‖s‖v with v 27 or 28 like viem, without 0x, and recovers the signer', async () => {
    const vs = new Set<string>();
    for (let i = 0; vs.size < 2 && i < 64; i++) {
      const hash = keccak256(toBytes(`digest ${i}`));
      const signature = encodeEvmSignature(signDigest(hexToBytes(hash.slice(2))));
      assert.match(signature, /^[0-9a-f]{128}(1b|1c)$/);
      vs.add(signature.slice(128));
      assert.equal(`0x${signature}`, await account.sign({ hash }));
      assert.equal(await recoverAddress({ hash, signature: `0x${signature}` }), account.address);
    }
    assert.deepEqual([...vs].sort(), ['1b', '1c']);
  });

  it('refuses malformed and high-s signatures with ChainInputError', () => {
    const sig = signDigest(new Uint8Array(32).fill(1));
    const n = secp256k1.Point.CURVE().n;
    const highS = Uint8Array.from(sig.rs);
    highS.set(
      hexToBytes((n - BigInt(`0x${Buffer.from(sig.rs.subarray(32)).toString('hex')}`)).toString(16).padStart(64, '0')),
      32,
    );
    for (const bad of [
      { rs: highS, recovery: sig.recovery },
      { rs: new Uint8Array(65), recovery: 0 },
      { rs: new Uint8Array(33), recovery: 0 },
      { rs: sig.rs, recovery: 28 },
      { rs: sig.rs, recovery: null },
      { rs: Array.from(sig.rs), recovery: 0 },
      null,
      undefined,
      'ab'.repeat(65),
    ]) {
      assert.throws(() => encodeEvmSignature(bad as Secp256k1Signature), { name: 'ChainInputError' });
    }
  });
});
