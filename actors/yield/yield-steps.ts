import { createHash } from 'node:crypto';
import { CodedError } from '../../chains/domain/errors.ts';
import { YIELD_CONFIRMATIONS, type YieldStepKind } from '../../chains/domain/yield.ts';
import { classifyLendingRevert } from '../../chains/evm/classify-lending-revert.ts';
import { encodeLendingCall, type LendingCall } from '../../chains/evm/encode-lending-call.ts';
import { formatUsdcAmount } from '../../chains/evm/format-usdc-amount.ts';
import { type LendingMarket, WITHDRAW_ALL } from '../../chains/evm/lending-protocol.ts';
import { ChainRpcError, type PaymentChain } from '../../chains/payment-chain.ts';
import type { TransactionRow, TransactionsRepo } from '../../store/transactions-repo.ts';
import type { WalletsRepo } from '../../store/wallets-repo.ts';
import type { YieldError, YieldRepo } from '../../store/yield-repo.ts';
import type { ActorHost } from '../host/host.ts';
import type { PaymentDefinition } from '../payment/payment-definition.ts';
import { cancelPreparedStep, signPreparedStep } from '../payment/prepared-step.ts';
import type {
  CancelStepInput,
  CheckOutcome,
  CheckStepInput,
  PrepareInput,
  PrepareOutcome,
  SignStepInput,
  SignStepOutcome,
} from './yield.machine.ts';

/**
 * The transaction record id of an operation's step `index`: derived from the operation (a UUID, version 8), so a
 * preparation run again after a crash finds the step an earlier run admitted instead of admitting a second one.
 */
