import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createTransferCheckedInstruction, TOKEN_PROGRAM_ID } from '@solana/spl-token';
import { Keypair, SystemProgram, Transaction } from '@solana/web3.js';
import { classifySolanaSendError } from './classify-solana-send-error.ts';

const wallet = Keypair.fromSeed(new Uint8Array(32).fill(7)).publicKey;
const other = Keypair.fromSeed(new Uint8Array(32).fill(8)).publicKey;
const BLOCKHASH = 'GfVcyD4kkTrj4bKc7WA9sZCin9JDbdT4Zkd3EittNR1W';

function wire(...instructions: Parameters<Transaction['add']>): Uint8Array {
  return new Transaction({ feePayer: wallet, recentBlockhash: BLOCKHASH })
    .add(...instructions)
    .serialize({ requireAllSignatures: false, verifySignatures: false });
}

const solTransfer = wire(SystemProgram.transfer({ fromPubkey: wallet, toPubkey: other, lamports: 1 }));
const tokenTransfer = wire(
  SystemProgram.transfer({ fromPubkey: wallet, toPubkey: other, lamports: 1 }),
  createTransferCheckedInstruction(other, other, wallet, wallet, 1n, 0, [], TOKEN_PROGRAM_ID),
);

/** Agave's preflight failure: -32002 with the simulation result as data. */
const simulationFailed = (err: unknown, logs: string[] = []) => ({
  code: -32002,
  message: 'Transaction simulation failed: …',
  data: { err, logs, accounts: null, unitsConsumed: 0, returnData: null },
});

function verdict(error: Parameters<typeof classifySolanaSendError>[0], bytes = solTransfer) {
  const result = classifySolanaSendError(error, bytes);
  if (result.kind === 'accepted') return 'accepted';
  return `${result.kind}:${result.error.transient ? 'transient' : 'final'}:${result.error.code}`;
}

describe('classifySolanaSendError', () => {
  it('classifies simulation failures by error and by the program of the failing instruction', () => {
    const cases: [ReturnType<typeof simulationFailed>, string, Uint8Array?][] = [
      [simulationFailed('AlreadyProcessed'), 'accepted'],
      [simulationFailed('BlockhashNotFound'), 'failed:final:BLOCKHASH_EXPIRED'],
      [simulationFailed('AccountNotFound'), 'failed:final:INSUFFICIENT_NATIVE_BALANCE'],
      [simulationFailed('InsufficientFundsForFee'), 'failed:final:INSUFFICIENT_NATIVE_BALANCE'],
      [
        simulationFailed({ InsufficientFundsForRent: { account_index: 0 } }),
        'failed:final:INSUFFICIENT_NATIVE_BALANCE',
      ],
      [simulationFailed({ InsufficientFundsForRent: { account_index: 1 } }), 'failed:final:EXECUTION_FAILED'],
      [simulationFailed({ InstructionError: [0, { Custom: 1 }] }), 'failed:final:INSUFFICIENT_NATIVE_BALANCE'],
      [
        simulationFailed({ InstructionError: [1, { Custom: 1 }] }),
        'failed:final:INSUFFICIENT_TOKEN_BALANCE',
        tokenTransfer,
      ],
      [
        simulationFailed({ InstructionError: [1, 'InvalidAccountData'] }),
        'check-token-source:final:EXECUTION_FAILED',
        tokenTransfer,
      ],
      [simulationFailed({ InstructionError: [1, { Custom: 17 }] }), 'failed:final:EXECUTION_FAILED', tokenTransfer],
      [
        simulationFailed({ InstructionError: [0, { Custom: 1 }] }, ['Transfer: insufficient lamports 5, need 2039280']),
        'failed:final:INSUFFICIENT_NATIVE_BALANCE',
        tokenTransfer,
      ],
      [simulationFailed({ InstructionError: [0, 'ComputationalBudgetExceeded'] }), 'failed:final:EXECUTION_FAILED'],
      [simulationFailed('AccountInUse'), 'failed:final:TRANSACTION_REJECTED'],
    ];
    for (const [error, expected, bytes] of cases) {
      assert.equal(verdict(error, bytes), expected, JSON.stringify(error.data.err));
    }
  });

  it('names the source token account to check when a token instruction finds an account missing', () => {
    const result = classifySolanaSendError(
      simulationFailed({ InstructionError: [1, 'IncorrectProgramId'] }),
      tokenTransfer,
    );
    assert.ok(result.kind === 'check-token-source');
    assert.equal(result.source, other.toBase58());
  });

  it('separates refusals of the bytes from a node that cannot take them now', () => {
    assert.equal(
      verdict({ code: -32003, message: 'Transaction signature verification failure' }),
      'failed:final:TRANSACTION_REJECTED',
    );
    assert.equal(verdict({ code: -32602, message: 'invalid transaction' }), 'failed:final:TRANSACTION_REJECTED');
    assert.equal(verdict({ code: -32005, message: 'Node is unhealthy' }), 'failed:transient:RPC_UNAVAILABLE');
    assert.equal(verdict({ code: -32603, message: 'Internal error' }), 'failed:transient:RPC_UNAVAILABLE');
    assert.equal(
      verdict({ code: -32002, message: 'Transaction simulation failed: Blockhash not found' }),
      'failed:final:BLOCKHASH_EXPIRED',
    );
    assert.equal(verdict({ code: -32002, message: 'This transaction has already been processed' }), 'accepted');
  });

  it('writes its own messages, not what the node said', () => {
    const result = classifySolanaSendError(
      { ...simulationFailed('AccountNotFound'), message: 'see https://rpc.example/?api-key=secret' },
      solTransfer,
    );
    assert.ok(result.kind === 'failed');
    assert.equal(result.error.message, 'the wallet has no SOL to pay the transaction fee');
  });
});
