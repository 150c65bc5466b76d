import type { ApprovalCaseStatus, ApprovalDecision } from '../../chains/domain/approvals.ts';
import { invalidRequest, ServiceError, walletNotFound } from '../../chains/domain/errors.ts';
import {
  type CaseRecord,
  caseStatusAt,
  type ReviewRecord,
  reviewExpiresAt,
  reviewStatusAt,
  type ScopeRow,
  stageViews,
  type UserRow,
} from '../../store/approvals-repo.ts';
import type { Store } from '../../store/index.ts';
import { decodeCursor, encodeCursor } from '../cursor.ts';
import type { Principal } from '../plugins/auth.ts';

const projectNotFound = () => new ServiceError('PROJECT_NOT_FOUND', 404, 'project not found');
const caseNotFound = () => new ServiceError('APPROVAL_CASE_NOT_FOUND', 404, 'approval case not found');
const reviewNotFound = () => new ServiceError('REVIEW_NOT_FOUND', 404, 'review not found');
const scopeNotFound = () => new ServiceError('AUTHORIZATION_SCOPE_NOT_FOUND', 404, 'authorization scope not found');
const userNotFound = () => new ServiceError('USER_NOT_FOUND', 404, 'user not found');

/** Page size of the lists when the query names none. */
const DEFAULT_PAGE = 20;

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** A case as a partner reads it (`GET /v1/permissions-v2/approval-cases/{caseId}`). */
function caseView(c: CaseRecord, at: number) {
  return {
    id: c.id,
    status: caseStatusAt(c, at),
    walletId: c.walletId,
    policyId: c.policyId,
    policyVersion: c.policyVersion,
    ruleId: c.ruleId,
    stages: stageViews(c),
    initiatorUserId: c.initiatorUserId,
    createdAt: iso(c.createdAt)!,
    expiresAt: iso(c.expiresAt)!,
    usedAt: iso(c.usedAt),
  };
}

/** A case as the operator reads it: the partner's view, and whose it is, its scope and its reference. */
function adminCaseView(c: CaseRecord, at: number) {
  return {
    ...caseView(c, at),
    projectId: c.projectId,
    apiKeyId: c.apiKeyId,
    scopeId: c.scopeId,
    reference: c.reference,
    endedAt: iso(c.endedAt),
  };
}

/** A review as the review routes answer it. */
const reviewView = (r: ReviewRecord, at: number) => ({
  id: r.id,
  status: reviewStatusAt(r, at),
  expiresAt: iso(reviewExpiresAt(r))!,
});

const userView = (u: UserRow) => ({ id: u.id, projectId: u.projectId, name: u.name, createdAt: u.createdAt });
const scopeView = (s: ScopeRow) => ({ id: s.id, projectId: s.projectId, name: s.name, createdAt: s.createdAt });

/** One page of a list read one row past `limit`, so `hasMore` needs no count. */
function page<T extends { seq: number }, V>(rows: T[], limit: number, kind: string, view: (row: T) => V) {
  const hasMore = rows.length > limit;
  const shown = rows.slice(0, limit);
  return {
    data: shown.map(view),
    pagination: { cursor: hasMore ? encodeCursor(kind, shown[shown.length - 1]!.seq) : null, hasMore, limit },
  };
}

const emptyPage = (limit: number) => ({ data: [], pagination: { cursor: null, hasMore: false, limit } });

export interface CaseQuery {
  status?: ApprovalCaseStatus;
  walletId?: string;
  cursor?: string;
  limit?: number;
}

/**
 * Approval cases and reviews as partners see them (`/v1/permissions-v2`), and the people, authorization scopes, role
 * assignments, wallet bindings and case decisions the operator administers (`/admin/v1`). A partner's key sees only its
 * own records: another key's is a 404 like a missing one. API keys never decide a case; the operator's decision route
 * stands in for the people's own flow (POLICIES.md §2).
 */
