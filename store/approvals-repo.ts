import { randomUUID } from 'node:crypto';
import type Database from 'better-sqlite3';
import {
  APPROVED_REVIEW_VALIDITY_MS,
  type ApprovalCaseStatus,
  type ApprovalDecision,
  type ApprovalStage,
  type CaseStageStatus,
  DECISION_NOT_ALLOWED_MESSAGE,
  DEFAULT_APPROVAL_CASE_TTL_MS,
  DEFAULT_REVIEW_TTL_MS,
  type DecisionRefusal,
  type HoldOutcome,
  type HoldRequest,
  type ReviewStatus,
  type StoredCaseStatus,
  type StoredReviewStatus,
} from '../chains/domain/approvals.ts';
import { ServiceError } from '../chains/domain/errors.ts';

/** How long cases and reviews live (APPROVAL_CASE_TTL_MS, REVIEW_TTL_MS). */
export interface ApprovalLifetimes {
  caseTtlMs: number;
  reviewTtlMs: number;
}

export const DEFAULT_APPROVAL_LIFETIMES: ApprovalLifetimes = {
  caseTtlMs: DEFAULT_APPROVAL_CASE_TTL_MS,
  reviewTtlMs: DEFAULT_REVIEW_TTL_MS,
};

/** An approval stage as a rule's `approval` block names it. */
/** A stage of an approval rule (the domain's ApprovalStage). */
export type StageSpec = ApprovalStage;

/** A held request, as the decision point hands it over. */
export type HeldRequest = HoldRequest;

/** Where a held request stands. */
export type HeldOutcome = HoldOutcome;

export interface UserRow {
  id: string;
  projectId: string;
  name: string;
  createdAt: string;
  seq: number;
}

export interface ScopeRow {
  id: string;
  projectId: string;
  name: string;
  createdAt: string;
  seq: number;
}

export interface AssignmentRow {
  scopeId: string;
  userId: string;
  roles: string[];
  revision: number;
  updatedAt: string;
}

export interface DecisionRow {
  userId: string;
  stage: number;
  decision: ApprovalDecision;
  decidedAt: number;
}

/** A case as stored (times in ms), with its decisions in the order they were made. */
export interface CaseRecord {
  id: string;
  projectId: string;
  apiKeyId: string;
  walletId: string;
  scopeId: string;
  policyId: string;
  policyVersion: number;
  ruleId: string;
  reference: string;
  bodyHash: string;
  storedStatus: StoredCaseStatus;
  stages: StageSpec[];
  initiatorUserId: string | null;
  createdAt: number;
  expiresAt: number;
  endedAt: number | null;
  usedAt: number | null;
  seq: number;
  decisions: DecisionRow[];
}

/** A stage of a case as answered: its role and threshold, where it stands, and who decided in it. */
export interface StageView {
  role: string;
  threshold: number;
  status: CaseStageStatus;
  approvals: number;
  decisions: Array<{ userId: string; decision: ApprovalDecision; decidedAt: string }>;
}

export interface ReviewRecord {
  id: string;
  projectId: string;
  apiKeyId: string;
  walletId: string;
  policyId: string;
  policyVersion: number;
  ruleId: string;
  reference: string;
  bodyHash: string;
  storedStatus: StoredReviewStatus;
  createdAt: number;
  expiresAt: number;
  decidedAt: number | null;
  consumedAt: number | null;
  seq: number;
}

type RawCase = Omit<CaseRecord, 'stages' | 'decisions' | 'storedStatus'> & { status: StoredCaseStatus; stages: string };
type RawReview = Omit<ReviewRecord, 'storedStatus'> & { status: StoredReviewStatus };

const CASE_COLUMNS = `id, project_id as projectId, api_key_id as apiKeyId, wallet_id as walletId, scope_id as scopeId,
  policy_id as policyId, policy_version as policyVersion, rule_id as ruleId, reference, body_hash as bodyHash, status,
  stages, initiator_user_id as initiatorUserId, created_at as createdAt, expires_at as expiresAt, ended_at as endedAt,
  used_at as usedAt, seq`;

