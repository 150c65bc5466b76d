import type Database from 'better-sqlite3';
import type { PolicyStatus, ProductionReviewStatus } from '../chains/domain/policies.ts';
import type { WalletType } from '../chains/domain/wallets.ts';

/**
 * A policy document as the store reads it: the fields it keeps in columns. The store keeps only documents the policy
 * engine's `validatePolicy` accepted (api/services/policies.ts checks each before writing), so a stored document is an
 * engine `PolicyDocument` (actors/signing/policy/policy-document.ts, which store/ may not import: DESIGN §1);
 * actors/signing/policy/policy-source.ts gives the engine its view of this repository.
 */
export interface StoredPolicyDocument {
  readonly name: string;
  readonly scope: { readonly walletType: WalletType; readonly networks?: readonly string[] };
}

/** A key's switch (the engine's `KeyPermissions`, actors/signing/policy/policy-ports.ts). */
export interface KeyPermissions {
  enabled: boolean;
  approvals: boolean;
}

/** An active policy at its current version (the engine's `ActivePolicy`), its document frozen. */
export interface StoredActivePolicy {
  readonly id: string;
  readonly version: number;
  readonly createdAt: number;
  readonly document: StoredPolicyDocument;
}

type PolicyDocument = StoredPolicyDocument;

/** A key's permissions row as the admin API shows it. */
export interface PermissionsRecord extends KeyPermissions {
  apiKeyId: string;
  productionReview: ProductionReviewStatus | null;
  reviewRequestedAt: number | null;
  reviewDecidedAt: number | null;
  reviewDecidedBy: string | null;
  reviewReason: string | null;
  updatedAt: number;
}

/** A policy with its current version's document. */
export interface PolicyRecord {
  id: string;
  apiKeyId: string;
  projectId: string;
  name: string;
  layer: 'guardrail';
  walletType: WalletType;
  /** The scope's network set, sorted and comma-joined; '' for every network. */
  selector: string;
  status: PolicyStatus;
  version: number;
  revision: number;
  sourcePolicyId: string | null;
  createdAt: number;
  updatedAt: number;
  /** List position (the rowid). */
  seq: number;
  document: PolicyDocument;
}

export interface PolicyVersionRecord {
  policyId: string;
  version: number;
  createdAt: number;
  document: PolicyDocument;
}

/**
 * The approval cases a policy write would end (POLICIES.md §3: replacing or deactivating a policy invalidates its
 * uncompleted cases; such a write needs `force`). The approvals store implements it (store/approvals-repo.ts, built
 * apart); both are called inside the write's transaction. Until it is wired, no policy has cases.
 */
export interface PolicyCases {
  /** The ids of the policy's uncompleted (pending) approval cases. */
  pendingCasesOf(policyId: string): string[];
  /** Marks the policy's uncompleted cases `invalidated` (completed ones survive). */
  invalidateCases(policyId: string, at: number): void;
}

/** No approvals store: no policy has cases. */
export const NO_POLICY_CASES: PolicyCases = {
  pendingCasesOf: () => [],
  invalidateCases: () => undefined,
};

/** The canonical selector of a scope's networks: the set sorted (by code unit) and comma-joined; '' when none. */
export function selectorOf(networks: readonly string[] | undefined): string {
  return networks ? [...networks].sort().join(',') : '';
}

/** The document and what a stored row holds beside it, frozen: documents are compiled once per object. */
function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}

const POLICY_COLUMNS = `p.id, p.api_key_id as apiKeyId, p.project_id as projectId, p.name, p.layer,
  p.wallet_type as walletType, p.selector, p.status, p.version, p.revision, p.source_policy_id as sourcePolicyId,
  p.created_at as createdAt, p.updated_at as updatedAt, p.rowid as seq`;

type PolicyRow = Omit<PolicyRecord, 'document'>;

const OFF: KeyPermissions = Object.freeze({ enabled: false, approvals: false });

/**
 * Signing policies, their versions and the keys' permission switches; also the `PolicySource` the decision point
 * reads. Reads are synchronous prepared statements. The decision point's two reads are served from memory:
 * `permissions` per key, and `activeGuardrails` per key as a list built once (oldest first) whose documents are parsed
 * once per (policy, version) and frozen, so the engine's compile cache (keyed by document object) holds across
 * requests. Every write method drops the key's cached entries at once (inside its transaction); callers drop them again
 * when the write settles (`invalidate`), so an entry read from a batch that then failed to commit is not kept.
 */
