import { randomBytes, randomUUID } from 'node:crypto';
import ipaddr from 'ipaddr.js';
import { invalidRequest, ServiceError } from '../../chains/domain/errors.ts';
import type { KeyEnvironment } from '../../chains/domain/projects.ts';
import { PLAN_LIMITS } from '../../chains/domain/projects.ts';
import type { EnclaveClient } from '../../enclave/client.ts';
import type { Store } from '../../store/index.ts';
import type { Plan, ProjectRow } from '../../store/projects-repo.ts';
import { decodeCursor, encodeCursor } from '../cursor.ts';
import { type Authenticator, hashSecret } from '../plugins/auth.ts';
import { createMasterKeyService } from './master-key.ts';
import type { WebhookService } from './webhooks.ts';

const projectNotFound = () => new ServiceError('PROJECT_NOT_FOUND', 404, 'project not found');
const keyNotFound = () => new ServiceError('API_KEY_NOT_FOUND', 404, 'API key not found');

/** Page size of the operator's lists when the query names none. */
const DEFAULT_PAGE = 20;

/** A project as the admin API answers it: the plan's fixed limit, or the project's own figure. */
const projectView = (row: ProjectRow) => ({
  id: row.id,
  name: row.name,
  plan: row.plan,
  rateLimitPerMinute: PLAN_LIMITS[row.plan] ?? row.rateLimitPerMinute!,
  createdAt: row.createdAt,
});

/** One page of a list read one row past `limit`, so `hasMore` needs no count. */
function page<T extends { seq: number }, V>(rows: T[], limit: number, kind: string, view: (row: T) => V) {
  const hasMore = rows.length > limit;
  const shown = rows.slice(0, limit);
  return {
    data: shown.map(view),
    pagination: { cursor: hasMore ? encodeCursor(kind, shown[shown.length - 1]!.seq) : null, hasMore, limit },
  };
}

/** A new secret: a readable prefix naming the environment, then 32 random bytes. Shown once. */
function newSecret(environment: KeyEnvironment): string {
  return `${environment === 'production' ? 'sk_live_' : 'sk_dev_'}${randomBytes(32).toString('base64url')}`;
}

const DOTTED_QUAD = /^\d{1,3}(\.\d{1,3}){3}$/;

/**
 * Normalizes a CIDR (or a bare address, taken as a single host); throws a 400 on anything else. IPv4 must
 * be a dotted quad (`10` or `127.1` are refused: they read like something else). An IPv4-mapped IPv6
 * entry (`::ffff:a.b.c.d/n`, n ≥ 96) is stored as the IPv4 range it means, since callers are matched as IPv4.
 */
export function normalizeCidr(entry: string): string {
  const s = entry.trim();
  const invalid = () => invalidRequest(`"${entry}" is not a valid IPv4 or IPv6 CIDR`, { field: 'body.cidrs' });
  const [host = '', bitsText] = s.split('/', 2);
  if (!host.includes(':') && !DOTTED_QUAD.test(host)) throw invalid();
  let addr: ipaddr.IPv4 | ipaddr.IPv6;
  let bits: number;
  if (bitsText === undefined) {
    if (!ipaddr.isValid(host)) throw invalid();
    addr = ipaddr.parse(host);
    bits = addr.kind() === 'ipv4' ? 32 : 128;
  } else {
    if (!/^\d{1,3}$/.test(bitsText) || !ipaddr.isValidCIDR(s)) throw invalid();
    [addr, bits] = ipaddr.parseCIDR(s);
  }
  if (addr instanceof ipaddr.IPv6 && addr.isIPv4MappedAddress()) {
    if (bits < 96) throw invalid();
    addr = addr.toIPv4Address();
    bits -= 96;
  }
  // Store the network address itself, so `10.1.2.3/8` reads back as the range it allows: `10.0.0.0/8`.
  const network =
    addr.kind() === 'ipv4'
      ? ipaddr.IPv4.networkAddressFromCIDR(`${addr}/${bits}`)
      : ipaddr.IPv6.networkAddressFromCIDR(`${addr}/${bits}`);
  return `${network.toString()}/${bits}`;
}

