import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Secp256k1, Secp256k1Signature } from '@cosmjs/crypto';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import type { Secp256k1Signature as Signature } from '../signing-types.ts';
import { encodeCosmosSignature } from './encode-cosmos-signature.ts';

describe('encodeCosmosSignature', () => {
  it('encodes r‖s as 128 hex characters that @cosmjs/crypto verifies, whatever the recovery bit', async () => {
    const privateKey = secp256k1.utils.randomSecretKey();
    const publicKey = secp256k1.getPublicKey(privateKey, false);
    const recoveries = new Set<number>();
    for (let i = 0; recoveries.size < 2 && i < 64; i++) {
      const digest = new Uint8Array(32).fill(i + 1);
      const recovered = secp256k1.sign(digest, privateKey, { prehash: false, format: 'recovered' });
      const sig: Signature = { rs: recovered.slice(1), recovery: recovered[0] as 0 | 1 };
      recoveries.add(sig.recovery);
      const hex = encodeCosmosSignature(sig);
      assert.match(hex, /^[0-9a-f]{128}$/);
      assert.equal(hex, Buffer.from(sig.rs).toString('hex'));
      assert.equal(
        await Secp256k1.verifySignature(Secp256k1Signature.fromFixedLength(Buffer.from(hex, 'hex')), digest, publicKey),
        true,
      );
    }
    assert.equal(recoveries.size, 2);
  });

  it('refuses high-s (which the Cosmos SDK rejects) and malformed signatures', () => {
    const recovered = secp256k1.sign(new Uint8Array(32).fill(9), secp256k1.utils.randomSecretKey(), {
      prehash: false,
      format: 'recovered',
    });
    const rs = recovered.slice(1);
    const n = secp256k1.Point.CURVE().n;
    const highS = Uint8Array.from(rs);
    highS.set(
      Buffer.from(
        (n - BigInt(`0x${Buffer.from(rs.subarray(32)).toString('hex')}`)).toString(16).padStart(64, '0'),
        'hex',
      ),
      32,
    );
    assert.throws(() => encodeCosmosSignature({ rs: highS, recovery: 0 }), {
      name: 'ChainInputError',
      field: 'rs',
      message: /low-s/,
    });
    for (const bad of [
      { rs: rs.subarray(0, 63), recovery: 0 },
      { rs, recovery: -1 },
      { rs: new Uint8Array(64), recovery: 1 },
      null,
      rs,
    ]) {
      assert.throws(() => encodeCosmosSignature(bad as Signature), { name: 'ChainInputError' });
    }
  });
});
