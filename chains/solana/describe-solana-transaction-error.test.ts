import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { describeSolanaTransactionError } from './describe-solana-transaction-error.ts';

describe('describeSolanaTransactionError', () => {
  it('reads the JSON forms of TransactionError', () => {
    assert.equal(describeSolanaTransactionError('InsufficientFundsForFee'), 'insufficient funds for fee');
    assert.equal(
      describeSolanaTransactionError({ InstructionError: [2, { Custom: 17 }] }),
      'instruction 2 failed: custom program error 0x11',
    );
    assert.equal(
      describeSolanaTransactionError({ InstructionError: [0, 'InvalidAccountData'] }),
      'instruction 0 failed: invalid account data',
    );
    assert.equal(
      describeSolanaTransactionError({ InstructionError: [0, { BorshIoError: 'x' }] }),
      'instruction 0 failed: borsh io error',
    );
    assert.equal(
      describeSolanaTransactionError({ InsufficientFundsForRent: { account_index: 1 } }),
      'account 1 would hold less than the rent-exempt minimum',
    );
    assert.equal(describeSolanaTransactionError({ DuplicateInstruction: 3 }), 'instruction 3 is a duplicate');
  });

  it('never throws and stays short', () => {
    for (const value of [null, undefined, 42, [], {}, { InstructionError: 'x' }]) {
      assert.equal(typeof describeSolanaTransactionError(value), 'string');
    }
    assert.ok(describeSolanaTransactionError('A'.repeat(1000)).length <= 200);
  });
});
