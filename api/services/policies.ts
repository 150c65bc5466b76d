/**
 * Signing policies (`/v1/permissions-v2`, POLICIES.md §3) and their administration (`/admin/v1/api-keys/{id}/…`).
 *
 * Rules this service keeps (POLICIES.md leaves them to us; docs/api-guide.md "Signing policies" tells partners):
 * - A policy belongs to the key that wrote it; another key's policy answers 404 POLICY_NOT_FOUND, as a missing one.
 * - Permissions off for the key: lists answer empty, every other policy route 403 PERMISSIONS_NOT_ENABLED
 *   (`POST /policies/validate` excepted: it saves nothing).
 * - Development keys write. A production key's policies come only from the operator's publication of a production
 *   review: its writes answer 403 PRODUCTION_KEY_READ_ONLY (deactivating too: a leaked production secret must not lift
 *   its own guardrails).
 * - Each write takes `expectedRevision` (the policy's write counter; another is 409 REVISION_CONFLICT) and `force`.
 *   A write that would end pending approval cases of the policy (replacing or deactivating an active policy, or
 *   activating over it) is 409 APPROVAL_CASES_AFFECTED with `affectedCaseIds` unless `force`, which invalidates them.
 * - A key has at most one active policy per wallet type and network set (the selector, order ignored; no networks is
 *   a selector of its own). Activating a policy while another active one has its selector makes the content of the
 *   activated one the next version of the active one (spec: "editing an active guardrail of the same selector
 *   creates its next version"): the answer is that policy, and the activated one is deleted (its versions stay). A
 *   `PUT` that would move an active policy onto another active one's selector is 409 POLICY_SELECTOR_ACTIVE.
 * - Every version is immutable: any `PUT` makes the next version; on an active policy it is live at once.
 */
import { randomUUID } from 'node:crypto';
import type { PolicyDocument } from '../../actors/signing/policy/policy-document.ts';
import { type PolicyValidationError, validatePolicy } from '../../actors/signing/policy/validate-policy.ts';
import type { ErrorCode } from '../../chains/domain/error-catalogue.ts';
import { ServiceError } from '../../chains/domain/errors.ts';
import type { PolicyStatus, ProductionReviewStatus } from '../../chains/domain/policies.ts';
import type { Store } from '../../store/index.ts';
import {
  NO_POLICY_CASES,
  type PermissionsRecord,
  type PolicyCases,
  type PolicyRecord,
  type PolicyVersionRecord,
  type StoredPolicyDocument,
  selectorOf,
} from '../../store/policies-repo.ts';
import { decodeCursor, encodeCursor } from '../cursor.ts';

/** Who calls the `/v1/permissions-v2` routes (the authenticated key). */
export interface PolicyCaller {
  keyId: string;
  projectId: string;
  environment: 'development' | 'production';
}

const DEFAULT_LIMIT = 20;

/** An error of a policy route: the envelope's `code` is `errors[0].code`, and `errors[]` says where. */
function recordError(
  code: ErrorCode,
  status: number,
  path: string,
  message: string,
  details: Record<string, unknown> = {},
): ServiceError {
  return new ServiceError(code, status, message, { details: { ...details, errors: [{ code, path, message }] } });
}

function invalidDocument(errors: PolicyValidationError[]): ServiceError {
  const first = errors[0]!;
  const more = errors.length > 1 ? ` (and ${errors.length - 1} more in errors[])` : '';
  return new ServiceError(first.code, 400, `the policy is not valid: ${first.path || '/'}: ${first.message}${more}`, {
    details: { errors },
  });
}

/** A stored document as the engine's type: the store keeps only documents `validatePolicy` accepted (`parse` below). */
const engineDocument = (d: StoredPolicyDocument) => d as PolicyDocument;

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** A policy as the API answers it: its current document with the service's fields. */
export function policyView(p: PolicyRecord) {
  return {
    id: p.id,
    apiKeyId: p.apiKeyId,
    status: p.status,
    version: p.version,
    revision: p.revision,
    ...engineDocument(p.document),
    ...(p.sourcePolicyId ? { sourcePolicyId: p.sourcePolicyId } : {}),
    createdAt: iso(p.createdAt)!,
    updatedAt: iso(p.updatedAt)!,
  };
}

function versionView(v: PolicyVersionRecord) {
  return { version: v.version, createdAt: iso(v.createdAt)!, policy: engineDocument(v.document) };
}