const REVIEW_COLUMNS = `id, project_id as projectId, api_key_id as apiKeyId, wallet_id as walletId, policy_id as policyId,
  policy_version as policyVersion, rule_id as ruleId, reference, body_hash as bodyHash, status, created_at as createdAt,
  expires_at as expiresAt, decided_at as decidedAt, consumed_at as consumedAt, seq`;

/** The status a case reads as at `at`: a pending case past its lifetime is `expired`. */
export function caseStatusAt(c: Pick<CaseRecord, 'storedStatus' | 'expiresAt'>, at: number): ApprovalCaseStatus {
  return c.storedStatus === 'pending' && at >= c.expiresAt ? 'expired' : c.storedStatus;
}

/** When an approved review stops letting its request through. */
const approvalEndsAt = (r: Pick<ReviewRecord, 'decidedAt'>) => (r.decidedAt ?? 0) + APPROVED_REVIEW_VALIDITY_MS;

/**
 * The status a review reads as at `at`: a pending review past its lifetime, or an approved one not used within five
 * minutes of its approval, is `expired`.
 */
export function reviewStatusAt(r: ReviewRecord, at: number): ReviewStatus {
  if (r.storedStatus === 'pending' && at >= r.expiresAt) return 'expired';
  if (r.storedStatus === 'approved' && at >= approvalEndsAt(r)) return 'expired';
  return r.storedStatus;
}

/**
 * When a review's current status lapses: a pending (or rejected) review's lifetime, an approved (or consumed) one's
 * five minutes.
 */
export function reviewExpiresAt(r: ReviewRecord): number {
  return r.storedStatus === 'approved' || r.storedStatus === 'consumed' ? approvalEndsAt(r) : r.expiresAt;
}

/** The stage deciding now: the first whose approvals are under its threshold (`stages.length` when all are met). */
function currentStage(stages: StageSpec[], decisions: DecisionRow[]): number {
  for (let i = 0; i < stages.length; i++) {
    const approvals = decisions.filter((d) => d.stage === i && d.decision === 'approve').length;
    if (approvals < stages[i]!.threshold) return i;
  }
  return stages.length;
}

/** Each stage of a case, where it stands and who decided in it. */
export function stageViews(c: CaseRecord): StageView[] {
  const current = currentStage(c.stages, c.decisions);
  const rejectedAt = c.decisions.find((d) => d.decision === 'reject')?.stage;
  return c.stages.map((s, i) => {
    const decisions = c.decisions.filter((d) => d.stage === i);
    return {
      role: s.role,
      threshold: s.threshold,
      status: rejectedAt === i ? 'rejected' : i < current ? 'completed' : i === current ? 'pending' : 'waiting',
      approvals: decisions.filter((d) => d.decision === 'approve').length,
      decisions: decisions.map((d) => ({
        userId: d.userId,
        decision: d.decision,
        decidedAt: new Date(d.decidedAt).toISOString(),
      })),
    };
  });
}

const iso = (ms: number) => new Date(ms).toISOString();

function refused(reason: DecisionRefusal): ServiceError {
  return new ServiceError(
    reason === 'initiator' ? 'INITIATOR_CANNOT_REVIEW' : 'APPROVAL_DECISION_NOT_ALLOWED',
    403,
    DECISION_NOT_ALLOWED_MESSAGE,
    { details: { reason } },
  );
}

/**
 * People, authorization scopes, role assignments, wallet bindings, approval cases and reviews (POLICIES.md §2 step 7).
 * Every method is synchronous; the ones that write run inside a writer transaction: `resolve` and `checkReference`
 * inside the decision point's (they are its `HoldResolver`), the rest inside the service's `writer.write`. Statuses
 * that only time changes (`expired`) are computed on read from the stored times, so no timer is needed.
 */
