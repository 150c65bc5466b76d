import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseSerializedSignature } from '@mysten/sui/cryptography';
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519';
import { ed25519 } from '@noble/curves/ed25519.js';
import { encodeSuiSignature } from './encode-sui-signature.ts';

describe('encodeSuiSignature', () => {
  it('lays out flag 0x00 ‖ signature ‖ public key in base64, which the Sui SDK parses back', () => {
    const seed = new Uint8Array(32).fill(61);
    const publicKey = ed25519.getPublicKey(seed);
    const message = Uint8Array.of(1, 2, 3);
    const sig = ed25519.sign(message, seed);
    const encoded = encodeSuiSignature(sig, publicKey);
    assert.deepEqual(new Uint8Array(Buffer.from(encoded, 'base64')), Uint8Array.of(0x00, ...sig, ...publicKey));
    assert.equal(
      Ed25519Keypair.fromSecretKey(seed).getPublicKey().toBase64(),
      Buffer.from(publicKey).toString('base64'),
    );
    const parsed = parseSerializedSignature(encoded);
    assert.equal(parsed.signatureScheme, 'ED25519');
    assert.deepEqual(parsed.signature, sig);
    assert.deepEqual(parsed.publicKey, publicKey);
  });

  it('refuses wrong sizes and types for the signature and key', () => {
    const key = new Uint8Array(32);
    for (const sig of [new Uint8Array(63), new Uint8Array(65), 'sig', null, Array(64).fill(0)]) {
      assert.throws(() => encodeSuiSignature(sig as Uint8Array, key), { name: 'ChainInputError', field: 'signature' });
    }
    for (const publicKey of [new Uint8Array(33), new Uint8Array(0), 'key', undefined]) {
      assert.throws(() => encodeSuiSignature(new Uint8Array(64), publicKey as Uint8Array), {
        name: 'ChainInputError',
        field: 'publicKey',
      });
    }
  });
});
