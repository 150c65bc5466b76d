import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { keccak_256 } from '@noble/hashes/sha3.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { verifyMessage } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import type { Secp256k1Signature } from '../signing-types.ts';
import { encodeEvmSignature } from './encode-evm-signature.ts';
import { hashEvmMessage } from './hash-evm-message.ts';

const PRIVATE_KEY = '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80';
const account = privateKeyToAccount(PRIVATE_KEY);

function signDigest(digest: Uint8Array): Secp256k1Signature {
  const recovered = secp256k1.sign(digest, hexToBytes(PRIVATE_KEY.slice(2)), { prehash: false, format: 'recovered' });
  return { rs: recovered.slice(1), recovery: recovered[0] as 0 | 1 };
}

describe('hashEvmMessage', () => {
  it('computes the well-known personal_sign digest of "hello world"', () => {
    assert.equal(
      bytesToHex(hashEvmMessage('hello world')),
      'd9eba16ed0ecae432b71fe008c98cc872bb4cc214d3220a36f365326cf807d68',
    );
  });

  it('prefixes the UTF-8 byte length, not the string length', () => {
    // EIP-191 version 0x45: "é" is one UTF-16 unit but two UTF-8 bytes, so the prefix must end in "2".
    const utf8 = (text: string): Uint8Array => new TextEncoder().encode(text);
    assert.deepEqual(hashEvmMessage('é'), keccak_256(utf8('\x19Ethereum Signed Message:\n2é')));
    assert.notDeepEqual(hashEvmMessage('é'), keccak_256(utf8('\x19Ethereum Signed Message:\n1é')));
  });

  for (const message of [
    'hello world',
    '',
    'multi\nline\r\nmessage',
    'héllo 😀 世界',
    '0xdeadbeef',
    'x'.repeat(10_000),
    'é'.repeat(32 * 1024), // 64 KiB of UTF-8: the largest message the service signs
  ]) {
    it(`signs like viem signMessage and verifies: ${JSON.stringify(message.slice(0, 20))}`, async () => {
      const signature = encodeEvmSignature(signDigest(hashEvmMessage(message)));
      assert.equal(`0x${signature}`, await account.signMessage({ message }));
      assert.equal(await verifyMessage({ address: account.address, message, signature: `0x${signature}` }), true);
    });
  }

  it('does not verify after one byte of the signature or message changes', async () => {
    const signature = hexToBytes(encodeEvmSignature(signDigest(hashEvmMessage('pay 1 ETH'))));
    assert.equal(
      await verifyMessage({ address: account.address, message: 'pay 2 ETH', signature: `0x${bytesToHex(signature)}` }),
      false,
    );
    signature[40] = signature[40]! ^ 0x01; // in s: r must stay a valid x coordinate
    assert.equal(
      await verifyMessage({ address: account.address, message: 'pay 1 ETH', signature: `0x${bytesToHex(signature)}` }),
      false,
    );
  });

  it('refuses non-strings and unpaired surrogates with ChainInputError', () => {
    for (const message of [undefined, null, 42, ['hi'], { raw: '0x00' }, new Uint8Array(2), '\ud800']) {
      assert.throws(() => hashEvmMessage(message as string), { name: 'ChainInputError', field: 'message' });
    }
  });
});
