import { ChainInputError } from './chain-input-error.ts';
import type { PaymentFamily, TransferKind } from './domain/payments.ts';
import type { TransferIntent } from './payment-chain.ts';
import type { TransferRequestFields } from './payment-family.ts';

const POSITIVE_INTEGER = /^[0-9]+$/;

/**
 * The kind, token and amount of a transfer body, for a family whose token transfers are `tokenKind` (the contract or
 * mint a token transfer names is its `tokenNoun`): `kind` defaults to NATIVE, or to the token kind when a
 * `tokenAddress` is given. The addresses are the family's to check. Throws ChainInputError naming the body field.
 */
export function transferIntent(
  body: TransferRequestFields,
  family: PaymentFamily,
  tokenKind: Exclude<TransferKind, 'NATIVE'>,
  tokenNoun: string,
): TransferIntent {
  if (typeof body.value !== 'string' || !POSITIVE_INTEGER.test(body.value) || /^0+$/.test(body.value)) {
    throw new ChainInputError(
      'value must be a positive integer in the smallest unit (wei, lamports, token units)',
      'value',
    );
  }
  const kind = body.kind ?? (body.tokenAddress !== undefined ? tokenKind : 'NATIVE');
  if (kind !== 'NATIVE' && kind !== tokenKind) {
    throw new ChainInputError(`kind ${kind} does not apply to ${family} wallets (use NATIVE or ${tokenKind})`, 'kind');
  }
  if (kind === 'NATIVE' && body.tokenAddress !== undefined) {
    throw new ChainInputError(
      'tokenAddress applies to token transfers: omit it for NATIVE or set kind',
      'tokenAddress',
    );
  }
  if (kind !== 'NATIVE' && body.tokenAddress === undefined) {
    throw new ChainInputError(`a ${kind} transfer needs tokenAddress (the ${tokenNoun})`, 'tokenAddress');
  }
  return {
    kind,
    to: body.to,
    value: body.value,
    ...(body.tokenAddress !== undefined ? { tokenAddress: body.tokenAddress } : {}),
  };
}
