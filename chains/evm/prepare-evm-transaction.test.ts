import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { bytesToHex } from '@noble/hashes/utils.js';
import { keccak256, serializeTransaction } from 'viem';
import { EIP155_EXAMPLE } from '../../fixtures/eip155-example.ts';
import { ChainInputError } from '../chain-input-error.ts';
import { type EvmTransactionInput, prepareEvmTransaction } from './prepare-evm-transaction.ts';

const TO = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';

const eip1559: EvmTransactionInput = {
  type: 2,
  chainId: 8453,
  nonce: 7,
  to: TO,
  value: '1000000000000000000',
  gasLimit: '21000',
  maxFeePerGas: '30000000000',
  maxPriorityFeePerGas: '1000000000',
};

const legacy: EvmTransactionInput = {
  type: 0,
  chainId: 1,
  nonce: 0,
  to: TO,
  value: '1',
  gasLimit: '21000',
  gasPrice: '20000000000',
};

function throwsInput(input: unknown, field: string | undefined, message?: RegExp): void {
  assert.throws(
    () => prepareEvmTransaction(input as EvmTransactionInput),
    (error: unknown) => {
      assert.ok(error instanceof ChainInputError, `expected ChainInputError, got ${String(error)}`);
      assert.equal(error.field, field, error.message);
      if (message) assert.match(error.message, message);
      return true;
    },
    JSON.stringify(input, (_key, value) => (typeof value === 'bigint' ? `${value}n` : value)),
  );
}