/** The operator's verbs (admin API and CLI): projects, API keys, rotation, IP allowlists, the master key. */
export function createAdminService(deps: {
  store: Pick<Store, 'projects' | 'apiKeys' | 'writer'>;
  authenticator: Pick<Authenticator, 'invalidate'>;
  /** The webhook state each key of a list shows. */
  webhooks: Pick<WebhookService, 'summaryOf'>;
  enclave: Pick<EnclaveClient, 'masterKeyStatus' | 'rotateMasterKey'>;
  now?: () => number;
}) {
  const { store } = deps;
  const now = deps.now ?? Date.now;
  /**
   * Runs a write that changes who may authenticate, then drops the authenticator's cache whatever the
   * write's outcome: a write can be committed and still reject (STORE_SYNC_FAILED when the fsync after
   * COMMIT fails), and a cache kept then would go on admitting a rotated secret or a deleted project.
   */
  const writeAuth = async <T>(fn: () => T): Promise<T> => {
    try {
      return await store.writer.write(fn);
    } finally {
      deps.authenticator.invalidate();
    }
  };
  const iso = () => new Date(now()).toISOString();

  return {
    /** The enclave's master key: status and rotation. */
    masterKey: createMasterKeyService({ enclave: deps.enclave }),

    async createProject(body: { name: string; plan?: Plan; rateLimitPerMinute?: number }) {
      const plan = body.plan ?? 'free';
      const fixed = PLAN_LIMITS[plan];
      if (fixed !== null && body.rateLimitPerMinute !== undefined) {
        throw invalidRequest(
          `plan ${plan} has a fixed limit of ${fixed} requests per minute; omit rateLimitPerMinute`,
          {
            field: 'body.rateLimitPerMinute',
          },
        );
      }
      if (fixed === null && body.rateLimitPerMinute === undefined) {
        throw invalidRequest(`plan ${plan} needs rateLimitPerMinute (the project's own figure)`, {
          field: 'body.rateLimitPerMinute',
        });
      }
      const row = await store.writer.write(() =>
        store.projects.insert({
          id: randomUUID(),
          name: body.name,
          plan,
          rateLimitPerMinute: fixed === null ? body.rateLimitPerMinute : null,
          createdAt: iso(),
        }),
      );
      return projectView(row);
    },

    /** Every project, deleted ones too unless `deleted` says which, oldest first: one page. */
    listProjects(q: { deleted?: boolean; cursor?: string; limit?: number }) {
      const limit = q.limit ?? DEFAULT_PAGE;
      const rows = store.projects.list({
        limit: limit + 1,
        ...(q.deleted === undefined ? {} : { deleted: q.deleted }),
        ...(q.cursor === undefined ? {} : { after: decodeCursor('p', q.cursor) }),
      });
      return page(rows, limit, 'p', (row) => ({
        ...projectView(row),
        ipAllowlist: JSON.parse(row.ipAllowlist) as string[],
        apiKeyCount: row.apiKeyCount,
        deletedAt: row.deletedAt,
      }));
    },

    /**
     * The keys of a live project, oldest first, each with its webhook endpoint's state: one page. Never a secret:
     * the repository does not read the hashes, and the endpoint is described as `GET …/webhook` describes it.
     */
    listApiKeys(projectId: string, q: { cursor?: string; limit?: number }) {
      if (!store.projects.get(projectId)) throw projectNotFound();
      const limit = q.limit ?? DEFAULT_PAGE;
      const rows = store.apiKeys.listByProject(projectId, {
        limit: limit + 1,
        ...(q.cursor === undefined ? {} : { after: decodeCursor('k', q.cursor) }),
      });
      return page(rows, limit, 'k', (row) => ({
        id: row.id,
        projectId: row.projectId,
        environment: row.environment,
        createdAt: row.createdAt,
        rotatedAt: row.rotatedAt,
        webhook: deps.webhooks.summaryOf(row.id),
      }));
    },

    async deleteProject(projectId: string): Promise<void> {
      const done = await writeAuth(() => store.projects.markDeleted(projectId, iso()));
      if (!done) throw projectNotFound();
    },

    /** Throws 404 PROJECT_NOT_FOUND unless the project exists (and is not deleted). */
    assertProject(projectId: string): void {
      if (!store.projects.get(projectId)) throw projectNotFound();
    },

    async createApiKey(projectId: string, environment: KeyEnvironment) {
      if (!store.projects.get(projectId)) throw projectNotFound();
      const secretKey = newSecret(environment);
      const row = await store.writer.write(() =>
        store.apiKeys.insert({
          id: randomUUID(),
          projectId,
          environment,
          secretHash: hashSecret(secretKey),
          createdAt: iso(),
        }),
      );
      return { id: row.id, projectId, environment, secretKey, createdAt: row.createdAt };
    },

    async rotateApiKey(keyId: string) {
      const key = store.apiKeys.get(keyId);
      if (!key) throw keyNotFound();
      const secretKey = newSecret(key.environment);
      await writeAuth(() => store.apiKeys.rotate(keyId, hashSecret(secretKey), iso()));
      return { id: keyId, secretKey };
    },

    async setIpAllowlist(projectId: string, cidrs: string[]) {
      const normalized = [...new Set(cidrs.map(normalizeCidr))];
      const done = await writeAuth(() => store.projects.setIpAllowlist(projectId, normalized));
      if (!done) throw projectNotFound();
      return { projectId, cidrs: normalized };
    },
  };
}

export type AdminService = ReturnType<typeof createAdminService>;
