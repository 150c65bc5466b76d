/**
 * The one decision point every signature passes before the enclave is asked (DESIGN §7). Whoever is about to sign
 * (a signing route, a payment's admission) builds a `SignatureRequest`, asks the policy, and signs only on `allow`.
 * It lives beside the wallet signer, where the API and the actors both reach it. A policy engine plugs in here
 * (guardrails, raw-signature rules, approvals); until one is configured the policy allows.
 */

import { ServiceError } from '../../chains/domain/errors.ts';
import type { KeyEnvironment } from '../../chains/domain/projects.ts';
import type { WalletType } from '../../chains/domain/wallets.ts';
import { walletFamilies } from '../../chains/wallet-families.ts';
import type { SigningOperation } from '../../chains/wallet-family.ts';
import type { WalletRow } from '../../store/wallets-repo.ts';

/** The signing routes, and `transfer` (a payment the service builds, signs and broadcasts). */
export type SignatureOperation = SigningOperation | 'transfer';

/** Who asks for a signature: an API key of a project, in its environment. */
export interface Requester {
  keyId: string;
  projectId: string;
  environment: KeyEnvironment;
}

export interface SignatureRequest {
  principal: Requester;
  wallet: WalletRow;
  operation: SignatureOperation;
  /**
   * The spec's raw signatures: `sign-raw`, and `sign-message` on SOLANA, COSMOS, STELLAR and SUI wallets.
   * Policies deny these unless a rule allows `raw_signature`.
   */
  rawSignature: boolean;
  /** The chain the signature is for, when the request names one (EVM chain id, Solana network, ...). */
  chainId: string | null;
}

export type SignatureDecision =
  | { effect: 'allow' }
  | { effect: 'deny'; reason: string; policyId?: string; ruleId?: string }
  | { effect: 'review'; details: Record<string, unknown> };

export interface SignaturePolicy {
  decide(request: SignatureRequest): SignatureDecision | Promise<SignatureDecision>;
}

const ALLOW: SignatureDecision = { effect: 'allow' };

/** Today's policy: no policies exist yet, so every signature is allowed. */
export const allowAllSignatures: SignaturePolicy = { decide: () => ALLOW };

/** Whether `operation` on a wallet of `type` counts as a raw signature (spec: signing routes). */
export function isRawSignature(operation: SignatureOperation, type: WalletType): boolean {
  return operation === 'sign-raw' || (operation === 'sign-message' && walletFamilies[type].messageIsRawSignature);
}

/** Turns a decision into "go ahead" or the spec's 403 answer; nothing is signed after a throw. */
export function enforceDecision(decision: SignatureDecision): void {
  switch (decision.effect) {
    case 'allow':
      return;
    case 'deny':
      throw new ServiceError('POLICY_DENIED', 403, 'a signing policy denied this request; nothing was signed', {
        details: {
          deniedBy: [{ reason: decision.reason }],
          ...(decision.policyId ? { policyId: decision.policyId } : {}),
          ...(decision.ruleId ? { ruleId: decision.ruleId } : {}),
        },
      });
    case 'review':
      throw new ServiceError(
        'POLICY_REVIEW_REQUIRED',
        403,
        'this request needs an approval before it can be signed; nothing was signed',
        { details: decision.details },
      );
  }
}