export function stepTransactionId(operationId: string, index: number): string {
  const h = createHash('sha256').update(`yield-step:${operationId}:${index}`).digest('hex');
  const variant = ((Number.parseInt(h[16]!, 16) & 0x3) | 0x8).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** What the operation's effects need. `host` is the one that runs them (given late: it is made after the definitions). */
export interface YieldStepDeps {
  yieldOps: Pick<YieldRepo, 'aheadOf'>;
  transactions: Pick<TransactionsRepo, 'getAny'>;
  wallets: Pick<WalletsRepo, 'getAny'>;
  chain(key: string): PaymentChain | undefined;
  market(chainId: number): LendingMarket | null;
  host(): Pick<ActorHost, 'spawn' | 'deliver'>;
  paymentActors: PaymentDefinition;
  now: () => number;
}

function usdc(amount: bigint): string {
  return `${formatUsdcAmount(amount)} USDC`;
}

/** The kind of a step admitted earlier, from its record: an approval is a call to USDC, the rest to the pool. */
function kindOf(row: TransactionRow, market: LendingMarket, action: PrepareInput['action']): YieldStepKind {
  if (row.toAddress?.toLowerCase() === market.usdc.toLowerCase()) return 'approve';
  return action === 'deposit' ? 'supply' : 'withdraw';
}

export function createYieldSteps(deps: YieldStepDeps) {
  const { now } = deps;

  /** The next step of an operation (see yieldMachine): admitted as a prepared payment step, or why there is none. */
  async function prepare(input: PrepareInput): Promise<PrepareOutcome> {
    const at = now();
    const market = deps.market(input.chainId);
    const chain = deps.chain(input.chainKey);
    if (!market || !chain?.readYieldPosition || !chain.buildCall || !chain.pendingNonce) {
      return { kind: 'wait', reason: `EVM chain ${input.chainId} is not configured on this service`, at };
    }
    const transactionId = stepTransactionId(input.operationId, input.index);
    const admitted = deps.transactions.getAny(transactionId);
    if (admitted) {
      return { kind: 'step', step: { kind: kindOf(admitted, market, input.action), transactionId }, at };
    }
    const ahead = deps.yieldOps.aheadOf(input.operationId, input.walletId, input.chainId);
    if (ahead) return { kind: 'wait', reason: `yield operation ${ahead} of this wallet on another chain`, at };

    const wallet = deps.wallets.getAny(input.walletId);
    if (!wallet?.address) {
      return { kind: 'fail', error: { code: 'WALLET_NOT_FOUND', message: 'the wallet no longer exists' }, at };
    }
    const account = wallet.address as `0x${string}`;
    let call: LendingCall;
    try {
      const position = await chain.readYieldPosition(market, account);
      const amount = input.amountBase === 'all' ? WITHDRAW_ALL : BigInt(input.amountBase);
      if (input.action === 'deposit') {
        if (position.walletBalance < amount) {
          return fail(
            'INSUFFICIENT_TOKEN_BALANCE',
            `the wallet holds ${usdc(position.walletBalance)}, less than the ${usdc(amount)} to deposit`,
            at,
          );
        }
        if (position.allowance < amount) {
          if (input.steps.some((s) => s.kind === 'approve')) {
            return fail(
              'ALLOWANCE_EXCEEDED',
              `the pool's USDC allowance is ${usdc(position.allowance)} after this operation's approval of ${usdc(amount)}: something else spent it`,
              at,
            );
          }
          call = { kind: 'approve', amount };
        } else {
          const cap = position.reserve.configuration.supplyCap;
          if (cap > 0n && position.totalSupplied + amount > cap * 10n ** 6n) {
            return {
              kind: 'requires_action',
              error: {
                code: 'LENDING_SUPPLY_CAP_EXCEEDED',
                message: `the market's supply cap of ${cap} USDC leaves room for ${usdc(
                  cap * 10n ** 6n > position.totalSupplied ? cap * 10n ** 6n - position.totalSupplied : 0n,
                )}, less than the ${usdc(amount)} to deposit; nothing was signed: send the same request again once there is room`,
              },
              at,
            };
          }
          call = { kind: 'supply', amount, onBehalfOf: account };
        }
      } else {
        if (position.suppliedBalance === 0n) {
          return fail('NOTHING_SUPPLIED', 'the wallet has nothing supplied to this market to withdraw', at);
        }
        call = { kind: 'withdraw', amount, to: account };
      }
      const encoded = encodeLendingCall(market, call);
      const [unsigned, pendingNonce] = await Promise.all([
        chain.buildCall(account, encoded),
        chain.pendingNonce(account),
      ]);
      // The step before (an approval with its confirmations, not final yet) holds the wallet: this one follows it,
      // takes its hold over, and signs with the next nonce.
      const previous =
        input.index > 0 ? deps.transactions.getAny(input.steps[input.index - 1]!.transactionId) : undefined;
      const follows = previous && previous.unresolved === 1 && previous.nonce !== null ? previous : undefined;
      const nonce = follows ? Math.max(pendingNonce, follows.nonce! + 1) : pendingNonce;
      const gasCost = BigInt(unsigned.gasLimit) * BigInt(unsigned.maxFeePerGas ?? unsigned.gasPrice ?? '0');
      if (position.nativeBalance < gasCost) {
        return fail(
          'INSUFFICIENT_NATIVE_BALANCE',
          `the wallet holds ${position.nativeBalance} wei, less than the ${gasCost} wei the ${call.kind} transaction may cost in gas`,
          at,
        );
      }
      await deps.host().spawn(deps.paymentActors, transactionId, {
        apiKeyId: input.apiKeyId,
        wallet: { id: wallet.id, projectId: wallet.projectId, address: wallet.address },
        chain,
        chainRef: String(input.chainId),
        intentKind: 'yield',
        signs: { kind: 'transfer', unsigned, pendingNonce: nonce },
        ...(follows ? { follows: follows.id } : {}),
        record: { to: encoded.to, value: null, tokenAddress: null },
        idempotency: null,
        prepared: {
          operation: input.action === 'deposit' ? 'yield_deposit' : 'yield_withdraw',
          facts: { asset: market.usdc.toLowerCase(), value: amount.toString() },
          // The operation's later steps go through on the approval its first one went through.
          ...(input.index > 0 ? { approvedUnder: input.steps[0]!.transactionId } : {}),
        },
      });
      return { kind: 'step', step: { kind: call.kind, transactionId }, at };
    } catch (err) {
      // A run that admitted the step and then failed (or raced an earlier run) finds it.
      const found = deps.transactions.getAny(transactionId);
      if (found) return { kind: 'step', step: { kind: kindOf(found, market, input.action), transactionId }, at };
      return refusal(err, at);
    }
  }

  function fail(code: string, message: string, at: number): PrepareOutcome {
    return { kind: 'fail', error: { code, message }, at };
  }

  /** A failed preparation: transient (the node, a hold of another payment) waits; a verdict ends or pauses it. */
  function refusal(err: unknown, at: number): PrepareOutcome {
    if (err instanceof ChainRpcError && !err.transient && err.code === 'EXECUTION_FAILED') {
      const revert = classifyLendingRevert(err.cause);
      if (revert?.code === 'SUPPLY_CAP_EXCEEDED') {
        return {
          kind: 'requires_action',
          error: {
            code: 'LENDING_SUPPLY_CAP_EXCEEDED',
            message:
              "the market's supply cap leaves no room for this deposit; nothing was signed: send the same request again once there is room",
          },
          at,
        };
      }
      return fail(
        'EXECUTION_FAILED',
        revert
          ? `the lending market refuses the transaction (${revert.code}: ${revert.reason}); nothing was signed`
          : `${err.message}; nothing was signed`,
        at,
      );
    }
    if (err instanceof CodedError && (err.transient || err.code === 'WALLET_TRANSACTION_UNRESOLVED')) {
      return { kind: 'wait', reason: `${err.code}: ${err.message}`, at };
    }
    if (err instanceof CodedError && err.httpStatus < 500) return fail(err.code, err.message, at);
    throw err;
  }

  /** Delivers the step's SIGN and reads what the signing policy decided. */
  async function signStep(input: SignStepInput): Promise<SignStepOutcome> {
    const signed = await signPreparedStep(deps.host(), deps.paymentActors, input.transactionId, {
      eventId: input.eventId,
      reference: input.reference,
      initiatorUserId: input.initiatorUserId,
    });
    const at = now();
    switch (signed.outcome) {
      case 'signing':
      case 'queued':
        return { kind: 'signing', at };
      case 'held': {
        const d = signed.refusal.details ?? {};
        return {
          kind: 'held',
          error: {
            code: signed.refusal.code,
            message: signed.refusal.message,
            transactionId: input.transactionId,
            ...(typeof d['reviewId'] === 'string' ? { reviewId: d['reviewId'] } : {}),
            ...(typeof d['caseId'] === 'string' ? { caseId: d['caseId'] } : {}),
          },
          at,
        };
      }
      case 'denied':
        return {
          kind: 'fail',
          error: { code: signed.refusal.code, message: signed.refusal.message, transactionId: input.transactionId },
          at,
        };
      case 'ended': {
        const f = signed.view.context.failure;
        return {
          kind: 'fail',
          error: {
            code: f?.code ?? 'SIGNING_FAILED',
            message: f?.message ?? 'the step ended without a signature',
            transactionId: input.transactionId,
          },
          at,
        };
      }
    }
  }

  /** Where a signed step stands: its record (which settles at finality), and for the final action its depth. */
  async function checkStep(input: CheckStepInput): Promise<CheckOutcome> {
    const at = now();
    const row = deps.transactions.getAny(input.transactionId);
    if (!row) return { kind: 'waiting', at };
    const failure = stepFailure(row);
    if (failure) return { kind: 'fail', error: failure, at };
    if (row.status === 'confirmed') {
      return {
        kind: 'done',
        at,
        ...(row.blockNumber && row.blockHash ? { blockNumber: row.blockNumber, blockHash: row.blockHash } : {}),
      };
    }
    if (row.hash === null) return { kind: 'waiting', at };
    const chain = deps.chain(input.chainKey);
    if (!chain?.inclusionDepth) return { kind: 'waiting', at };
    let depth: Awaited<ReturnType<NonNullable<PaymentChain['inclusionDepth']>>>;
    try {
      depth = await chain.inclusionDepth(row.hash);
    } catch (err) {
      if (err instanceof ChainRpcError && err.transient) return { kind: 'waiting', at };
      throw err;
    }
    if (depth === null || depth.confirmations < YIELD_CONFIRMATIONS) return { kind: 'waiting', at };
    if (!depth.success) {
      return {
        kind: 'fail',
        error: {
          code: 'EXECUTION_FAILED',
          message: `the transaction reverted on chain in block ${depth.blockNumber}`,
          transactionId: input.transactionId,
        },
        at,
      };
    }
    return { kind: 'done', at, blockNumber: depth.blockNumber, blockHash: depth.blockHash };
  }

  /** Ends the operation's unsigned step (if any) before it is signed: false when its SIGN was taken first. */
  async function cancelStep(input: CancelStepInput): Promise<{ cancelled: boolean }> {
    if (input.transactionId === null) return { cancelled: true };
    const result = await cancelPreparedStep(deps.host(), deps.paymentActors, input.transactionId, {
      eventId: `${input.operationId}:cancel`,
      reason: 'the yield operation was cancelled',
    });
    return { cancelled: result.cancelled };
  }

  return { prepare, signStep, checkStep, cancelStep };
}

/** A step's record that ended the operation: reverted, or failed (its code, NONCE_CONSUMED for a consumed nonce). */
function stepFailure(row: TransactionRow): YieldError | null {
  if (row.status === 'reverted') {
    return {
      code: 'EXECUTION_FAILED',
      message: `the transaction reverted on chain in block ${row.blockNumber}`,
      transactionId: row.id,
    };
  }
  // Past the monitor window a transaction may still land: its depth is still read.
  if (row.status !== 'failed' || row.failureStage === 'monitor_timeout') return null;
  return {
    code: row.failureCode ?? 'EXECUTION_FAILED',
    message: row.failureMessage ?? 'the transaction failed',
    transactionId: row.id,
  };
}
