/**
 * What the single decision point (signature-policy.ts) reads and writes beyond the pure engine, as the store
 * implements it. Every method is synchronous: the decision point calls them inside the writer's transaction that
 * records the decision (POLICIES.md §4), so a decision, its spend reservations, its decision-log row, the case or
 * review it opens and (for a broadcast) the payment record commit together or not at all.
 */
import type { HoldOutcome, HoldRequest } from '../../../chains/domain/approvals.ts';
import type { ActivePolicy } from './evaluate-policies.ts';

export type { HoldOutcome, HoldRequest };

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

/** Cases and reviews (store/approvals-repo.ts). */
export interface HoldResolver {
  /** Step 1: throws 409 CONFLICT when the reference is bound to a case or review of another body. */
  checkReference(apiKeyId: string, reference: string, bodyHash: string): void;
  /** Step 7: opens or reuses the reference's case or review and says where it stands; writes its rows. */
  resolve(request: HoldRequest): HoldOutcome;
  /**
   * Undoes the use `resolve` made at `usedAt` of an approved case or review (a `proceed`), when the signature it let
   * through failed and none exists: the approval is still there for the next identical request. Absent: a failed
   * signature uses its approval up.
   */
  restore?(apiKeyId: string, hold: { caseId?: string; reviewId?: string }, usedAt: number): void;
}
