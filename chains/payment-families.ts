import type { PaymentFamily } from './domain/payments.ts';
import { evmPayments } from './evm/evm-payments.ts';
import type { PaymentFamilyAdapter, PaymentPayload } from './payment-family.ts';
import { solanaPayments } from './solana/solana-payments.ts';

/**
 * The payment adapter of each family. A new payment family is its folder, its name in the domain's
 * PAYMENT_FAMILIES and a line here.
 */
export const paymentFamilies: Readonly<Record<PaymentFamily, PaymentFamilyAdapter<PaymentPayload>>> = {
  EVM: evmPayments as PaymentFamilyAdapter<PaymentPayload>,
  SOLANA: solanaPayments as PaymentFamilyAdapter<PaymentPayload>,
};
