/**
 * The `autoRetry` object of a transfer (spec: "Transfer", `autoRetry`), checked: the fee ceiling of the wallet's
 * family and the deadline. Pure: the caller gives the time. The rest of admission (an `Idempotency-Key`, a wallet
 * that pays its own gas, `broadcast` and `addressScreening` omitted or true) is the payment service's.
 */
import { ChainInputError } from './chain-input-error.ts';
import type { PaymentFamily } from './domain/payments.ts';
import { isPlainObject } from './is-plain-object.ts';

/** The spec's limit: a deadline at most this far ahead. */
export const MAX_AUTO_RETRY_MS = 24 * 60 * 60 * 1000;

/** A positive integer string without leading zeros. */
const POSITIVE = /^[1-9][0-9]*$/;
/** An ISO 8601 timestamp with a time zone (`Z` or an offset): a deadline without one would be read in a server's zone. */
const ISO_WITH_ZONE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;

const CEILING_FIELD: Readonly<Record<PaymentFamily, 'maxExecutionFeeWei' | 'maxExecutionFeeLamports'>> = {
  EVM: 'maxExecutionFeeWei',
  SOLANA: 'maxExecutionFeeLamports',
};
/** The largest ceiling each family can mean: a uint256 of wei; a u64 of lamports. */
const CEILING_MAX: Readonly<Record<PaymentFamily, bigint>> = { EVM: (1n << 256n) - 1n, SOLANA: (1n << 64n) - 1n };

/** A real day and time: JavaScript's parser rolls 2026-11-31 over to December 1 rather than refusing it. */
function isCalendarDate(iso: string): boolean {
  const [, y, m, d, hh, mm, ss] = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2}))?/
    .exec(iso)!
    .map(Number) as number[];
  return (
    !Number.isNaN(Date.parse(iso)) &&
    m! >= 1 &&
    m! <= 12 &&
    new Date(Date.UTC(y!, m! - 1, d!)).getUTCDate() === d &&
    hh! < 24 &&
    mm! < 60 &&
    (Number.isNaN(ss) || ss! < 60)
  );
}

export interface AutoRetryTerms {
  /** The fee ceiling per attempt, in wei (EVM) or lamports (Solana), as a decimal string. */
  ceiling: string;
  /** The deadline (epoch ms). */
  expiresAt: number;
}

/** Checks `autoRetry` for a wallet of `family` at `now`; throws ChainInputError naming the field (`autoRetry.…`). */
export function parseAutoRetryTerms(value: unknown, family: PaymentFamily, now: number): AutoRetryTerms {
  if (!isPlainObject(value)) throw new ChainInputError('autoRetry must be an object', 'autoRetry');
  const o = value as Record<string, unknown>;
  const field = CEILING_FIELD[family];
  const known = new Set([field, 'expiresAt']);
  for (const k of Object.keys(o)) {
    if (known.has(k)) continue;
    const other = Object.values(CEILING_FIELD).includes(k as never);
    throw new ChainInputError(
      other
        ? `autoRetry.${k} is for ${family === 'EVM' ? 'SOLANA' : 'EVM'} wallets; a ${family} wallet's ceiling is ${field}`
        : `autoRetry.${k.slice(0, 40)} is not an accepted field (${field}, expiresAt)`,
      `autoRetry.${k.slice(0, 40)}`,
    );
  }
  const ceiling = o[field];
  if (ceiling === undefined) throw new ChainInputError(`autoRetry.${field} is required`, `autoRetry.${field}`);
  if (
    typeof ceiling !== 'string' ||
    !POSITIVE.test(ceiling) ||
    ceiling.length > 78 ||
    BigInt(ceiling) > CEILING_MAX[family]
  ) {
    throw new ChainInputError(
      `autoRetry.${field} must be a positive integer string (${family === 'EVM' ? 'wei' : 'lamports'})`,
      `autoRetry.${field}`,
    );
  }
  const expires = o['expiresAt'];
  if (expires === undefined) throw new ChainInputError('autoRetry.expiresAt is required', 'autoRetry.expiresAt');
  if (typeof expires !== 'string' || !ISO_WITH_ZONE.test(expires) || !isCalendarDate(expires)) {
    throw new ChainInputError(
      'autoRetry.expiresAt must be an ISO 8601 timestamp with a time zone (for example 2026-01-01T12:00:00Z)',
      'autoRetry.expiresAt',
    );
  }
  const expiresAt = Date.parse(expires);
  if (expiresAt <= now) throw new ChainInputError('autoRetry.expiresAt is not in the future', 'autoRetry.expiresAt');
  if (expiresAt > now + MAX_AUTO_RETRY_MS) {
    throw new ChainInputError('autoRetry.expiresAt must be within the next 24 hours', 'autoRetry.expiresAt');
  }
  return { ceiling, expiresAt };
}
