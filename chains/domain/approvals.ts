/**
 * The approvals vocabulary of signing policies (`/v1/permissions-v2`, POLICIES.md §2 step 7): the people of a project,
 * their authorization scopes and roles, approval cases (a hold whose rule has an `approval` block) and reviews (a hold
 * without one), with their statuses and lifetimes. Part of the domain module (chains/domain/), which imports nothing
 * but itself: the store, the TypeBox schemas and the services take these lists from here.
 */

/**
 * An approval case's status as answered. `expired` is never stored: a `pending` case past its `expiresAt` reads as
 * `expired`. `completed` stays `completed` when used (`usedAt`) or older than its lifetime; `rejected` stays
 * `rejected`.
 */
export const APPROVAL_CASE_STATUSES = [
  'pending',
  'completed',
  'rejected',
  'expired',
  'invalidated',
  'cancelled',
] as const;
export type ApprovalCaseStatus = (typeof APPROVAL_CASE_STATUSES)[number];

/** What a case's row stores (everything but `expired`, which is computed on read). */
export const STORED_CASE_STATUSES = ['pending', 'completed', 'rejected', 'invalidated', 'cancelled'] as const;
export type StoredCaseStatus = (typeof STORED_CASE_STATUSES)[number];

/**
 * A review's status as answered. `expired` is never stored: a `pending` review past its lifetime, or an `approved`
 * one not used within APPROVED_REVIEW_VALIDITY_MS of its approval, reads as `expired`.
 */
export const REVIEW_STATUSES = ['pending', 'approved', 'rejected', 'expired', 'consumed'] as const;
export type ReviewStatus = (typeof REVIEW_STATUSES)[number];

export const STORED_REVIEW_STATUSES = ['pending', 'approved', 'rejected', 'consumed'] as const;
export type StoredReviewStatus = (typeof STORED_REVIEW_STATUSES)[number];

/** A person's decision on an approval case (`POST /admin/v1/approval-cases/{caseId}/decisions`). */
export const APPROVAL_DECISIONS = ['approve', 'reject'] as const;
export type ApprovalDecision = (typeof APPROVAL_DECISIONS)[number];

/** A stage of a case as answered: done, the one deciding now, one after it, or the one a rejection ended. */
export const CASE_STAGE_STATUSES = ['completed', 'pending', 'waiting', 'rejected'] as const;
export type CaseStageStatus = (typeof CASE_STAGE_STATUSES)[number];

/** An approval case's lifetime (APPROVAL_CASE_TTL_MS): the spec's seven days. */
export const DEFAULT_APPROVAL_CASE_TTL_MS = 7 * 24 * 60 * 60 * 1000;

/** A review's lifetime (REVIEW_TTL_MS): 24 hours (ours; the spec names none). */
export const DEFAULT_REVIEW_TTL_MS = 24 * 60 * 60 * 1000;

/** How long an approved review lets its request through (five minutes, as Para's reviews). */
export const APPROVED_REVIEW_VALIDITY_MS = 5 * 60 * 1000;

/** A role name (as an approval stage names it): a letter or digit, then letters, digits and `_ . - :`, ≤ 64. */
export const ROLE_PATTERN = '^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$';

/** Roles one user may hold in one scope. */
export const MAX_ROLES_PER_ASSIGNMENT = 32;

/** Why a decision was refused (the `reason` of 403 APPROVAL_DECISION_NOT_ALLOWED and INITIATOR_CANNOT_REVIEW). */
export const DECISION_REFUSALS = [
  /** The user opened the case (`X-Initiator-User-Id`): 403 INITIATOR_CANNOT_REVIEW. */
  'initiator',
  /** The user does not hold the current stage's role in the case's scope. */
  'not-an-approver',
  /** The user already decided on this case (once per case, whatever the stage). */
  'already-decided',
  /** The case is no longer pending (completed, rejected, expired, invalidated or cancelled). */
  'case-not-pending',
  /** The user is not one of the case's project. */
  'user-of-another-project',
] as const;
export type DecisionRefusal = (typeof DECISION_REFUSALS)[number];

/** The message of every refused decision (spec: errors). */
export const DECISION_NOT_ALLOWED_MESSAGE = 'approval decision is not allowed';

/** One stage of an approval rule: `threshold` holders of `role` approve. */
export interface ApprovalStage {
  role: string;
  threshold: number;
}

/**
 * A request a require_approval rule holds (POLICIES.md §2 step 7), as the decision point hands it to the approvals
 * store: here so that both sides (actors/signing/, store/) share one definition.
 */
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
  approval?: { stages: ApprovalStage[] };
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
