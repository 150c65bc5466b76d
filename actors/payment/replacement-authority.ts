import { paymentFamilies } from '../../chains/payment-families.ts';
import type { ApiKeysRepo } from '../../store/api-keys-repo.ts';
import type { WalletsRepo } from '../../store/wallets-repo.ts';
import type { SignaturePolicy } from '../signing/signature-policy.ts';
import type { ReplacementInput } from './payment.machine.ts';

/**
 * Before each auto-retry replacement is signed: does the authority that admitted the payment still stand? The spec's
 * "signing authority no longer valid" stops the retry: the API key rotated (or gone) since admission, the wallet
 * claimed by its user, or the signature policy (the one decision point every signature passes) no longer allowing
 * it. The policy decides the replacement as what it is, the same transfer again (its facts from the attempt's payload,
 * or a Solana rebuild's intent), counted in the spend ledger once under the payment's id. Answers null to go on, or the
 * stop reason.
 */
export function createReplacementAuthority(deps: {
  apiKeys: Pick<ApiKeysRepo, 'get'>;
  wallets: Pick<WalletsRepo, 'getAny'>;
  policy: SignaturePolicy;
}) {
  return async (input: ReplacementInput): Promise<string | null> => {
    const key = input.apiKeyId === null ? undefined : deps.apiKeys.get(input.apiKeyId);
    if (input.apiKeyId !== null && (!key || (key.rotatedAt !== null && Date.parse(key.rotatedAt) > input.admittedAt))) {
      return 'SIGNING_AUTHORITY_ENDED';
    }
    const wallet = deps.wallets.getAny(input.walletId);
    if (!wallet || wallet.claimedAt) return 'SIGNING_AUTHORITY_ENDED';
    if (!key) return null;
    const family = paymentFamilies[input.payload.family];
    const chainRef = input.chainId;
    const decision = await deps.policy.decide({
      principal: { keyId: key.id, projectId: key.projectId, environment: key.environment },
      wallet,
      operation: 'transfer',
      rawSignature: false,
      chainId: chainRef,
      ...(chainRef !== null
        ? {
            facts: () =>
              input.intent
                ? family.transferFacts(chainRef, input.intent)
                : family.payloadFacts(input.payload as never, chainRef, input.from),
          }
        : {}),
      ...(input.transactionId !== undefined ? { spendRef: input.transactionId } : {}),
      continuation: true,
    });
    if (decision.effect === 'deny') return 'POLICY_DENIED';
    if (decision.effect === 'review' || decision.effect === 'forbidden') return 'POLICY_REVIEW_REQUIRED';
    return null;
  };
}
