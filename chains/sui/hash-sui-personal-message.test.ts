import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519';
import { verifyPersonalMessageSignature } from '@mysten/sui/verify';
import { ed25519 } from '@noble/curves/ed25519.js';
import { blake2b } from '@noble/hashes/blake2.js';
import { encodeSuiSignature } from './encode-sui-signature.ts';
import { hashSuiPersonalMessage } from './hash-sui-personal-message.ts';

const seed = new Uint8Array(32).fill(41);
const keypair = Ed25519Keypair.fromSecretKey(seed);
const publicKey = ed25519.getPublicKey(seed);
const utf8 = (text: string) => new TextEncoder().encode(text);

describe('hashSuiPersonalMessage', () => {
  it('is BLAKE2b-256 of intent [3, 0, 0] ‖ ULEB128 length ‖ UTF-8 bytes', () => {
    assert.deepEqual(hashSuiPersonalMessage('hi'), blake2b(Uint8Array.of(3, 0, 0, 2, 0x68, 0x69), { dkLen: 32 }));
    const long = 'x'.repeat(200);
    // 200 = 0xc8 → ULEB128 0xc8 0x01.
    assert.deepEqual(
      hashSuiPersonalMessage(long),
      blake2b(Uint8Array.of(3, 0, 0, 0xc8, 0x01, ...utf8(long)), { dkLen: 32 }),
    );
  });

  for (const message of ['hello sui', '', 'ünïcödé 🚀', 'x'.repeat(1000), 'x'.repeat(64 * 1024)]) {
    it(`signs like signPersonalMessage and verifies for the wallet address: ${JSON.stringify(message.slice(0, 12))}`, async () => {
      const signature = encodeSuiSignature(ed25519.sign(hashSuiPersonalMessage(message), seed), publicKey);
      const expected = await keypair.signPersonalMessage(utf8(message));
      assert.equal(signature, expected.signature);
      const signer = await verifyPersonalMessageSignature(utf8(message), signature, {
        address: keypair.toSuiAddress(),
      });
      assert.equal(signer.toSuiAddress(), keypair.toSuiAddress());
    });
  }

  it('does not verify for another message or after a flipped signature byte', async () => {
    const sig = ed25519.sign(hashSuiPersonalMessage('approve 1 SUI'), seed);
    const address = keypair.toSuiAddress();
    await assert.rejects(
      verifyPersonalMessageSignature(utf8('approve 2 SUI'), encodeSuiSignature(sig, publicKey), { address }),
    );
    sig[7] = sig[7]! ^ 0x01;
    await assert.rejects(
      verifyPersonalMessageSignature(utf8('approve 1 SUI'), encodeSuiSignature(sig, publicKey), { address }),
    );
  });

  it('refuses non-strings and unpaired surrogates with ChainInputError', () => {
    for (const message of [undefined, null, 3, ['hi'], { message: 'hi' }, utf8('hi'), '\udfff']) {
      assert.throws(() => hashSuiPersonalMessage(message as string), { name: 'ChainInputError', field: 'message' });
    }
  });
});
