import { CodedError } from '../../chains/domain/errors.ts';
import type { ChainFacts } from '../../chains/domain/policies.ts';
import { paymentFamilies } from '../../chains/payment-families.ts';
import type { ApiKeysRepo } from '../../store/api-keys-repo.ts';
import type { WalletsRepo } from '../../store/wallets-repo.ts';
import { decisionError, type SignaturePolicy } from '../signing/signature-policy.ts';
import type { PaymentPayload, PreparedStepTerms, SignReference, StepDecision } from './payment.machine.ts';

/** What a prepared step's SIGN is decided on: the step (its record, its exact payload) and how the request is named. */
export interface StepSignInput {
  /** The step's record: what the spend ledger counts its signature under. */
  transactionId: string;
  /** The API key that admitted the step (its policies decide); null: a payment no key admitted. */
  apiKeyId: string | null;
  walletId: string;
  walletAddress: string;
  operation: PreparedStepTerms['operation'];
  /** The chain as the policy sees it (the EVM chain id, the Solana network). */
  chainRef: string | null;
  /** What is signed, exactly as prepared: its facts are what the policy reads. */
  payload: PaymentPayload;
  /** What names the request for holds (the same on every SIGN of the step); absent: the step's own name. */
  reference?: SignReference;
  initiatorUserId?: string | null;
  /** A yield step's operation facts (PreparedStepTerms.facts). */
  yieldFacts?: { asset: string; value: string };
  /** A later step of a yield operation: its first step's record, whose approval covers it (PreparedStepTerms). */
  approvedUnder?: string;
}

/**
 * The facts of a prepared step: its transaction's, and for a yield step the operation's `chainId`, `asset` and `value`;
 * a yield step's signature moves nothing a spend window counts (POLICIES.md §1: never yield steps).
 */
function stepFacts(tx: ChainFacts, input: StepSignInput): ChainFacts {
  const yieldTerms = input.yieldFacts;
  if (!yieldTerms || input.chainRef === null) return tx;
  return {
    network: tx.network,
    facts: { ...tx.facts, chainId: input.chainRef, asset: yieldTerms.asset, value: yieldTerms.value },
    spend: { moved: [], complete: true },
  };
}

/**
 * A prepared step's SIGN at the one decision point (signature-policy.ts), synchronously, inside the transaction of the
 * step that applies it (`decideWithin`): the decision, its spend reservation (under the step's transaction id), its
 * log row and the case or review a hold opens are written with the step's new state, or not at all. The request is the
 * step as prepared: its operation (`yield_deposit`, `yield_withdraw`) and the facts its family reads from the exact
 * payload (calldata, value, chain).
 *
 * `allow` signs. A refusal keeps the step's code and body (decisionError): a denial (POLICY_DENIED, or an authority
 * that ended) fails the step; a review (POLICY_REVIEW_REQUIRED with its `reviewId` / `caseId`), an approval rule the
 * wallet cannot meet (FORBIDDEN), or a request the decision point refused to take (a reference bound to another body,
 * 409 CONFLICT) holds it: nothing is signed and the step stays prepared, to be signed as prepared by a later SIGN.
 */
export function createStepAuthority(deps: {
  apiKeys: Pick<ApiKeysRepo, 'get'>;
  wallets: Pick<WalletsRepo, 'getAny'>;
  /** Its `decideWithin`; a policy without one cannot decide inside a step, and every SIGN is held (fail closed). */
  policy: Pick<SignaturePolicy, 'decideWithin'>;
}): (input: StepSignInput) => StepDecision {
  const decideWithin = deps.policy.decideWithin?.bind(deps.policy);
  return (input) => {
    if (input.apiKeyId === null) return { effect: 'allow' };
    if (!decideWithin) {
      return {
        effect: 'hold',
        code: 'INTERNAL_ERROR',
        httpStatus: 500,
        message: 'the signing policy cannot decide inside a step; nothing was signed',
        details: {},
      };
    }
    const key = deps.apiKeys.get(input.apiKeyId);
    if (!key) {
      return {
        effect: 'deny',
        code: 'SIGNING_AUTHORITY_ENDED',
        httpStatus: 403,
        message: 'the API key that admitted this step no longer exists; nothing was signed',
        details: {},
      };
    }
    const wallet = deps.wallets.getAny(input.walletId);
    if (!wallet) {
      return {
        effect: 'deny',
        code: 'WALLET_NOT_FOUND',
        httpStatus: 404,
        message: 'the wallet of this step no longer exists; nothing was signed',
        details: {},
      };
    }
    const family = paymentFamilies[input.payload.family];
    const chainRef = input.chainRef;
    const reference = input.reference;
    try {
      const decision = decideWithin({
        principal: { keyId: key.id, projectId: key.projectId, environment: key.environment },
        wallet,
        operation: input.operation,
        rawSignature: false,
        chainId: chainRef,
        ...(chainRef !== null
          ? {
              facts: () => stepFacts(family.payloadFacts(input.payload as never, chainRef, input.walletAddress), input),
            }
          : {}),
        ...(reference
          ? {
              reference: {
                idempotencyKey: reference.idempotencyKey,
                route: reference.route,
                bodyHash: () => reference.bodyHash,
              },
            }
          : {}),
        spendRef: input.transactionId,
        ...(input.approvedUnder ? { continuation: true, approvedUnder: input.approvedUnder } : {}),
        ...(input.initiatorUserId !== undefined ? { initiatorUserId: input.initiatorUserId } : {}),
      });
      const error = decisionError(decision);
      if (!error) return { effect: 'allow' };
      return {
        effect: decision.effect === 'deny' ? 'deny' : 'hold',
        code: error.code,
        httpStatus: error.httpStatus,
        message: error.message,
        details: error.details ?? {},
      };
    } catch (err) {
      // A request the decision point refuses to take (its reference bound to another body): nothing was decided, and a
      // later SIGN may be; a transient failure, or anything unexpected, fails the step (retried by the host).
      if (!(err instanceof CodedError) || err.transient) throw err;
      return {
        effect: 'hold',
        code: err.code,
        httpStatus: err.httpStatus,
        message: err.message,
        details: err.details ?? {},
      };
    }
  };
}