export function createPoliciesRepo(sqlite: Database.Database) {
  const s = {
    permissions: sqlite.prepare(
      `select api_key_id as apiKeyId, enabled, approvals, production_review as productionReview,
         review_requested_at as reviewRequestedAt, review_decided_at as reviewDecidedAt,
         review_decided_by as reviewDecidedBy, review_reason as reviewReason, updated_at as updatedAt
       from key_permissions where api_key_id = ?`,
    ),
    upsertPermissions: sqlite.prepare(
      `insert into key_permissions (api_key_id, enabled, approvals, production_review, updated_at)
       values (@apiKeyId, @enabled, @approvals, @productionReview, @at)
       on conflict (api_key_id) do update set enabled = excluded.enabled, approvals = excluded.approvals,
         production_review = excluded.production_review, updated_at = excluded.updated_at`,
    ),
    review: sqlite.prepare(
      `update key_permissions set production_review = @status,
         review_requested_at = coalesce(@requestedAt, review_requested_at),
         review_decided_at = @decidedAt, review_decided_by = @decidedBy, review_reason = @reason, updated_at = @at
       where api_key_id = @apiKeyId`,
    ),
    get: sqlite.prepare(`select ${POLICY_COLUMNS} from policies p where p.id = ? and p.deleted_at is null`),
    getAny: sqlite.prepare(`select ${POLICY_COLUMNS} from policies p where p.id = ?`),
    list: sqlite.prepare(
      `select ${POLICY_COLUMNS} from policies p
       where p.api_key_id = @apiKeyId and p.deleted_at is null and p.rowid > @after
         and (@status is null or p.status = @status)
       order by p.rowid limit @limit`,
    ),
    active: sqlite.prepare(
      `select p.id, p.version, p.created_at as createdAt from policies p
       where p.api_key_id = ? and p.status = 'active' and p.deleted_at is null
       order by p.created_at, p.id`,
    ),
    activeBySelector: sqlite.prepare(
      `select ${POLICY_COLUMNS} from policies p
       where p.api_key_id = ? and p.wallet_type = ? and p.selector = ? and p.status = 'active' and p.deleted_at is null`,
    ),
    developmentActive: sqlite.prepare(
      `select ${POLICY_COLUMNS} from policies p join api_keys k on k.id = p.api_key_id
       where k.project_id = ? and k.environment = 'development' and p.status = 'active' and p.deleted_at is null
       order by p.created_at, p.id`,
    ),
    keyActive: sqlite.prepare(
      `select ${POLICY_COLUMNS} from policies p
       where p.api_key_id = ? and p.status = 'active' and p.deleted_at is null order by p.created_at, p.id`,
    ),
    bySource: sqlite.prepare(
      `select ${POLICY_COLUMNS} from policies p
       where p.api_key_id = ? and p.source_policy_id = ? and p.deleted_at is null`,
    ),
    document: sqlite.prepare('select document from policy_versions where policy_id = ? and version = ?'),
    versions: sqlite.prepare(
      `select policy_id as policyId, version, created_at as createdAt, document from policy_versions
       where policy_id = @policyId and version < @before order by version desc limit @limit`,
    ),
    insertPolicy: sqlite.prepare(
      `insert into policies (id, api_key_id, project_id, name, layer, wallet_type, selector, status, version, revision,
         source_policy_id, created_at, updated_at)
       values (@id, @apiKeyId, @projectId, @name, 'guardrail', @walletType, @selector, @status, 1, 1, @sourcePolicyId,
         @at, @at)`,
    ),
    insertVersion: sqlite.prepare(
      'insert into policy_versions (policy_id, version, document, created_at) values (?, ?, ?, ?)',
    ),
    nextVersion: sqlite.prepare(
      `update policies set version = version + 1, revision = revision + 1, name = @name, wallet_type = @walletType,
         selector = @selector, status = coalesce(@status, status), updated_at = @at
       where id = @id and deleted_at is null returning version`,
    ),
    setStatus: sqlite.prepare(
      `update policies set status = @status, revision = revision + 1, updated_at = @at
       where id = @id and deleted_at is null`,
    ),
    softDelete: sqlite.prepare(
      `update policies set deleted_at = @at, merged_into = @mergedInto, revision = revision + 1, updated_at = @at
       where id = @id and deleted_at is null`,
    ),
    keyOf: sqlite.prepare('select api_key_id as apiKeyId from policies where id = ?'),
  };

  const permissionsCache = new Map<string, KeyPermissions>();
  const activeCache = new Map<string, readonly StoredActivePolicy[]>();
  const documents = new Map<string, PolicyDocument>();

  /** The document of a version, parsed once and frozen. */
  function document(policyId: string, version: number): PolicyDocument | undefined {
    const key = `${policyId}\u0000${version}`;
    let doc = documents.get(key);
    if (!doc) {
      const row = s.document.get(policyId, version) as { document: string } | undefined;
      if (!row) return undefined;
      doc = deepFreeze(JSON.parse(row.document) as PolicyDocument);
      documents.set(key, doc);
    }
    return doc;
  }

  function withDocument(row: PolicyRow | undefined): PolicyRecord | undefined {
    if (!row) return undefined;
    const doc = document(row.id, row.version);
    if (!doc) throw new Error(`policy ${row.id} has no version ${row.version}`);
    return { ...row, document: doc };
  }

  function invalidate(apiKeyId: string): void {
    permissionsCache.delete(apiKeyId);
    activeCache.delete(apiKeyId);
  }

  const get = (id: string): PolicyRecord | undefined => withDocument(s.get.get(id) as PolicyRow | undefined);

  const invalidateOwner = (policyId: string) => {
    const owner = s.keyOf.get(policyId) as { apiKeyId: string } | undefined;
    if (owner) invalidate(owner.apiKeyId);
  };

  const source = {
    /** The key's switch; off when never set. Served from memory after the first read. */
    permissions(apiKeyId: string): KeyPermissions {
      let p = permissionsCache.get(apiKeyId);
      if (!p) {
        const row = s.permissions.get(apiKeyId) as { enabled: number; approvals: number } | undefined;
        p = row ? Object.freeze({ enabled: row.enabled === 1, approvals: row.approvals === 1 }) : OFF;
        permissionsCache.set(apiKeyId, p);
      }
      return p;
    },
    /** The key's active policies at their current versions, oldest first; one frozen list until a write. */
    activeGuardrails(apiKeyId: string): readonly StoredActivePolicy[] {
      let list = activeCache.get(apiKeyId);
      if (!list) {
        const rows = s.active.all(apiKeyId) as Array<{ id: string; version: number; createdAt: number }>;
        list = Object.freeze(
          rows.map((r) => {
            const doc = document(r.id, r.version);
            if (!doc) throw new Error(`policy ${r.id} has no version ${r.version}`);
            return Object.freeze({ id: r.id, version: r.version, createdAt: r.createdAt, document: doc });
          }),
        );
        activeCache.set(apiKeyId, list);
      }
      return list;
    },
  };

  return {
    ...source,
    /** Drops the key's cached permissions and active policies (the next read builds them from the database). */
    invalidate,
    /** The key's permissions row, or undefined when permissions were never set (off). */
    permissionsRecord(apiKeyId: string): PermissionsRecord | undefined {
      const r = s.permissions.get(apiKeyId) as
        | (Omit<PermissionsRecord, 'enabled' | 'approvals'> & { enabled: number; approvals: number })
        | undefined;
      return r && { ...r, enabled: r.enabled === 1, approvals: r.approvals === 1 };
    },
    /** A live policy (not deleted), whoever owns it: callers compare `apiKeyId`. */
    get,
    /**
     * A policy's record as it stands, deleted or not, with the document of `version` (default: its current one);
     * undefined when there is no such policy or version. For the decision log's readers (usage, simulate), whose
     * logged decisions may name a policy deleted since. Callers compare `apiKeyId`.
     */
    recordAt(id: string, version?: number): PolicyRecord | undefined {
      const row = s.getAny.get(id) as PolicyRow | undefined;
      if (!row) return undefined;
      const doc = document(id, version ?? row.version);
      return doc && { ...row, version: version ?? row.version, document: doc };
    },
    /** The key's live policies, oldest first, from after position `after`. */
    list(apiKeyId: string, opts: { after?: number; limit: number; status?: PolicyStatus }): PolicyRecord[] {
      const rows = s.list.all({
        apiKeyId,
        after: opts.after ?? 0,
        limit: opts.limit,
        status: opts.status ?? null,
      }) as PolicyRow[];
      return rows.map((r) => withDocument(r)!);
    },
    /** The key's live active policy of this wallet type and selector, if any. */
    activeBySelector(apiKeyId: string, walletType: WalletType, selector: string): PolicyRecord | undefined {
      return withDocument(s.activeBySelector.get(apiKeyId, walletType, selector) as PolicyRow | undefined);
    },
    /** The live active policies of the project's development keys, oldest first (what a production review publishes). */
    developmentActive(projectId: string): PolicyRecord[] {
      return (s.developmentActive.all(projectId) as PolicyRow[]).map((r) => withDocument(r)!);
    },
    /** The key's live active policies as records, oldest first. */
    activeRecords(apiKeyId: string): PolicyRecord[] {
      return (s.keyActive.all(apiKeyId) as PolicyRow[]).map((r) => withDocument(r)!);
    },
    /** The key's live policy published from `sourcePolicyId`, if any. */
    bySource(apiKeyId: string, sourcePolicyId: string): PolicyRecord | undefined {
      return withDocument(s.bySource.get(apiKeyId, sourcePolicyId) as PolicyRow | undefined);
    },
    /** A version's document, also of a deleted policy (the decision log and simulate read old versions). */
    document,
    /** A policy's versions, newest first, below `before`; each document parsed for this call. */
    versions(policyId: string, opts: { before?: number; limit: number }): PolicyVersionRecord[] {
      const rows = s.versions.all({
        policyId,
        before: opts.before ?? Number.MAX_SAFE_INTEGER,
        limit: opts.limit,
      }) as Array<Omit<PolicyVersionRecord, 'document'> & { document: string }>;
      return rows.map((r) => ({ ...r, document: JSON.parse(r.document) as PolicyDocument }));
    },

    // --- writes: run inside the writer's transactions

    setPermissions(
      apiKeyId: string,
      p: KeyPermissions & { productionReview: ProductionReviewStatus | null },
      at: number,
    ): void {
      s.upsertPermissions.run({
        apiKeyId,
        enabled: p.enabled ? 1 : 0,
        approvals: p.approvals ? 1 : 0,
        productionReview: p.productionReview,
        at,
      });
      invalidate(apiKeyId);
    },
    setReview(
      apiKeyId: string,
      r: {
        status: ProductionReviewStatus;
        requestedAt?: number;
        decidedAt?: number;
        decidedBy?: string;
        reason?: string;
      },
      at: number,
    ): void {
      s.review.run({
        apiKeyId,
        status: r.status,
        requestedAt: r.requestedAt ?? null,
        decidedAt: r.decidedAt ?? null,
        decidedBy: r.decidedBy ?? null,
        reason: r.reason ?? null,
        at,
      });
      invalidate(apiKeyId);
    },
    /** A new policy at version 1 (revision 1). */
    insert(p: {
      id: string;
      apiKeyId: string;
      projectId: string;
      document: PolicyDocument;
      status: PolicyStatus;
      sourcePolicyId?: string;
      at: number;
    }): PolicyRecord {
      s.insertPolicy.run({
        id: p.id,
        apiKeyId: p.apiKeyId,
        projectId: p.projectId,
        name: p.document.name,
        walletType: p.document.scope.walletType,
        selector: selectorOf(p.document.scope.networks),
        status: p.status,
        sourcePolicyId: p.sourcePolicyId ?? null,
        at: p.at,
      });
      s.insertVersion.run(p.id, 1, JSON.stringify(p.document), p.at);
      invalidate(p.apiKeyId);
      return get(p.id)!;
    },
    /** The policy's next version with `document` (and `status` when given); its revision moves on. */
    newVersion(id: string, doc: PolicyDocument, at: number, status?: PolicyStatus): PolicyRecord {
      const row = s.nextVersion.get({
        id,
        name: doc.name,
        walletType: doc.scope.walletType,
        selector: selectorOf(doc.scope.networks),
        status: status ?? null,
        at,
      }) as { version: number } | undefined;
      if (!row) throw new Error(`policy ${id} is not there to version`);
      s.insertVersion.run(id, row.version, JSON.stringify(doc), at);
      invalidateOwner(id);
      return get(id)!;
    },
    setStatus(id: string, status: PolicyStatus, at: number): PolicyRecord {
      s.setStatus.run({ id, status, at });
      invalidateOwner(id);
      return get(id)!;
    },
    /** Deletes the policy from every list and route; its row and versions stay for the decision log. */
    softDelete(id: string, at: number, mergedInto?: string): void {
      s.softDelete.run({ id, at, mergedInto: mergedInto ?? null });
      invalidateOwner(id);
    },
  };
}

export type PoliciesRepo = ReturnType<typeof createPoliciesRepo>;
