import { TOKEN_2022_PROGRAM_ID, TOKEN_PROGRAM_ID } from '@solana/spl-token';
import { SystemProgram, VersionedTransaction } from '@solana/web3.js';
import type { ChainErrorCode } from '../domain/payments.ts';
import { isPlainObject } from '../is-plain-object.ts';
import { ChainRpcError } from '../payment-chain.ts';
import type { SolanaRpcErrorObject } from './create-solana-rpc.ts';
import { describeSolanaTransactionError } from './describe-solana-transaction-error.ts';

/**
 * What a `sendTransaction` error means for the payment:
 * - `accepted`: the node already has the transaction;
 * - `failed`: a ChainRpcError to throw;
 * - `check-token-source`: a token instruction found one of its accounts missing or foreign. When `source` (the
 *   instruction's source token account) does not exist, the wallet holds none of the token
 *   (INSUFFICIENT_TOKEN_BALANCE); otherwise `error` stands.
 */
export type SolanaSendVerdict =
  | { kind: 'accepted' }
  | { kind: 'failed'; error: ChainRpcError }
  | { kind: 'check-token-source'; source: string; error: ChainRpcError };

/** sendTransaction's preflight simulation failed; `data.err` says how. */
const SIMULATION_FAILED = -32002;
const SIGNATURE_VERIFICATION_FAILED = -32003;
const INVALID_PARAMS = -32602;
/** Token errors (spl-token `TokenError`): 1 is InsufficientFunds, in Token and Token-2022 alike. */
const TOKEN_INSUFFICIENT_FUNDS = 1;
/** System program `SystemError::ResultWithNegativeLamports`: a transfer of more lamports than the account has. */
const SYSTEM_RESULT_WITH_NEGATIVE_LAMPORTS = 1;
/** How the token programs report a source token account that does not exist (Token, Token-2022). */
const MISSING_ACCOUNT_ERRORS = new Set(['InvalidAccountData', 'IncorrectProgramId', 'UninitializedAccount']);
const TOKEN_PROGRAMS = new Set([TOKEN_PROGRAM_ID.toBase58(), TOKEN_2022_PROGRAM_ID.toBase58()]);

const final = (code: ChainErrorCode, message: string, cause: unknown): SolanaSendVerdict => ({
  kind: 'failed',
  error: new ChainRpcError('final', code, message, { cause }),
});

function decode(wire: Uint8Array): VersionedTransaction | undefined {
  try {
    return VersionedTransaction.deserialize(wire);
  } catch {
    return undefined;
  }
}

/**
 * Classifies the JSON-RPC error a node answered to `sendTransaction` (preflight on) for the signed `wire`
 * transaction. Documented choices:
 * - no SOL for the fee ("Attempt to debit an account but found no record of a prior credit", insufficient funds
 *   for fee), the fee payer left below rent, or a System transfer short of lamports ("insufficient lamports" in
 *   the logs, also inside the associated-token-account program): final INSUFFICIENT_NATIVE_BALANCE;
 * - a token program's InsufficientFunds (custom error 1): final INSUFFICIENT_TOKEN_BALANCE;
 * - blockhash not found: final BLOCKHASH_EXPIRED; "already processed": accepted;
 * - any other instruction error (a program ran and failed, e.g. a frozen account, a recipient left below rent):
 *   final EXECUTION_FAILED; other transaction-level refusals (sanitize, account locks, bad signatures, bytes the
 *   node cannot read): final TRANSACTION_REJECTED;
 * - anything else (node unhealthy, behind, internal error): transient RPC_UNAVAILABLE.
 * Messages are written here (with the short error text), never the node's raw answer.
 */
