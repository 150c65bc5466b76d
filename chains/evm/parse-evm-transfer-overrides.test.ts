import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ChainInputError } from '../chain-input-error.ts';
import { solanaPayments } from '../solana/solana-payments.ts';
import { feesComplete, parseEvmTransferOverrides } from './parse-evm-transfer-overrides.ts';

function refused(body: Record<string, unknown>, field: string) {
  assert.throws(
    () => parseEvmTransferOverrides(body),
    (err: unknown) => err instanceof ChainInputError && err.field === field,
    `${JSON.stringify(body)} names ${field}`,
  );
}

test('fields given are kept; the type is implied by the fee fields when not given', () => {
  assert.deepEqual(parseEvmTransferOverrides({}), { overrides: {}, nonce: null });
  assert.deepEqual(parseEvmTransferOverrides({ gasPrice: '7' }).overrides, { type: 0, gasPrice: '7' });
  assert.deepEqual(parseEvmTransferOverrides({ maxPriorityFeePerGas: '0' }).overrides, {
    type: 2,
    maxPriorityFeePerGas: '0',
  });
  assert.deepEqual(parseEvmTransferOverrides({ type: 2, nonce: 4, gasLimit: '21000' }), {
    overrides: { type: 2, gasLimit: '21000' },
    nonce: 4,
  });
  assert.equal(
    feesComplete(parseEvmTransferOverrides({ maxFeePerGas: '9', maxPriorityFeePerGas: '1' }).overrides),
    true,
  );
  assert.equal(feesComplete(parseEvmTransferOverrides({ maxFeePerGas: '9' }).overrides), false);
  assert.equal(feesComplete(parseEvmTransferOverrides({ type: 0, gasPrice: '3' }).overrides), true);
  assert.equal(feesComplete(parseEvmTransferOverrides({ type: 0 }).overrides), false);
});

test('mixed fee models, impossible values and malformed numbers are refused naming the field', () => {
  refused({ type: 0, maxFeePerGas: '1' }, 'maxFeePerGas');
  refused({ gasPrice: '1', maxPriorityFeePerGas: '1' }, 'maxPriorityFeePerGas');
  refused({ type: 2, gasPrice: '1' }, 'gasPrice');
  refused({ maxFeePerGas: '5', maxPriorityFeePerGas: '6' }, 'maxPriorityFeePerGas');
  refused({ type: 1 }, 'type');
  refused({ nonce: -1 }, 'nonce');
  refused({ nonce: 1.5 }, 'nonce');
  refused({ gasLimit: '20999' }, 'gasLimit');
  refused({ gasLimit: String(2n ** 63n + 1n) }, 'gasLimit');
  refused({ gasPrice: '0' }, 'gasPrice');
  refused({ maxFeePerGas: '0' }, 'maxFeePerGas');
  refused({ maxFeePerGas: '01' }, 'maxFeePerGas');
  refused({ maxFeePerGas: String(2n ** 256n) }, 'maxFeePerGas');
  refused({ gasPrice: 5 }, 'gasPrice');
});

test('a Solana transfer refuses every EVM field by name', () => {
  for (const [field, v] of [
    ['type', 2],
    ['nonce', 0],
    ['gasLimit', '21000'],
    ['maxFeePerGas', '1'],
    ['maxPriorityFeePerGas', '1'],
    ['gasPrice', '1'],
  ] as const) {
    assert.throws(
      () =>
        solanaPayments.transferTarget(
          { to: '11111111111111111111111111111111', value: '1', [field]: v } as never,
          'development',
        ),
      (err: unknown) => err instanceof ChainInputError && err.field === field,
    );
  }
});
