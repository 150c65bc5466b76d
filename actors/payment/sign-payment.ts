import { ChainInputError } from '../../chains/chain-input-error.ts';
import { ServiceError } from '../../chains/domain/errors.ts';
import { paymentFamilies } from '../../chains/payment-families.ts';
import type { PaymentPayload, PaymentSignatureRequest, SignedPayment } from '../../chains/payment-family.ts';
import type { WalletRow } from '../../store/wallets-repo.ts';
import type { WalletSigner } from '../signing/wallet-signer.ts';

/**
 * Signs a payment's payload with the wallet's key: its family says what the key signs, then attaches the signature,
 * checks whose key made it and hashes the result. Errors carry the spec's failure stages: SIGNATURE_APPLY_FAILED
 * (`signature_apply`), SIGNER_MISMATCH (`signer_verify`); anything else failed the signing itself (`mpc_sign`).
 * `effectKey`, the payment actor's sign effect's durable key: the enclave signs at most one message under it
 * (wallet-signer.ts `keyOf`). A sign-only transfer has none: no actor, nothing stored, signed as the REST routes sign.
 */
export async function signPaymentPayload(
  signer: Pick<WalletSigner, 'keyOf'>,
  wallet: WalletRow,
  payload: PaymentPayload,
  effectKey?: string,
): Promise<SignedPayment> {
  let request: PaymentSignatureRequest;
  try {
    request = paymentFamilies[payload.family].signatureRequest(payload, wallet.address!);
  } catch (err) {
    // The payload was checked when it was admitted: one that no longer reads is a signing failure, not bad input.
    if (err instanceof ChainInputError) {
      throw new ServiceError('SIGNING_FAILED', 500, `the payment cannot be prepared for signing: ${err.message}`);
    }
    throw err;
  }
  const key = effectKey === undefined ? signer.keyOf(wallet) : signer.keyOf(wallet, { effectKey });
  return request.curve === 'secp256k1'
    ? request.attach(await key.signSecp256k1(request.message))
    : request.attach(await key.signEd25519(request.message));
}

/**
 * The payment actor's sign effect: the wallet, read again and checked (a claim committed since admission refuses
 * it), signs the payload under the effect's key (`<actorId>:<step>:<n>`), so the enclave itself refuses a second,
 * different signature for this step (ALREADY_SIGNED, reported as SIGNING_INTERRUPTED).
 */
export function createPaymentSigning(signer: Pick<WalletSigner, 'walletThatSigns' | 'keyOf'>) {
  return (
    input: { projectId: string; walletId: string; payload: PaymentPayload },
    effect: { effectKey: string },
  ): Promise<SignedPayment> =>
    signPaymentPayload(
      signer,
      signer.walletThatSigns(input.projectId, input.walletId),
      input.payload,
      effect.effectKey,
    );
}