export function classifySolanaSendError(error: SolanaRpcErrorObject, wire: Uint8Array): SolanaSendVerdict {
  const data = isPlainObject(error.data) ? error.data : {};
  const err = data['err'];
  const logs = Array.isArray(data['logs']) ? data['logs'].filter((line) => typeof line === 'string') : [];

  if (err === 'AlreadyProcessed' || /already been processed/i.test(error.message)) return { kind: 'accepted' };
  if (err === 'BlockhashNotFound' || (err === undefined && /blockhash not found/i.test(error.message))) {
    return final(
      'BLOCKHASH_EXPIRED',
      'the transaction blockhash has expired or is unknown to this network; it can never execute',
      error,
    );
  }
  if (error.code === SIGNATURE_VERIFICATION_FAILED) {
    return final('TRANSACTION_REJECTED', 'the transaction signatures do not verify', error);
  }
  if (error.code === INVALID_PARAMS) {
    return final('TRANSACTION_REJECTED', 'the Solana node could not read the transaction', error);
  }
  if (error.code !== SIMULATION_FAILED || err === undefined || err === null) {
    return {
      kind: 'failed',
      error: new ChainRpcError(
        'transient',
        'RPC_UNAVAILABLE',
        `the Solana RPC could not take the transaction (error ${error.code})`,
        { cause: error },
      ),
    };
  }

  const reason = describeSolanaTransactionError(err);
  if (err === 'AccountNotFound') {
    return final('INSUFFICIENT_NATIVE_BALANCE', 'the wallet has no SOL to pay the transaction fee', error);
  }
  if (err === 'InsufficientFundsForFee') {
    return final('INSUFFICIENT_NATIVE_BALANCE', 'the wallet has too little SOL to pay the transaction fee', error);
  }
  if (isPlainObject(err) && isPlainObject(err['InsufficientFundsForRent'])) {
    const index = (err['InsufficientFundsForRent'] as Record<string, unknown>)['account_index'];
    return index === 0
      ? final('INSUFFICIENT_NATIVE_BALANCE', 'the wallet would be left below the rent-exempt minimum of SOL', error)
      : final(
          'EXECUTION_FAILED',
          `simulation failed: account ${String(index)} of the transaction (the recipient) would hold less than the rent-exempt minimum of SOL`,
          error,
        );
  }
  if (isPlainObject(err) && Array.isArray(err['InstructionError'])) {
    const [index, inner] = err['InstructionError'] as [unknown, unknown];
    const tx = decode(wire);
    const instruction = typeof index === 'number' ? tx?.message.compiledInstructions[index] : undefined;
    const program =
      instruction === undefined ? undefined : tx!.message.staticAccountKeys[instruction.programIdIndex]?.toBase58();
    const custom = isPlainObject(inner) && typeof inner['Custom'] === 'number' ? inner['Custom'] : undefined;
    if (logs.some((line) => /insufficient lamports/i.test(line))) {
      return final(
        'INSUFFICIENT_NATIVE_BALANCE',
        'the wallet has too little SOL for this transfer and its fees',
        error,
      );
    }
    if (program === SystemProgram.programId.toBase58() && custom === SYSTEM_RESULT_WITH_NEGATIVE_LAMPORTS) {
      return final(
        'INSUFFICIENT_NATIVE_BALANCE',
        'the wallet has too little SOL for this transfer and its fees',
        error,
      );
    }
    if (program !== undefined && TOKEN_PROGRAMS.has(program)) {
      if (custom === TOKEN_INSUFFICIENT_FUNDS || inner === 'InsufficientFunds') {
        return final('INSUFFICIENT_TOKEN_BALANCE', 'the wallet holds too little of the token', error);
      }
      const sourceIndex = instruction!.accountKeyIndexes[0];
      const source = sourceIndex === undefined ? undefined : tx!.message.staticAccountKeys[sourceIndex]?.toBase58();
      if (typeof inner === 'string' && MISSING_ACCOUNT_ERRORS.has(inner) && source !== undefined) {
        return {
          kind: 'check-token-source',
          source,
          error: new ChainRpcError('final', 'EXECUTION_FAILED', `simulation failed: ${reason}`, { cause: error }),
        };
      }
    }
    return final('EXECUTION_FAILED', `simulation failed: ${reason}`, error);
  }
  return final('TRANSACTION_REJECTED', `the Solana node refused the transaction: ${reason}`, error);
}
