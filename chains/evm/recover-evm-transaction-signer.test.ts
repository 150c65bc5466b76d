import assert from 'node:assert/strict';
import { test } from 'node:test';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { keccak256, parseTransaction, recoverTransactionAddress, serializeTransaction } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { recoverEvmTransactionSigner } from './recover-evm-transaction-signer.ts';

test('recovers the signer viem recovers from the same signed transaction', async () => {
  const key = `0x${'11'.repeat(32)}` as const;
  const account = privateKeyToAccount(key);
  const tx = {
    chainId: 31337,
    type: 'eip1559' as const,
    nonce: 3,
    to: '0x000000000000000000000000000000000000dEaD' as const,
    value: 5n,
    gas: 21000n,
    maxFeePerGas: 2n,
    maxPriorityFeePerGas: 1n,
  };
  const digest = keccak256(serializeTransaction(tx), 'bytes');
  const sig = secp256k1.sign(digest, Buffer.from(key.slice(2), 'hex'), { prehash: false, format: 'recovered' });
  const recovery = sig[0] as 0 | 1;
  const rs = sig.subarray(1);
  const signed = serializeTransaction(tx, {
    r: `0x${Buffer.from(rs.subarray(0, 32)).toString('hex')}`,
    s: `0x${Buffer.from(rs.subarray(32)).toString('hex')}`,
    yParity: recovery,
  });
  assert.equal(parseTransaction(signed).nonce, 3);
  assert.equal(await recoverTransactionAddress({ serializedTransaction: signed }), account.address);
  assert.equal(recoverEvmTransactionSigner(digest, { rs, recovery }), account.address);
  // Another digest recovers another address: the check can fail.
  const other = keccak256(serializeTransaction({ ...tx, nonce: 4 }), 'bytes');
  assert.notEqual(recoverEvmTransactionSigner(other, { rs, recovery }), account.address);
});
