/**
 * What the single decision point (signature-policy.ts) reads and writes beyond the pure engine, as the store
 * implements it. Every method is synchronous: the decision point calls them inside the writer's transaction that
 * records the decision (POLICIES.md §4), so a decision, its spend reservations, its decision-log row, the case or
 * review it opens and (for a broadcast) the payment record commit together or not at all.
 */
import type { ActivePolicy } from './evaluate-policies.ts';
import type { ApprovalBlock } from './policy-document.ts';

/** A key's switch (`PUT /admin/v1/api-keys/{id}/permissions`). */
export interface KeyPermissions {
  /** Off: step 0, every request is allowed as before, policies are not read. */
  enabled: boolean;
  /** Whether approval flows (cases) are on for the key. */
  approvals: boolean;
}

/** The policies of a key, as the store keeps them (store/policies-repo.ts). */
export interface PolicySource {
  permissions(apiKeyId: string): KeyPermissions;
  /** The key's active guardrails, every wallet type and selector (the engine filters), each at its current version. */
  activeGuardrails(apiKeyId: string): ActivePolicy[];
}

/** A request a require_approval rule holds (POLICIES.md §2 step 7). */
export interface HoldRequest {
  apiKeyId: string;
  projectId: string;
  walletId: string;
  /** The request's reference: `key:<Idempotency-Key>` when sent, else `body:<walletId>:<route>:<sha256>`. */
  reference: string;
  /** SHA-256 (hex) of the canonical request body. */
  bodyHash: string;
  policyId: string;
  policyVersion: number;
  ruleId: string;
  /** Present: the hold is an approval case; absent: a review. */
  approval?: ApprovalBlock;
  /** `X-Initiator-User-Id`, when sent. */
  initiatorUserId: string | null;
  /** ms since the epoch. */
  at: number;
}

/** Where a held request stands. */
export type HoldOutcome =
  /** A completed unused case or an approved review, now marked used or consumed in the same transaction. */
  | { kind: 'proceed'; caseId?: string; reviewId?: string }
  /** A rejected case or review: 403 POLICY_DENIED, reason `review-rejected`. */
  | { kind: 'rejected'; caseId?: string; reviewId?: string }
  /** 403 POLICY_REVIEW_REQUIRED with the case or review (opened now, or the reference's own). */
  | { kind: 'required'; caseId?: string; reviewId?: string; status: string; expiresAt: string }
  /** An approval rule on a wallet bound to no authorization scope: 403 FORBIDDEN. */
  | { kind: 'forbidden' };

/** Cases and reviews (store/approvals-repo.ts). */
export interface HoldResolver {
  /** Step 1: throws 409 CONFLICT when the reference is bound to a case or review of another body. */
  checkReference(apiKeyId: string, reference: string, bodyHash: string): void;
  /** Step 7: opens or reuses the reference's case or review and says where it stands; writes its rows. */
  resolve(request: HoldRequest): HoldOutcome;
}