describe('prepareEvmTransaction', () => {
  it('computes the EIP-155 example signing hash (legacy, chain 1)', () => {
    // EIP-155 "Example": nonce 9, gas price 20 gwei, gas 21000, to 0x3535…35, 1 ether, no data.
    const prepared = prepareEvmTransaction(EIP155_EXAMPLE);
    assert.equal(bytesToHex(prepared.digest), 'daf5a779ae972f972197303d7b574746c7ef83eadac0f2791ad23db92e4c8e53');
    assert.equal(prepared.chainId, 1);
  });

  it('keeps every field exactly and maps gasLimit to gas (type 2)', () => {
    const huge = (2n ** 256n - 1n).toString();
    const prepared = prepareEvmTransaction({
      ...eip1559,
      to: TO.toLowerCase(),
      value: huge,
      maxFeePerGas: huge,
      maxPriorityFeePerGas: huge,
      gasLimit: '9007199254740993',
      nonce: Number.MAX_SAFE_INTEGER,
      chainId: Number.MAX_SAFE_INTEGER,
      data: '0xA9059CBB',
    });
    assert.deepEqual(prepared.transaction, {
      type: 'eip1559',
      chainId: Number.MAX_SAFE_INTEGER,
      nonce: Number.MAX_SAFE_INTEGER,
      gas: 9007199254740993n,
      maxFeePerGas: 2n ** 256n - 1n,
      maxPriorityFeePerGas: 2n ** 256n - 1n,
      to: TO,
      value: 2n ** 256n - 1n,
      data: '0xa9059cbb',
    });
    assert.equal(prepared.chainId, Number.MAX_SAFE_INTEGER);
  });

  it('leaves absent optional fields absent', () => {
    const { to: _to, value: _value, ...rest } = legacy;
    const prepared = prepareEvmTransaction({ ...rest, data: '0x60ff' });
    assert.deepEqual(prepared.transaction, {
      type: 'legacy',
      chainId: 1,
      nonce: 0,
      gas: 21000n,
      gasPrice: 20_000_000_000n,
      data: '0x60ff',
    });
  });

  it('hashes the same bytes as viem for the equivalent transaction (types 0 and 2, with and without to/data)', () => {
    const cases: [EvmTransactionInput, Parameters<typeof serializeTransaction>[0]][] = [
      [
        eip1559,
        {
          type: 'eip1559',
          chainId: 8453,
          nonce: 7,
          to: TO,
          value: 10n ** 18n,
          gas: 21000n,
          maxFeePerGas: 30n * 10n ** 9n,
          maxPriorityFeePerGas: 10n ** 9n,
        },
      ],
      [
        { ...eip1559, to: undefined, value: undefined, data: '0x6080604052' },
        {
          type: 'eip1559',
          chainId: 8453,
          nonce: 7,
          gas: 21000n,
          maxFeePerGas: 30n * 10n ** 9n,
          maxPriorityFeePerGas: 10n ** 9n,
          data: '0x6080604052',
        },
      ],
      [legacy, { type: 'legacy', chainId: 1, nonce: 0, to: TO, value: 1n, gas: 21000n, gasPrice: 2n * 10n ** 10n }],
      [
        { ...legacy, to: undefined, data: '0x60ff' },
        { type: 'legacy', chainId: 1, nonce: 0, value: 1n, gas: 21000n, gasPrice: 2n * 10n ** 10n, data: '0x60ff' },
      ],
    ];
    for (const [input, viemTransaction] of cases) {
      const prepared = prepareEvmTransaction(input);
      assert.deepEqual(prepared.digest, keccak256(serializeTransaction(viemTransaction), 'bytes'));
    }
    // The digest covers the chain: the same transaction on another chain has another digest.
    assert.notDeepEqual(prepareEvmTransaction(legacy).digest, prepareEvmTransaction({ ...legacy, chainId: 5 }).digest);
  });

  it('refuses a missing or wrong type', () => {
    for (const type of [undefined, 1, 3, 4, '2', '0x2', null, 2.5])
      throwsInput({ ...eip1559, type }, 'type', /0 \(legacy\) or 2/);
  });

  it('enforces the fee fields of each type', () => {
    throwsInput({ ...eip1559, maxFeePerGas: undefined }, 'maxFeePerGas', /required for a type 2/);
    throwsInput({ ...eip1559, maxPriorityFeePerGas: undefined }, 'maxPriorityFeePerGas', /required for a type 2/);
    throwsInput({ ...eip1559, gasPrice: '1' }, 'gasPrice', /not allowed on a type 2/);
    throwsInput({ ...eip1559, maxPriorityFeePerGas: '30000000001' }, 'maxPriorityFeePerGas', /must not exceed/);
    throwsInput({ ...legacy, gasPrice: undefined }, 'gasPrice', /required for a type 0/);
    throwsInput({ ...legacy, maxFeePerGas: '1' }, 'maxFeePerGas', /not allowed on a type 0/);
    throwsInput({ ...legacy, maxPriorityFeePerGas: '1' }, 'maxPriorityFeePerGas', /not allowed on a type 0/);
    prepareEvmTransaction({ ...eip1559, maxPriorityFeePerGas: eip1559.maxFeePerGas });
  });

  it('requires data for a contract creation', () => {
    throwsInput({ ...eip1559, to: undefined }, 'to', /to is required/);
    throwsInput({ ...eip1559, to: undefined, data: '0x' }, 'to', /to is required/);
    prepareEvmTransaction({ ...eip1559, data: '0x' });
  });

  it('refuses malformed, wrong-type and out-of-range values, naming the field', () => {
    const bad: [Partial<Record<keyof EvmTransactionInput, unknown>>, string][] = [
      [{ chainId: 0 }, 'chainId'],
      [{ chainId: -1 }, 'chainId'],
      [{ chainId: '1' }, 'chainId'],
      [{ chainId: 2 ** 53 }, 'chainId'],
      [{ chainId: 1.5 }, 'chainId'],
      [{ chainId: null }, 'chainId'],
      [{ chainId: undefined }, 'chainId'],
      [{ nonce: -1 }, 'nonce'],
      [{ nonce: '0' }, 'nonce'],
      [{ nonce: 1e20 }, 'nonce'],
      [{ nonce: undefined }, 'nonce'],
      [{ gasLimit: 21000 }, 'gasLimit'],
      [{ gasLimit: undefined }, 'gasLimit'],
      [{ gasLimit: '0x5208' }, 'gasLimit'],
      [{ value: 1 }, 'value'],
      [{ value: '-1' }, 'value'],
      [{ value: '1.5' }, 'value'],
      [{ value: '1e18' }, 'value'],
      [{ value: (2n ** 256n).toString() }, 'value'],
      [{ value: '9'.repeat(100_000) }, 'value'],
      [{ value: null }, 'value'],
      [{ maxFeePerGas: (2n ** 256n).toString() }, 'maxFeePerGas'],
      [{ maxFeePerGas: ['1'] }, 'maxFeePerGas'],
      [{ to: TO.slice(0, -2) }, 'to'],
      [{ to: `0x${'00'.repeat(21)}` }, 'to'],
      [{ to: TO.slice(2) }, 'to'],
      [{ to: `${TO.slice(0, -1)}9` }, 'to'],
      [{ to: null }, 'to'],
      [{ to: 42 }, 'to'],
      [{ to: '' }, 'to'],
      [{ data: 'a9059cbb' }, 'data'],
      [{ data: '0xabc' }, 'data'],
      [{ data: '0xzz' }, 'data'],
      [{ data: 123 }, 'data'],
      [{ data: ['0x00'] }, 'data'],
    ];
    for (const [patch, field] of bad) throwsInput({ ...eip1559, ...patch }, field);
    throwsInput({ ...legacy, gasPrice: 1 }, 'gasPrice');
  });

  it('refuses unknown fields and non-objects', () => {
    throwsInput({ ...eip1559, gas: '21000' }, 'gas', /not a supported transaction field/);
    throwsInput({ ...eip1559, accessList: [] }, 'accessList');
    throwsInput({ ...eip1559, from: TO }, 'from');
    for (const input of [undefined, null, 'tx', 2, [eip1559], new Uint8Array(2)]) {
      throwsInput(input, undefined, /transaction must be an object/);
    }
  });
});