export function createApprovalsService(deps: {
  store: Pick<Store, 'approvals' | 'projects' | 'wallets' | 'writer'>;
  /**
   * Whether permissions are on for a key (the switch `PUT /admin/v1/api-keys/{keyId}/permissions`): while off, the
   * case list is empty (spec). Default: on for every key, since cases exist only where the decision point held a
   * request, which it does only for keys with permissions on.
   */
  permissionsEnabled?: (apiKeyId: string) => boolean;
  now?: () => number;
}) {
  const { store } = deps;
  const repo = store.approvals;
  const now = deps.now ?? Date.now;
  const permissionsEnabled = deps.permissionsEnabled ?? (() => true);

  const ownCase = (principal: Principal, caseId: string): CaseRecord => {
    const c = repo.getCase(caseId);
    if (!c || c.apiKeyId !== principal.keyId) throw caseNotFound();
    return c;
  };
  const assertProject = (projectId: string) => {
    if (!store.projects.get(projectId)) throw projectNotFound();
  };
  const scopeOf = (scopeId: string): ScopeRow => {
    const s = repo.getScope(scopeId);
    if (!s) throw scopeNotFound();
    return s;
  };
  const listCases = (by: 'key' | 'project', owner: string, q: CaseQuery) => {
    const limit = q.limit ?? DEFAULT_PAGE;
    const at = now();
    const rows = repo.listCases({
      by,
      owner,
      limit: limit + 1,
      at,
      ...(q.status === undefined ? {} : { status: q.status }),
      ...(q.walletId === undefined ? {} : { walletId: q.walletId }),
      ...(q.cursor === undefined ? {} : { before: decodeCursor('c', q.cursor) }),
    });
    return { rows, limit, at };
  };

  return {
    // --- partners (/v1/permissions-v2)

    /** The key's cases, newest first; empty while permissions are off for the key (spec). */
    listCases(principal: Principal, q: CaseQuery) {
      if (!permissionsEnabled(principal.keyId)) {
        // The cursor is still checked: a bad one is a 400 whatever the switch.
        if (q.cursor !== undefined) decodeCursor('c', q.cursor);
        return emptyPage(q.limit ?? DEFAULT_PAGE);
      }
      const { rows, limit, at } = listCases('key', principal.keyId, q);
      return page(rows, limit, 'c', (c) => caseView(c, at));
    },

    getCase(principal: Principal, caseId: string) {
      return caseView(ownCase(principal, caseId), now());
    },

    /** Cancels a pending case; any other is answered as it is. */
    async cancelCase(principal: Principal, caseId: string) {
      ownCase(principal, caseId);
      const at = now();
      const c = await store.writer.write(() => repo.cancelCase(caseId, at));
      return caseView(c!, at);
    },

    /** Approves or rejects a pending review of the key; an ended one is answered as it is (spec). */
    async decideReview(principal: Principal, reviewId: string, decision: ApprovalDecision) {
      const r = repo.getReview(reviewId);
      if (!r || r.apiKeyId !== principal.keyId) throw reviewNotFound();
      const at = now();
      const decided = await store.writer.write(() => repo.decideReview(reviewId, decision, at));
      return reviewView(decided!, at);
    },

    // --- the operator (/admin/v1)

    async createUser(projectId: string, body: { name: string }) {
      assertProject(projectId);
      const row = await store.writer.write(() =>
        repo.insertUser({ projectId, name: body.name, createdAt: new Date(now()).toISOString() }),
      );
      return userView(row);
    },

    listUsers(projectId: string, q: { cursor?: string; limit?: number }) {
      assertProject(projectId);
      const limit = q.limit ?? DEFAULT_PAGE;
      const rows = repo.listUsers(projectId, {
        limit: limit + 1,
        ...(q.cursor === undefined ? {} : { after: decodeCursor('u', q.cursor) }),
      });
      return page(rows, limit, 'u', userView);
    },

    async createScope(projectId: string, body: { name: string }) {
      assertProject(projectId);
      const row = await store.writer.write(() =>
        repo.insertScope({ projectId, name: body.name, createdAt: new Date(now()).toISOString() }),
      );
      return { ...scopeView(row), assignments: [] };
    },

    listScopes(projectId: string, q: { cursor?: string; limit?: number }) {
      assertProject(projectId);
      const limit = q.limit ?? DEFAULT_PAGE;
      const rows = repo.listScopes(projectId, {
        limit: limit + 1,
        ...(q.cursor === undefined ? {} : { after: decodeCursor('s', q.cursor) }),
      });
      return page(rows, limit, 's', scopeView);
    },

    /** A scope with its assignments (each user's roles and revision). */
    getScope(scopeId: string) {
      const s = scopeOf(scopeId);
      return {
        ...scopeView(s),
        assignments: repo
          .assignmentsOf(scopeId)
          .map((a) => ({ userId: a.userId, roles: a.roles, revision: a.revision })),
      };
    },

    /**
     * Replaces a user's roles in a scope (`expectedRevision`: 0 for a user without an assignment yet). 409
     * REVISION_CONFLICT, 409 APPROVAL_CASES_AFFECTED (unless `force`, which invalidates them).
     */
    async putAssignment(
      scopeId: string,
      userId: string,
      body: { roles: string[]; expectedRevision: number; force?: boolean },
    ) {
      const scope = scopeOf(scopeId);
      const user = repo.getUser(userId);
      if (!user || user.projectId !== scope.projectId) throw userNotFound();
      const roles = [...new Set(body.roles)];
      const at = now();
      const { assignment, invalidatedCaseIds } = await store.writer.write(() =>
        repo.putAssignment({
          scopeId,
          userId,
          roles,
          expectedRevision: body.expectedRevision,
          force: body.force ?? false,
          at,
        }),
      );
      return {
        scopeId,
        userId,
        roles: assignment.roles,
        revision: assignment.revision,
        updatedAt: assignment.updatedAt,
        invalidatedCaseIds,
      };
    },

    /** The scope a wallet's approval cases go to (null: none). */
    walletScope(walletId: string) {
      if (!store.wallets.getAny(walletId)) throw walletNotFound();
      return { walletId, scopeId: repo.scopeOfWallet(walletId) ?? null };
    },

    /** Binds a wallet to a scope of its project, or unbinds it (null). Open cases keep the scope they opened with. */
    async setWalletScope(walletId: string, scopeId: string | null) {
      const wallet = store.wallets.getAny(walletId);
      if (!wallet) throw walletNotFound();
      if (scopeId !== null) {
        const scope = scopeOf(scopeId);
        if (scope.projectId !== wallet.projectId) {
          throw invalidRequest('the authorization scope belongs to another project than the wallet', {
            field: 'body.scopeId',
          });
        }
      }
      await store.writer.write(() => repo.bindWallet(walletId, scopeId, now()));
      return { walletId, scopeId };
    },

    listProjectCases(projectId: string, q: CaseQuery) {
      assertProject(projectId);
      const { rows, limit, at } = listCases('project', projectId, q);
      return page(rows, limit, 'c', (c) => adminCaseView(c, at));
    },

    getCaseAdmin(caseId: string) {
      const c = repo.getCase(caseId);
      if (!c) throw caseNotFound();
      return adminCaseView(c, now());
    },

    /** A person's decision on a case (the stand-in for the people's own flow). */
    async decide(caseId: string, body: { userId: string; decision: ApprovalDecision }) {
      const at = now();
      const c = await store.writer.write(() => repo.decide(caseId, body.userId, body.decision, at));
      return adminCaseView(c, at);
    },
  };
}

export type ApprovalsService = ReturnType<typeof createApprovalsService>;
