import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { assertSecp256k1Signature } from './assert-secp256k1-signature.ts';

const N = secp256k1.Point.CURVE().n;
const toBytes32 = (value: bigint): Uint8Array =>
  Uint8Array.from(Buffer.from(value.toString(16).padStart(64, '0'), 'hex'));

function signatureOf(r: bigint, s: bigint): Uint8Array {
  const rs = new Uint8Array(64);
  rs.set(toBytes32(r), 0);
  rs.set(toBytes32(s), 32);
  return rs;
}

describe('assertSecp256k1Signature', () => {
  it('accepts noble signatures (always low-s) with either recovery bit', () => {
    const recoveries = new Set<number>();
    for (let i = 0; i < 20; i++) {
      const recovered = secp256k1.sign(secp256k1.utils.randomSecretKey(), secp256k1.utils.randomSecretKey(), {
        prehash: false,
        format: 'recovered',
      });
      const recovery = recovered[0] as 0 | 1;
      recoveries.add(recovery);
      assertSecp256k1Signature({ rs: recovered.subarray(1), recovery });
    }
    assert.deepEqual([...recoveries].sort(), [0, 1]);
    assertSecp256k1Signature({ rs: signatureOf(1n, N / 2n), recovery: 0 });
    assertSecp256k1Signature({ rs: signatureOf(N - 1n, 1n), recovery: 1 });
  });

  it('refuses high-s, zero and out-of-range scalars', () => {
    assert.throws(() => assertSecp256k1Signature({ rs: signatureOf(1n, N / 2n + 1n), recovery: 0 }), {
      name: 'ChainInputError',
      field: 'rs',
      message: /low-s/,
    });
    for (const [r, s] of [
      [0n, 1n],
      [1n, 0n],
      [N, 1n],
      [1n, N],
      [2n ** 256n - 1n, 1n],
      [1n, 2n ** 256n - 1n],
    ] as const) {
      assert.throws(() => assertSecp256k1Signature({ rs: signatureOf(r, s), recovery: 1 }), {
        name: 'ChainInputError',
        field: 'rs',
        message: /between 1 and the secp256k1 group order/,
      });
    }
  });

  it('refuses malformed shapes', () => {
    const rs = signatureOf(1n, 1n);
    for (const [signature, field] of [
      [{ rs: rs.subarray(1), recovery: 0 }, 'rs'],
      [{ rs: new Uint8Array(65), recovery: 0 }, 'rs'],
      [{ rs: Buffer.from(rs).toString('hex'), recovery: 0 }, 'rs'],
      [{ rs, recovery: 2 }, 'recovery'],
      [{ rs, recovery: 27 }, 'recovery'],
      [{ rs, recovery: '0' }, 'recovery'],
      [{ rs }, 'recovery'],
      [null, undefined],
      [rs, undefined],
      ['sig', undefined],
    ] as const) {
      assert.throws(() => assertSecp256k1Signature(signature), { name: 'ChainInputError', field });
    }
  });
});