function permissionsView(
  apiKeyId: string,
  environment: 'development' | 'production',
  p: PermissionsRecord | undefined,
) {
  return {
    apiKeyId,
    environment,
    enabled: p?.enabled ?? false,
    approvals: p?.approvals ?? false,
    productionReview:
      environment === 'production' && p?.productionReview
        ? {
            status: p.productionReview,
            requestedAt: iso(p.reviewRequestedAt),
            decidedAt: iso(p.reviewDecidedAt),
            decidedBy: p.reviewDecidedBy,
            reason: p.reviewReason,
          }
        : null,
    updatedAt: iso(p?.updatedAt ?? null),
  };
}

const sameDocument = (a: StoredPolicyDocument, b: StoredPolicyDocument) => JSON.stringify(a) === JSON.stringify(b);

export function createPolicyService(deps: {
  store: Pick<Store, 'policies' | 'apiKeys' | 'writer'>;
  /** The approvals store's view of a policy's cases (store/approvals-repo.ts); default: no policy has cases. */
  cases?: PolicyCases;
  now?: () => number;
}) {
  const { store } = deps;
  const repo = store.policies;
  const now = deps.now ?? Date.now;
  const cases = () => deps.cases ?? NO_POLICY_CASES;

  /** Runs `fn` in the writer's transaction; the keys' cached policies are dropped again once it settles. */
  function write<T>(keyIds: readonly string[], fn: (at: number) => T): Promise<T> {
    const at = now();
    return store.writer
      .write(() => fn(at))
      .finally(() => {
        for (const k of keyIds) repo.invalidate(k);
      });
  }

  function assertEnabled(caller: PolicyCaller): void {
    if (!repo.permissions(caller.keyId).enabled) {
      throw new ServiceError(
        'PERMISSIONS_NOT_ENABLED',
        403,
        'signing policies are not enabled for this API key: ask the operator to enable permissions for it',
      );
    }
  }

  function assertWritable(caller: PolicyCaller): void {
    assertEnabled(caller);
    if (caller.environment === 'production') {
      throw new ServiceError(
        'PRODUCTION_KEY_READ_ONLY',
        403,
        'a production key receives its policies through the production review: write them with a development key of the project, then POST /v1/permissions-v2/production-review with this key',
      );
    }
  }

  /** The caller's live policy: 404 when missing or another key's (the same answer). */
  function owned(caller: PolicyCaller, id: string): PolicyRecord {
    const p = repo.get(id);
    if (!p || p.apiKeyId !== caller.keyId) {
      throw new ServiceError('POLICY_NOT_FOUND', 404, 'policy not found');
    }
    return p;
  }

  function checkRevision(p: PolicyRecord, expected: number): void {
    if (p.revision !== expected) {
      throw recordError(
        'REVISION_CONFLICT',
        409,
        '/expectedRevision',
        `the policy is at revision ${p.revision}, not ${expected}: it changed since it was read; read it again`,
        { revision: p.revision },
      );
    }
  }

  /** Ends the policy's pending cases (with `force`), or refuses the write naming them. */
  function settleCases(policyId: string, force: boolean, at: number): void {
    const pending = cases().pendingCasesOf(policyId);
    if (pending.length === 0) return;
    if (!force) {
      throw recordError(
        'APPROVAL_CASES_AFFECTED',
        409,
        '/force',
        `the write would invalidate ${pending.length} pending approval case(s) of policy ${policyId}: send it again with force: true`,
        { affectedCaseIds: pending },
      );
    }
    cases().invalidateCases(policyId, at);
  }

  function parse(policy: unknown): PolicyDocument {
    const checked = validatePolicy(policy);
    if (!checked.valid) throw invalidDocument(checked.errors);
    return checked.policy;
  }

  return {
    list(caller: PolicyCaller, q: { cursor?: string; limit?: number; status?: PolicyStatus }) {
      const limit = q.limit ?? DEFAULT_LIMIT;
      const after = q.cursor === undefined ? 0 : decodeCursor('p', q.cursor);
      const rows = repo.permissions(caller.keyId).enabled
        ? repo.list(caller.keyId, { after, limit: limit + 1, ...(q.status ? { status: q.status } : {}) })
        : [];
      const hasMore = rows.length > limit;
      const page = rows.slice(0, limit);
      const last = page.at(-1);
      return {
        data: page.map(policyView),
        pagination: { cursor: hasMore && last ? encodeCursor('p', last.seq) : null, hasMore, limit },
      };
    },

    validate(policy: unknown) {
      const checked = validatePolicy(policy);
      return checked.valid ? { valid: true, errors: [] } : { valid: false, errors: checked.errors };
    },

    async create(caller: PolicyCaller, policy: unknown) {
      assertWritable(caller);
      const document = parse(policy);
      const created = await write([caller.keyId], (at) =>
        repo.insert({
          id: randomUUID(),
          apiKeyId: caller.keyId,
          projectId: caller.projectId,
          document,
          status: 'draft',
          at,
        }),
      );
      return policyView(created);
    },

    get(caller: PolicyCaller, id: string) {
      assertEnabled(caller);
      return policyView(owned(caller, id));
    },

    versions(caller: PolicyCaller, id: string, q: { cursor?: string; limit?: number }) {
      assertEnabled(caller);
      const p = owned(caller, id);
      const limit = q.limit ?? DEFAULT_LIMIT;
      const before = q.cursor === undefined ? undefined : decodeCursor('v', q.cursor);
      const rows = repo.versions(p.id, { ...(before === undefined ? {} : { before }), limit: limit + 1 });
      const hasMore = rows.length > limit;
      const page = rows.slice(0, limit);
      const last = page.at(-1);
      return {
        data: page.map(versionView),
        pagination: { cursor: hasMore && last ? encodeCursor('v', last.version) : null, hasMore, limit },
      };
    },

    async replace(
      caller: PolicyCaller,
      id: string,
      body: { policy: unknown; expectedRevision: number; force?: boolean },
    ) {
      assertWritable(caller);
      const document = parse(body.policy);
      return policyView(
        await write([caller.keyId], (at) => {
          const p = owned(caller, id);
          checkRevision(p, body.expectedRevision);
          if (p.status === 'active') {
            const other = repo.activeBySelector(
              caller.keyId,
              document.scope.walletType,
              selectorOf(document.scope.networks),
            );
            if (other && other.id !== p.id) {
              throw recordError(
                'POLICY_SELECTOR_ACTIVE',
                409,
                '/policy/scope',
                `active policy ${other.id} already has this wallet type and network set: change that policy instead`,
                { policyId: other.id },
              );
            }
            settleCases(p.id, body.force === true, at);
          }
          return repo.newVersion(p.id, document, at);
        }),
      );
    },

    async activate(caller: PolicyCaller, id: string, body: { expectedRevision: number; force?: boolean }) {
      assertWritable(caller);
      return policyView(
        await write([caller.keyId], (at) => {
          const p = owned(caller, id);
          checkRevision(p, body.expectedRevision);
          if (p.status === 'active') return p;
          const other = repo.activeBySelector(caller.keyId, p.walletType, p.selector);
          if (!other) return repo.setStatus(p.id, 'active', at);
          // The same selector: this content becomes the active policy's next version.
          settleCases(other.id, body.force === true, at);
          const merged = repo.newVersion(other.id, p.document, at);
          repo.softDelete(p.id, at, other.id);
          return merged;
        }),
      );
    },

    async deactivate(caller: PolicyCaller, id: string, body: { expectedRevision: number; force?: boolean }) {
      assertWritable(caller);
      return policyView(
        await write([caller.keyId], (at) => {
          const p = owned(caller, id);
          checkRevision(p, body.expectedRevision);
          if (p.status !== 'active') return p;
          settleCases(p.id, body.force === true, at);
          return repo.setStatus(p.id, 'inactive', at);
        }),
      );
    },

    async remove(caller: PolicyCaller, id: string): Promise<void> {
      assertWritable(caller);
      await write([caller.keyId], (at) => {
        const p = owned(caller, id);
        if (p.status === 'active') {
          throw recordError('POLICY_ACTIVE', 409, '', 'the policy is active: deactivate it before deleting it');
        }
        repo.softDelete(p.id, at);
      });
    },

    async requestProductionReview(caller: PolicyCaller): Promise<{ status: 'requested' }> {
      const ineligible = (message: string) =>
        new ServiceError('PRODUCTION_REVIEW_INELIGIBLE', 409, message, { details: { status: 'ineligible' } });
      if (caller.environment !== 'production') {
        throw ineligible('a production review is requested with the production key that is to receive the policies');
      }
      await write([caller.keyId], (at) => {
        const perms = repo.permissionsRecord(caller.keyId);
        if (!perms?.enabled || perms.productionReview !== 'awaiting_review') {
          throw ineligible(
            `the production key is not awaiting review (${perms?.enabled ? (perms.productionReview ?? 'no review') : 'permissions are off'}): the operator enables permissions for it to open one`,
          );
        }
        if (repo.developmentActive(caller.projectId).length === 0) {
          throw ineligible('no development key of the project has an active policy to publish');
        }
        repo.setReview(caller.keyId, { status: 'requested', requestedAt: at }, at);
      });
      return { status: 'requested' };
    },

    // --- the operator's (admin API)

    permissions(keyId: string) {
      const key = store.apiKeys.get(keyId);
      if (!key) throw new ServiceError('API_KEY_NOT_FOUND', 404, 'API key not found');
      return permissionsView(keyId, key.environment, repo.permissionsRecord(keyId));
    },

    /**
     * Turns permissions on or off for a key. On a production key, `enabled: true` opens a review window
     * (`awaiting_review`) unless a requested review is pending; turning permissions off keeps the review state.
     */
    async setPermissions(keyId: string, body: { enabled: boolean; approvals: boolean }) {
      const key = store.apiKeys.get(keyId);
      if (!key) throw new ServiceError('API_KEY_NOT_FOUND', 404, 'API key not found');
      await write([keyId], (at) => {
        const current = repo.permissionsRecord(keyId);
        let review: ProductionReviewStatus | null = null;
        if (key.environment === 'production') {
          review = current?.productionReview ?? null;
          if (body.enabled && review !== 'requested') review = 'awaiting_review';
        }
        repo.setPermissions(keyId, { enabled: body.enabled, approvals: body.approvals, productionReview: review }, at);
      });
      return permissionsView(keyId, key.environment, repo.permissionsRecord(keyId));
    },

    /**
     * Publishes a requested production review: the project's development keys' active policies become the production
     * key's active policies. Each is kept as a policy of the production key that names its source: republished, it
     * gets the next version (unchanged ones are left as they are); an active production policy whose source is no
     * longer active is deactivated. Pending cases of the policies it changes are invalidated (the operator's
     * decision is the `force`).
     */
    async publishReview(keyId: string, body: { reason: string; by: string }) {
      const key = store.apiKeys.get(keyId);
      if (!key) throw new ServiceError('API_KEY_NOT_FOUND', 404, 'API key not found');
      const result = await write([keyId], (at) => {
        assertRequested(keyId, key.environment);
        const sources = repo.developmentActive(key.projectId);
        const seen = new Map<string, string>();
        for (const d of sources) {
          const selector = `${d.walletType}\u0000${d.selector}`;
          const first = seen.get(selector);
          if (first) {
            throw recordError(
              'POLICY_SELECTOR_ACTIVE',
              409,
              '',
              `development policies ${first} and ${d.id} are both active for the same wallet type and network set: deactivate one of them before publishing`,
              { policyId: d.id },
            );
          }
          seen.set(selector, d.id);
        }
        const bySource = new Map(sources.map((d) => [d.id, d]));
        const deactivated: string[] = [];
        for (const p of repo.activeRecords(keyId)) {
          const source = p.sourcePolicyId ? bySource.get(p.sourcePolicyId) : undefined;
          if (source && sameDocument(source.document, p.document)) continue;
          cases().invalidateCases(p.id, at);
          repo.setStatus(p.id, 'inactive', at);
          if (!source) deactivated.push(p.id);
        }
        const published = sources.map((d) => {
          const existing = repo.bySource(keyId, d.id);
          if (!existing) {
            return repo.insert({
              id: randomUUID(),
              apiKeyId: keyId,
              projectId: key.projectId,
              document: d.document,
              status: 'active',
              sourcePolicyId: d.id,
              at,
            });
          }
          if (existing.status === 'active') return existing;
          return sameDocument(existing.document, d.document)
            ? repo.setStatus(existing.id, 'active', at)
            : repo.newVersion(existing.id, d.document, at, 'active');
        });
        repo.setReview(keyId, { status: 'published', decidedAt: at, decidedBy: body.by, reason: body.reason }, at);
        return { published, deactivated };
      });
      return {
        ...permissionsView(keyId, key.environment, repo.permissionsRecord(keyId)),
        published: result.published.map((p) => ({ id: p.id, sourcePolicyId: p.sourcePolicyId!, version: p.version })),
        deactivated: result.deactivated,
      };
    },

    /** Dismisses a requested production review: the production key's policies stay as they are. */
    async dismissReview(keyId: string, body: { reason: string; by: string }) {
      const key = store.apiKeys.get(keyId);
      if (!key) throw new ServiceError('API_KEY_NOT_FOUND', 404, 'API key not found');
      await write([keyId], (at) => {
        assertRequested(keyId, key.environment);
        repo.setReview(keyId, { status: 'dismissed', decidedAt: at, decidedBy: body.by, reason: body.reason }, at);
      });
      return permissionsView(keyId, key.environment, repo.permissionsRecord(keyId));
    },
  };

  function assertRequested(keyId: string, environment: 'development' | 'production'): void {
    const review = repo.permissionsRecord(keyId)?.productionReview;
    if (environment !== 'production' || review !== 'requested') {
      throw new ServiceError(
        'PRODUCTION_REVIEW_NOT_REQUESTED',
        409,
        environment !== 'production'
          ? 'a development key has no production review'
          : `the key has no requested review (its review is ${review ?? 'not opened'})`,
      );
    }
  }
}

export type PolicyService = ReturnType<typeof createPolicyService>;