export function createApprovalsRepo(
  sqlite: Database.Database,
  lifetimes: ApprovalLifetimes = DEFAULT_APPROVAL_LIFETIMES,
  opts: { now?: () => number } = {},
) {
  const now = opts.now ?? Date.now;
  const s = {
    insertUser: sqlite.prepare(
      `insert into project_users (id, project_id, name, created_at, seq)
       values (@id, @projectId, @name, @createdAt, (select coalesce(max(seq), 0) + 1 from project_users))
       returning id, project_id as projectId, name, created_at as createdAt, seq`,
    ),
    getUser: sqlite.prepare(
      'select id, project_id as projectId, name, created_at as createdAt, seq from project_users where id = ?',
    ),
    listUsers: sqlite.prepare(
      `select id, project_id as projectId, name, created_at as createdAt, seq from project_users
       where project_id = @projectId and seq > @after order by seq limit @limit`,
    ),
    insertScope: sqlite.prepare(
      `insert into authorization_scopes (id, project_id, name, created_at, seq)
       values (@id, @projectId, @name, @createdAt, (select coalesce(max(seq), 0) + 1 from authorization_scopes))
       returning id, project_id as projectId, name, created_at as createdAt, seq`,
    ),
    getScope: sqlite.prepare(
      'select id, project_id as projectId, name, created_at as createdAt, seq from authorization_scopes where id = ?',
    ),
    listScopes: sqlite.prepare(
      `select id, project_id as projectId, name, created_at as createdAt, seq from authorization_scopes
       where project_id = @projectId and seq > @after order by seq limit @limit`,
    ),
    assignments: sqlite.prepare(
      `select scope_id as scopeId, user_id as userId, roles, revision, updated_at as updatedAt
       from scope_assignments where scope_id = ? order by user_id`,
    ),
    assignment: sqlite.prepare(
      `select scope_id as scopeId, user_id as userId, roles, revision, updated_at as updatedAt
       from scope_assignments where scope_id = ? and user_id = ?`,
    ),
    upsertAssignment: sqlite.prepare(
      `insert into scope_assignments (scope_id, user_id, roles, revision, updated_at)
       values (@scopeId, @userId, @roles, 1, @at)
       on conflict (scope_id, user_id) do update set roles = @roles, revision = revision + 1, updated_at = @at`,
    ),
    binding: sqlite.prepare('select scope_id as scopeId from wallet_scope_bindings where wallet_id = ?'),
    bind: sqlite.prepare(
      `insert into wallet_scope_bindings (wallet_id, scope_id, updated_at) values (@walletId, @scopeId, @at)
       on conflict (wallet_id) do update set scope_id = @scopeId, updated_at = @at`,
    ),
    unbind: sqlite.prepare('delete from wallet_scope_bindings where wallet_id = ?'),
    insertCase: sqlite.prepare(
      `insert into approval_cases (id, project_id, api_key_id, wallet_id, scope_id, policy_id, policy_version, rule_id,
         reference, body_hash, status, stages, initiator_user_id, created_at, expires_at, seq)
       values (@id, @projectId, @apiKeyId, @walletId, @scopeId, @policyId, @policyVersion, @ruleId, @reference,
         @bodyHash, 'pending', @stages, @initiatorUserId, @createdAt, @expiresAt,
         (select coalesce(max(seq), 0) + 1 from approval_cases))`,
    ),
    caseById: sqlite.prepare(`select ${CASE_COLUMNS} from approval_cases where id = ?`),
    caseByReference: sqlite.prepare(
      `select ${CASE_COLUMNS} from approval_cases where api_key_id = ? and reference = ?`,
    ),
    decisions: sqlite.prepare(
      `select user_id as userId, stage, decision, decided_at as decidedAt from approval_decisions
       where case_id = ? order by decided_at, rowid`,
    ),
    insertDecision: sqlite.prepare(
      `insert into approval_decisions (case_id, user_id, stage, decision, decided_at)
       values (@caseId, @userId, @stage, @decision, @at)`,
    ),
    endCase: sqlite.prepare(
      `update approval_cases set status = @status, ended_at = @at where id = @id and status = 'pending'`,
    ),
    useCase: sqlite.prepare('update approval_cases set used_at = @at where id = @id and used_at is null'),
    listCasesOfKey: sqlite.prepare(
      `select ${CASE_COLUMNS} from approval_cases
       where api_key_id = @owner and (@walletId is null or wallet_id = @walletId)
         and (@status is null
              or (case when status = 'pending' and expires_at <= @at then 'expired' else status end) = @status)
         and seq < @before
       order by seq desc limit @limit`,
    ),
    listCasesOfProject: sqlite.prepare(
      `select ${CASE_COLUMNS} from approval_cases
       where project_id = @owner and (@walletId is null or wallet_id = @walletId)
         and (@status is null
              or (case when status = 'pending' and expires_at <= @at then 'expired' else status end) = @status)
         and seq < @before
       order by seq desc limit @limit`,
    ),
    pendingOfPolicy: sqlite.prepare(
      `select id from approval_cases where policy_id = ? and status = 'pending' and expires_at > ? order by seq`,
    ),
    pendingOfScope: sqlite.prepare(
      `select ${CASE_COLUMNS} from approval_cases where scope_id = ? and status = 'pending' and expires_at > ?
       order by seq`,
    ),
    insertReview: sqlite.prepare(
      `insert into reviews (id, project_id, api_key_id, wallet_id, policy_id, policy_version, rule_id, reference,
         body_hash, status, created_at, expires_at, seq)
       values (@id, @projectId, @apiKeyId, @walletId, @policyId, @policyVersion, @ruleId, @reference, @bodyHash,
         'pending', @createdAt, @expiresAt, (select coalesce(max(seq), 0) + 1 from reviews))`,
    ),
    reviewById: sqlite.prepare(`select ${REVIEW_COLUMNS} from reviews where id = ?`),
    latestReview: sqlite.prepare(
      `select ${REVIEW_COLUMNS} from reviews where api_key_id = ? and reference = ? order by seq desc limit 1`,
    ),
    anyHold: sqlite.prepare(
      `select 1 from approval_cases where api_key_id = ?
       union all select 1 from reviews where api_key_id = ? limit 1`,
    ),
    otherBodyReview: sqlite.prepare(
      'select 1 from reviews where api_key_id = ? and reference = ? and body_hash != ? limit 1',
    ),
    decideReview: sqlite.prepare(
      `update reviews set status = @status, decided_at = @at where id = @id and status = 'pending'`,
    ),
    unuseCase: sqlite.prepare(
      'update approval_cases set used_at = null where id = ? and api_key_id = ? and used_at = ?',
    ),
    unconsumeReview: sqlite.prepare(
      `update reviews set status = 'approved', consumed_at = null
       where id = ? and api_key_id = ? and status = 'consumed' and consumed_at = ?`,
    ),
    consumeReview: sqlite.prepare(
      `update reviews set status = 'consumed', consumed_at = @at where id = @id and status = 'approved'`,
    ),
  };

  const toAssignment = (r: Omit<AssignmentRow, 'roles'> & { roles: string }): AssignmentRow => ({
    ...r,
    roles: JSON.parse(r.roles) as string[],
  });

  function toCase(r: RawCase | undefined): CaseRecord | undefined {
    if (!r) return undefined;
    const { status, stages, ...rest } = r;
    return {
      ...rest,
      storedStatus: status,
      stages: JSON.parse(stages) as StageSpec[],
      decisions: s.decisions.all(r.id) as DecisionRow[],
    };
  }
  const toReview = (r: RawReview | undefined): ReviewRecord | undefined => {
    if (!r) return undefined;
    const { status, ...rest } = r;
    return { ...rest, storedStatus: status };
  };

  const getUser = (id: string) => s.getUser.get(id) as UserRow | undefined;
  const getCase = (id: string) => toCase(s.caseById.get(id) as RawCase | undefined);
  const getReview = (id: string) => toReview(s.reviewById.get(id) as RawReview | undefined);
  function getAssignment(scopeId: string, userId: string): AssignmentRow | undefined {
    const r = s.assignment.get(scopeId, userId) as (Omit<AssignmentRow, 'roles'> & { roles: string }) | undefined;
    return r && toAssignment(r);
  }

  /** Roles by user in a scope. */
  function rolesOf(scopeId: string): Map<string, string[]> {
    return new Map(
      (s.assignments.all(scopeId) as Array<{ userId: string; roles: string }>).map((a) => [
        a.userId,
        JSON.parse(a.roles) as string[],
      ]),
    );
  }

  /**
   * Whether a pending case can still complete with these roles: every stage from the current one on has enough
   * holders of its role who are not the initiator and have not decided on the case yet (each stage checked alone).
   */
  function completable(c: CaseRecord, roles: Map<string, string[]>): boolean {
    const decided = new Set(c.decisions.map((d) => d.userId));
    const current = currentStage(c.stages, c.decisions);
    for (let i = current; i < c.stages.length; i++) {
      const stage = c.stages[i]!;
      const done = c.decisions.filter((d) => d.stage === i && d.decision === 'approve').length;
      let available = 0;
      for (const [userId, held] of roles) {
        if (userId !== c.initiatorUserId && !decided.has(userId) && held.includes(stage.role)) available += 1;
      }
      if (available < stage.threshold - done) return false;
    }
    return true;
  }

  /**
   * Whether a key has ever had a case or a review, read once per key and then kept: this repo is the only writer of
   * both (inside the API process), and marks a key before its first row is inserted. A mark whose transaction rolls
   * back only costs that key its queries.
   */
  const keysWithHolds = new Map<string, boolean>();
  function hasHolds(apiKeyId: string): boolean {
    let known = keysWithHolds.get(apiKeyId);
    if (known === undefined) {
      known = s.anyHold.get(apiKeyId, apiKeyId) !== undefined;
      keysWithHolds.set(apiKeyId, known);
    }
    return known;
  }

  function openCase(req: HeldRequest, scopeId: string, stages: StageSpec[]): HeldOutcome {
    keysWithHolds.set(req.apiKeyId, true);
    const id = randomUUID();
    const expiresAt = req.at + lifetimes.caseTtlMs;
    s.insertCase.run({
      id,
      projectId: req.projectId,
      apiKeyId: req.apiKeyId,
      walletId: req.walletId,
      scopeId,
      policyId: req.policyId,
      policyVersion: req.policyVersion,
      ruleId: req.ruleId,
      reference: req.reference,
      bodyHash: req.bodyHash,
      stages: JSON.stringify(stages.map((st) => ({ role: st.role, threshold: st.threshold }))),
      initiatorUserId: req.initiatorUserId,
      createdAt: req.at,
      expiresAt,
    });
    return { kind: 'required', caseId: id, status: 'pending', expiresAt: iso(expiresAt) };
  }

  function openReview(req: HeldRequest): HeldOutcome {
    keysWithHolds.set(req.apiKeyId, true);
    const id = randomUUID();
    const expiresAt = req.at + lifetimes.reviewTtlMs;
    s.insertReview.run({
      id,
      projectId: req.projectId,
      apiKeyId: req.apiKeyId,
      walletId: req.walletId,
      policyId: req.policyId,
      policyVersion: req.policyVersion,
      ruleId: req.ruleId,
      reference: req.reference,
      bodyHash: req.bodyHash,
      createdAt: req.at,
      expiresAt,
    });
    return { kind: 'required', reviewId: id, status: 'pending', expiresAt: iso(expiresAt) };
  }

  /** Step 7, case path (POLICIES.md §2; spec: Approval case). */
  function resolveCase(req: HeldRequest, stages: StageSpec[]): HeldOutcome {
    // Spec: approval requirements need the wallet bound to an authorization scope.
    const binding = s.binding.get(req.walletId) as { scopeId: string } | undefined;
    if (!binding) return { kind: 'forbidden' };
    const c = toCase(s.caseByReference.get(req.apiKeyId, req.reference) as RawCase | undefined);
    if (!c) return openCase(req, binding.scopeId, stages);
    const status = caseStatusAt(c, req.at);
    const young = req.at < c.expiresAt;
    if (status === 'completed' && c.usedAt === null && young) {
      s.useCase.run({ id: c.id, at: req.at });
      return { kind: 'proceed', caseId: c.id };
    }
    if (status === 'rejected' && young) return { kind: 'rejected', caseId: c.id };
    // Pending; or expired, invalidated, cancelled, completed and used or older, rejected and older: the same case.
    return { kind: 'required', caseId: c.id, status, expiresAt: iso(c.expiresAt) };
  }

  /** Step 7, review path. */
  function resolveReview(req: HeldRequest): HeldOutcome {
    const r = toReview(s.latestReview.get(req.apiKeyId, req.reference) as RawReview | undefined);
    if (r) {
      const status = reviewStatusAt(r, req.at);
      if (status === 'pending') {
        return { kind: 'required', reviewId: r.id, status, expiresAt: iso(r.expiresAt) };
      }
      if (status === 'approved') {
        s.consumeReview.run({ id: r.id, at: req.at });
        return { kind: 'proceed', reviewId: r.id };
      }
      // A rejection stands for the review's lifetime, as a case's does (spec: until its lifetime ends).
      if (status === 'rejected' && req.at < r.expiresAt) return { kind: 'rejected', reviewId: r.id };
    }
    // None yet, or the last one expired, was consumed, or its rejection has lapsed: a new review.
    return openReview(req);
  }

  return {
    lifetimes,

    // --- HoldResolver (actors/signing/policy/policy-ports.ts), inside the decision point's transaction

    /** Step 1: 409 CONFLICT when the reference is bound to a case or review of another body. */
    checkReference(apiKeyId: string, reference: string, bodyHash: string): void {
      // Most keys never have a hold: their references are bound to nothing, and cost no query.
      if (!hasHolds(apiKeyId)) return;
      const c = s.caseByReference.get(apiKeyId, reference) as RawCase | undefined;
      const other = (c && c.bodyHash !== bodyHash) || s.otherBodyReview.get(apiKeyId, reference, bodyHash);
      if (other) {
        throw new ServiceError(
          'CONFLICT',
          409,
          'this Idempotency-Key is bound to an approval case or review of another request: use a new key for a new transaction',
        );
      }
    },

    /** Step 7: opens or reuses the reference's case or review and says where it stands; writes its rows. */
    resolve(req: HeldRequest): HeldOutcome {
      return req.approval ? resolveCase(req, req.approval.stages) : resolveReview(req);
    },

    /**
     * Inside a writer transaction: the signature an approved case or review let through at `usedAt` failed and none
     * exists, so the approval is not used up (only that use is undone: a later one is left as it is).
     */
    restore(apiKeyId: string, hold: { caseId?: string; reviewId?: string }, usedAt: number): void {
      if (hold.caseId !== undefined) s.unuseCase.run(hold.caseId, apiKeyId, usedAt);
      if (hold.reviewId !== undefined) s.unconsumeReview.run(hold.reviewId, apiKeyId, usedAt);
    },

    // --- for the policy store (replacing or deactivating a policy)

    /** The ids of a policy's pending (not expired) cases, oldest first: what a write without `force` would end. */
    pendingCasesOf(policyId: string, at: number = now()): string[] {
      return (s.pendingOfPolicy.all(policyId, at) as Array<{ id: string }>).map((r) => r.id);
    },

    /**
     * Invalidates a policy's uncompleted (pending, not expired) cases; completed ones survive (spec). Call it inside
     * the transaction that replaces or deactivates the policy. Answers the ids it invalidated.
     */
    invalidateUncompletedCases(policyId: string, at: number = now()): string[] {
      const ids = (s.pendingOfPolicy.all(policyId, at) as Array<{ id: string }>).map((r) => r.id);
      for (const id of ids) s.endCase.run({ id, status: 'invalidated', at });
      return ids;
    },

    // --- people and scopes (admin)

    insertUser(row: { projectId: string; name: string; createdAt: string }): UserRow {
      return s.insertUser.get({ id: randomUUID(), ...row }) as UserRow;
    },
    getUser,
    /** A project's users, oldest first, after position `after`. */
    listUsers(projectId: string, opts: { after?: number; limit: number }): UserRow[] {
      return s.listUsers.all({ projectId, after: opts.after ?? 0, limit: opts.limit }) as UserRow[];
    },
    insertScope(row: { projectId: string; name: string; createdAt: string }): ScopeRow {
      return s.insertScope.get({ id: randomUUID(), ...row }) as ScopeRow;
    },
    getScope(id: string): ScopeRow | undefined {
      return s.getScope.get(id) as ScopeRow | undefined;
    },
    listScopes(projectId: string, opts: { after?: number; limit: number }): ScopeRow[] {
      return s.listScopes.all({ projectId, after: opts.after ?? 0, limit: opts.limit }) as ScopeRow[];
    },
    /** The assignments of a scope (users with their roles and revisions), by user id. */
    assignmentsOf(scopeId: string): AssignmentRow[] {
      return (s.assignments.all(scopeId) as Array<Omit<AssignmentRow, 'roles'> & { roles: string }>).map(toAssignment);
    },
    getAssignment,

    /**
     * Replaces a user's roles in a scope. 409 REVISION_CONFLICT unless `expectedRevision` is the current revision (0
     * before the first write). A write that would leave pending cases of the scope unable to complete (a stage
     * without enough eligible holders) is refused with 409 APPROVAL_CASES_AFFECTED unless `force`, which writes it
     * and invalidates those cases. The scope and user are checked by the caller.
     */
    putAssignment(w: {
      scopeId: string;
      userId: string;
      roles: string[];
      expectedRevision: number;
      force: boolean;
      at: number;
    }): { assignment: AssignmentRow; invalidatedCaseIds: string[] } {
      const current = getAssignment(w.scopeId, w.userId);
      const revision = current?.revision ?? 0;
      if (w.expectedRevision !== revision) {
        throw new ServiceError(
          'REVISION_CONFLICT',
          409,
          `expectedRevision is ${w.expectedRevision}, the assignment's revision is ${revision}: read it again`,
          { details: { revision } },
        );
      }
      const before = rolesOf(w.scopeId);
      const after = new Map(before);
      after.set(w.userId, w.roles);
      const affected = (s.pendingOfScope.all(w.scopeId, w.at) as RawCase[])
        .map((r) => toCase(r)!)
        .filter((c) => completable(c, before) && !completable(c, after))
        .map((c) => c.id);
      if (affected.length > 0 && !w.force) {
        throw new ServiceError(
          'APPROVAL_CASES_AFFECTED',
          409,
          `this change leaves ${affected.length} pending approval case(s) without enough approvers: resend with force: true to write it and invalidate them`,
          { details: { affectedCaseIds: affected } },
        );
      }
      for (const id of affected) s.endCase.run({ id, status: 'invalidated', at: w.at });
      s.upsertAssignment.run({
        scopeId: w.scopeId,
        userId: w.userId,
        roles: JSON.stringify(w.roles),
        at: iso(w.at),
      });
      return { assignment: getAssignment(w.scopeId, w.userId)!, invalidatedCaseIds: affected };
    },

    /** The scope a wallet is bound to, or undefined. */
    scopeOfWallet(walletId: string): string | undefined {
      return (s.binding.get(walletId) as { scopeId: string } | undefined)?.scopeId;
    },
    /** Binds a wallet to a scope (null: unbinds it). Open cases keep the scope they opened with. */
    bindWallet(walletId: string, scopeId: string | null, at: number): void {
      if (scopeId === null) s.unbind.run(walletId);
      else s.bind.run({ walletId, scopeId, at: iso(at) });
    },

    // --- cases

    getCase,
    /** Cases of an API key (`by: 'key'`) or a project, newest first, before position `before`; `status` as read at `at`. */
    listCases(q: {
      by: 'key' | 'project';
      owner: string;
      status?: ApprovalCaseStatus;
      walletId?: string;
      before?: number;
      limit: number;
      at: number;
    }): CaseRecord[] {
      const stmt = q.by === 'key' ? s.listCasesOfKey : s.listCasesOfProject;
      return (
        stmt.all({
          owner: q.owner,
          walletId: q.walletId ?? null,
          status: q.status ?? null,
          before: q.before ?? Number.MAX_SAFE_INTEGER,
          limit: q.limit,
          at: q.at,
        }) as RawCase[]
      ).map((r) => toCase(r)!);
    },
    /** Cancels a pending case (the partner's backend); any other case is left as it is. Answers the case. */
    cancelCase(id: string, at: number): CaseRecord | undefined {
      const c = getCase(id);
      if (c && caseStatusAt(c, at) === 'pending') s.endCase.run({ id, status: 'cancelled', at });
      return getCase(id);
    },

    /**
     * A person's decision on a case. Refused (403, message `approval decision is not allowed`): the initiator
     * (INITIATOR_CANNOT_REVIEW); a case no longer pending, a user who already decided on it, a user of another project
     * or one who does not hold the current stage's role in the case's scope (APPROVAL_DECISION_NOT_ALLOWED). An
     * approval counts toward the current stage; the case completes when its last stage reaches its threshold. One
     * rejection rejects the case. 404 APPROVAL_CASE_NOT_FOUND, USER_NOT_FOUND.
     */
    decide(caseId: string, userId: string, decision: ApprovalDecision, at: number): CaseRecord {
      const c = getCase(caseId);
      if (!c) throw new ServiceError('APPROVAL_CASE_NOT_FOUND', 404, 'approval case not found');
      const user = getUser(userId);
      if (!user) throw new ServiceError('USER_NOT_FOUND', 404, 'user not found');
      if (user.projectId !== c.projectId) throw refused('user-of-another-project');
      if (c.initiatorUserId !== null && userId === c.initiatorUserId) throw refused('initiator');
      if (caseStatusAt(c, at) !== 'pending') throw refused('case-not-pending');
      if (c.decisions.some((d) => d.userId === userId)) throw refused('already-decided');
      const stage = currentStage(c.stages, c.decisions);
      const roles = getAssignment(c.scopeId, userId)?.roles ?? [];
      if (stage >= c.stages.length || !roles.includes(c.stages[stage]!.role)) throw refused('not-an-approver');
      s.insertDecision.run({ caseId, userId, stage, decision, at });
      if (decision === 'reject') s.endCase.run({ id: caseId, status: 'rejected', at });
      else {
        const withThis = [...c.decisions, { userId, stage, decision, decidedAt: at }];
        if (currentStage(c.stages, withThis) >= c.stages.length) s.endCase.run({ id: caseId, status: 'completed', at });
      }
      return getCase(caseId)!;
    },

    // --- reviews

    getReview,
    /**
     * Approves or rejects a pending review (the partner's backend, with its key). A review that is no longer pending
     * (approved, rejected, expired, consumed) is left as it is. Answers the review.
     */
    decideReview(id: string, decision: ApprovalDecision, at: number): ReviewRecord | undefined {
      const r = getReview(id);
      if (r && reviewStatusAt(r, at) === 'pending') {
        s.decideReview.run({ id, status: decision === 'approve' ? 'approved' : 'rejected', at });
      }
      return getReview(id);
    },
  };
}

export type ApprovalsRepo = ReturnType<typeof createApprovalsRepo>;
