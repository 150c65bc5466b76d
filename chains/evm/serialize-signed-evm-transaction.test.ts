import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { hexToBytes } from '@noble/hashes/utils.js';
import {
  parseTransaction,
  recoverTransactionAddress,
  type TransactionSerializable,
  type TransactionSerialized,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { EIP155_EXAMPLE } from '../../fixtures/eip155-example.ts';
import { ChainInputError } from '../chain-input-error.ts';
import type { Secp256k1Signature } from '../signing-types.ts';
import {
  type EvmTransactionInput,
  type PreparedEvmTransaction,
  prepareEvmTransaction,
} from './prepare-evm-transaction.ts';
import { serializeSignedEvmTransaction } from './serialize-signed-evm-transaction.ts';

// Anvil's first account.
const PRIVATE_KEY = '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80';
const account = privateKeyToAccount(PRIVATE_KEY);
const TO = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';

function signDigest(digest: Uint8Array, privateKey = PRIVATE_KEY): Secp256k1Signature {
  const recovered = secp256k1.sign(digest, hexToBytes(privateKey.slice(2)), { prehash: false, format: 'recovered' });
  return { rs: recovered.slice(1), recovery: recovered[0] as 0 | 1 };
}

const base2: EvmTransactionInput = {
  type: 2,
  chainId: 31337,
  nonce: 3,
  gasLimit: '100000',
  maxFeePerGas: '2000000000',
  maxPriorityFeePerGas: '1000000000',
};
const base0: EvmTransactionInput = { type: 0, chainId: 31337, nonce: 3, gasLimit: '100000', gasPrice: '2000000000' };

const CASES: { name: string; input: EvmTransactionInput; viem: TransactionSerializable }[] = [
  {
    name: 'type 2 transfer',
    input: { ...base2, to: TO, value: '1000000000000000000' },
    viem: {
      type: 'eip1559',
      chainId: 31337,
      nonce: 3,
      gas: 100000n,
      maxFeePerGas: 2_000_000_000n,
      maxPriorityFeePerGas: 1_000_000_000n,
      to: TO,
      value: 10n ** 18n,
    },
  },
  {
    name: 'type 2 call with data',
    input: { ...base2, to: TO, data: '0xa9059cbb0000000000000000000000000000000000000000000000000000000000000001' },
    viem: {
      type: 'eip1559',
      chainId: 31337,
      nonce: 3,
      gas: 100000n,
      maxFeePerGas: 2_000_000_000n,
      maxPriorityFeePerGas: 1_000_000_000n,
      to: TO,
      data: '0xa9059cbb0000000000000000000000000000000000000000000000000000000000000001',
    },
  },
  {
    name: 'type 2 contract creation',
    input: { ...base2, data: '0x6080604052348015600f57600080fd5b50' },
    viem: {
      type: 'eip1559',
      chainId: 31337,
      nonce: 3,
      gas: 100000n,
      maxFeePerGas: 2_000_000_000n,
      maxPriorityFeePerGas: 1_000_000_000n,
      data: '0x6080604052348015600f57600080fd5b50',
    },
  },
  {
    name: 'type 0 transfer',
    input: { ...base0, to: TO, value: '5' },
    viem: { type: 'legacy', chainId: 31337, nonce: 3, gas: 100000n, gasPrice: 2_000_000_000n, to: TO, value: 5n },
  },
  {
    name: 'type 0 contract creation',
    input: { ...base0, data: '0x60ff' },
    viem: { type: 'legacy', chainId: 31337, nonce: 3, gas: 100000n, gasPrice: 2_000_000_000n, data: '0x60ff' },
  },
  {
    name: 'type 0 on a large chain id',
    input: { ...base0, chainId: 2 ** 40 + 1, to: TO, value: '1' },
    viem: { type: 'legacy', chainId: 2 ** 40 + 1, nonce: 3, gas: 100000n, gasPrice: 2_000_000_000n, to: TO, value: 1n },
  },
];

describe('serializeSignedEvmTransaction', () => {
  for (const { name, input, viem } of CASES) {
    it(`matches viem signTransaction byte for byte and recovers the signer: ${name}`, async () => {
      const prepared = prepareEvmTransaction(input);
      const signed = serializeSignedEvmTransaction(prepared, signDigest(prepared.digest));
      assert.equal(signed, await account.signTransaction(viem));
      assert.equal(
        await recoverTransactionAddress({ serializedTransaction: signed as TransactionSerialized }),
        account.address,
      );
    });
  }

  it('uses v = chainId × 2 + 35 + recovery for legacy transactions (EIP-155)', () => {
    const recoveries = new Set<number>();
    for (let nonce = 0; recoveries.size < 2 && nonce < 64; nonce++) {
      const prepared = prepareEvmTransaction({ ...base0, nonce, to: TO });
      const sig = signDigest(prepared.digest);
      recoveries.add(sig.recovery);
      const parsed = parseTransaction(serializeSignedEvmTransaction(prepared, sig) as `0x${string}`);
      assert.equal(parsed.v, BigInt(31337 * 2 + 35 + sig.recovery));
      assert.equal(parsed.yParity, sig.recovery);
    }
    assert.deepEqual([...recoveries].sort(), [0, 1]);
  });

  it('reproduces the EIP-155 example signed transaction from its r and s', () => {
    const prepared = prepareEvmTransaction(EIP155_EXAMPLE);
    const rs = hexToBytes(
      '28ef61340bd939bc2195fe537567866003e1a15d3c71ff63e1590620aa636276' +
        '67cbe9d8997f761aecb703304b3800ccf555c9f3dc64214b297fb1966a3b6d83',
    );
    // v = 37 = 1 × 2 + 35 + 0.
    assert.equal(
      serializeSignedEvmTransaction(prepared, { rs, recovery: 0 }),
      '0xf86c098504a817c800825208943535353535353535353535353535353535353535880de0b6b3a76400008025a028ef61340bd939bc2195fe537567866003e1a15d3c71ff63e1590620aa636276a067cbe9d8997f761aecb703304b3800ccf555c9f3dc64214b297fb1966a3b6d83',
    );
  });

  it('recovers another address when the signature is altered or the wrong key signed', async () => {
    const prepared = prepareEvmTransaction({ ...base2, to: TO, value: '1' });
    const sig = signDigest(prepared.digest);
    const flipped = { rs: Uint8Array.from(sig.rs), recovery: sig.recovery };
    flipped.rs[40] = flipped.rs[40]! ^ 0x01; // in s: r must stay a valid x coordinate
    const tampered = serializeSignedEvmTransaction(prepared, flipped) as TransactionSerialized;
    assert.notEqual(await recoverTransactionAddress({ serializedTransaction: tampered }), account.address);
    const otherKey = '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d';
    const byOther = serializeSignedEvmTransaction(
      prepared,
      signDigest(prepared.digest, otherKey),
    ) as TransactionSerialized;
    assert.notEqual(await recoverTransactionAddress({ serializedTransaction: byOther }), account.address);
  });

  it('refuses malformed signatures and prepared values with ChainInputError', () => {
    const prepared = prepareEvmTransaction({ ...base2, to: TO, value: '1' });
    const sig = signDigest(prepared.digest);
    const highS = Uint8Array.from(sig.rs);
    const n = secp256k1.Point.CURVE().n;
    const s = n - BigInt(`0x${Buffer.from(sig.rs.subarray(32)).toString('hex')}`);
    highS.set(hexToBytes(s.toString(16).padStart(64, '0')), 32);
    for (const [badSig, field] of [
      [{ rs: highS, recovery: sig.recovery }, 'rs'],
      [{ rs: sig.rs.subarray(1), recovery: sig.recovery }, 'rs'],
      [{ rs: new Uint8Array(64), recovery: 0 }, 'rs'],
      [{ rs: sig.rs, recovery: 27 }, 'recovery'],
      [null, undefined],
      ['0x00', undefined],
    ] as const) {
      assert.throws(() => serializeSignedEvmTransaction(prepared, badSig as Secp256k1Signature), {
        name: 'ChainInputError',
        field,
      });
    }
    for (const badPrepared of [
      null,
      {},
      { transaction: null },
      { transaction: 'tx' },
      { transaction: { type: 'eip1559', chainId: -1 } },
    ]) {
      assert.throws(
        () => serializeSignedEvmTransaction(badPrepared as unknown as PreparedEvmTransaction, sig),
        (error: unknown) => error instanceof ChainInputError,
      );
    }
  });
});
