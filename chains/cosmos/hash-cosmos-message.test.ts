import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import { Secp256k1, Secp256k1Signature, sha256 } from '@cosmjs/crypto';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import type { Secp256k1Signature as Signature } from '../signing-types.ts';
import { encodeCosmosSignature } from './encode-cosmos-signature.ts';
import { hashCosmosMessage } from './hash-cosmos-message.ts';

const privateKey = secp256k1.utils.randomSecretKey();
const publicKey = secp256k1.getPublicKey(privateKey, true);

function signDigest(digest: Uint8Array): Signature {
  const recovered = secp256k1.sign(digest, privateKey, { prehash: false, format: 'recovered' });
  return { rs: recovered.slice(1), recovery: recovered[0] as 0 | 1 };
}

describe('hashCosmosMessage', () => {
  it('is SHA-256 of the UTF-8 bytes (FIPS 180-2 "abc" vector)', () => {
    assert.equal(
      bytesToHex(hashCosmosMessage('abc')),
      'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
    );
    for (const message of ['', 'héllo 😀', 'line\nbreak']) {
      assert.equal(bytesToHex(hashCosmosMessage(message)), createHash('sha256').update(message, 'utf8').digest('hex'));
    }
  });

  for (const message of ['hello cosmos', '', '{"chain_id":"cosmoshub-4"}', 'ünïcödé 🚀']) {
    it(`verifies with @cosmjs/crypto and equals its signature: ${JSON.stringify(message)}`, async () => {
      const signature = encodeCosmosSignature(signDigest(hashCosmosMessage(message)));
      const digest = sha256(new TextEncoder().encode(message));
      const cosmjsSignature = Secp256k1Signature.fromFixedLength(Buffer.from(signature, 'hex'));
      assert.equal(await Secp256k1.verifySignature(cosmjsSignature, digest, publicKey), true);
      // RFC 6979 nonces make both signers produce the same bytes.
      const expected = await Secp256k1.createSignature(digest, privateKey);
      assert.equal(signature, bytesToHex(expected.toFixedLength()).slice(0, 128));
    });
  }

  it('does not verify after a flipped byte or for another message', async () => {
    const signature = Buffer.from(encodeCosmosSignature(signDigest(hashCosmosMessage('send 1 atom'))), 'hex');
    const verify = (bytes: Uint8Array, message: string) =>
      Secp256k1.verifySignature(
        Secp256k1Signature.fromFixedLength(bytes),
        sha256(new TextEncoder().encode(message)),
        publicKey,
      );
    assert.equal(await verify(signature, 'send 1 atom'), true);
    assert.equal(await verify(signature, 'send 2 atom'), false);
    signature[40] = signature[40]! ^ 0x01;
    assert.equal(await verify(signature, 'send 1 atom'), false);
  });

  it('refuses non-strings and unpaired surrogates with ChainInputError', () => {
    for (const message of [undefined, null, 1, ['a'], { text: 'a' }, new Uint8Array(3), '\ud83d']) {
      assert.throws(() => hashCosmosMessage(message as string), { name: 'ChainInputError', field: 'message' });
    }
  });
});
