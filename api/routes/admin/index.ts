import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import {
  ApiKey,
  ApiKeyList,
  ClaimedWallet,
  ClaimWalletBody,
  CreateApiKeyBody,
  CreateProjectBody,
  IpAllowlist,
  IpAllowlistBody,
  KeyIdParams,
  ListApiKeysQuery,
  ListProjectsQuery,
  MasterKeyStatus,
  PregeneratedWallet,
  Project,
  ProjectIdParams,
  ProjectList,
  RotatedKey,
  RotateMasterKeyBody,
} from '../../schemas/admin.ts';
import { ok } from '../../schemas/common.ts';
import { adminErrors, WALLET_CREATION } from '../../schemas/errors.ts';
import { CreateWalletBody, WalletIdParams } from '../../schemas/wallets.ts';
import type { ActorsAdmin } from '../../services/actors-admin.ts';
import type { AdminService } from '../../services/admin.ts';
import type { ApprovalsService } from '../../services/approvals.ts';
import type { HoldsAdmin } from '../../services/holds-admin.ts';
import type { PolicyService } from '../../services/policies.ts';
import type { WalletService } from '../../services/wallets.ts';
import type { WebhookService } from '../../services/webhooks.ts';
import type { YieldService } from '../../services/yield.ts';
import { actorAdminRoutes } from './actors.ts';
import { approvalAdminRoutes } from './approvals.ts';
import { holdAdminRoutes } from './holds.ts';
import { permissionAdminRoutes } from './permissions.ts';
import { webhookAdminRoutes } from './webhooks.ts';
import { yieldAdminRoutes } from './yield.ts';

const common = { tags: ['admin'], security: [{ adminToken: [] }] };

/** `/admin/v1`: the operator's projects, API keys, rotation, IP allowlists, webhooks and actors. */
export const adminRoutes: FastifyPluginAsyncTypebox<{
  admin: AdminService;
  wallets: WalletService;
  actors: ActorsAdmin;
  holds: HoldsAdmin;
  webhooks: WebhookService;
  approvals: ApprovalsService;
  policies: PolicyService;
  yieldService: YieldService;
}> = async (app, { admin, wallets, actors, holds, webhooks, approvals, policies, yieldService }) => {
  await app.register(actorAdminRoutes, { actors });
  await app.register(approvalAdminRoutes, { approvals });
  await app.register(holdAdminRoutes, { holds });
  await app.register(yieldAdminRoutes, { yieldService });
  await app.register(webhookAdminRoutes, { webhooks });
  await app.register(permissionAdminRoutes, { policies });

  app.post(
    '/projects',
    {
      schema: {
        ...common,
        operationId: 'createProject',
        summary: 'Create a project (partner)',
        description:
          'Creates a partner project. Plans free, starter and growth have fixed per-key limits (30, 30 and 1,000 requests a minute); scale and enterprise take `rateLimitPerMinute`.',
        body: CreateProjectBody,
        response: { 201: ok(Project, 'The project.'), ...adminErrors() },
      },
    },
    async (req, reply) => reply.code(201).send(await admin.createProject(req.body)),
  );

  app.get(
    '/projects',
    {
      schema: {
        ...common,
        operationId: 'listProjects',
        summary: 'List projects: plans, rate limits, allowlists, key counts, deleted or live',
        description:
          'Every project, oldest first, deleted ones too unless `deleted` filters them, in the list envelope: id, name, plan, requests a minute per key, IP allowlist, number of API keys, created and deleted times.',
        querystring: ListProjectsQuery,
        response: { 200: ok(ProjectList, 'A page of projects.'), ...adminErrors('INVALID_CURSOR') },
      },
    },
    async (req) => {
      const { deleted, cursor, limit } = req.query;
      return admin.listProjects({
        ...(deleted === undefined ? {} : { deleted: deleted === 'true' }),
        ...(cursor === undefined ? {} : { cursor }),
        ...(limit === undefined ? {} : { limit: Number(limit) }),
      });
    },
  );

  app.get(
    '/projects/:projectId/api-keys',
    {
      schema: {
        ...common,
        operationId: 'listApiKeys',
        summary: "List a project's API keys with their rotation and webhook state (never a secret)",
        description:
          'The keys of a live project, oldest first, in the list envelope: id, environment, created and last rotated times, and the webhook endpoint as GET /admin/v1/api-keys/{keyId}/webhook shows it (null when none). Never a key secret, its hash or a webhook secret.',
        params: ProjectIdParams,
        querystring: ListApiKeysQuery,
        response: {
          200: ok(ApiKeyList, 'A page of API keys.'),
          ...adminErrors('PROJECT_NOT_FOUND', 'INVALID_CURSOR'),
        },
      },
    },
    async (req) => {
      const { cursor, limit } = req.query;
      return admin.listApiKeys(req.params.projectId, {
        ...(cursor === undefined ? {} : { cursor }),
        ...(limit === undefined ? {} : { limit: Number(limit) }),
      });
    },
  );

  app.delete(
    '/projects/:projectId',
    {
      schema: {
        ...common,
        operationId: 'deleteProject',
        summary: 'Delete a project: its keys stop working, its wallets stay',
        description:
          'Marks the project deleted: its API keys are refused from then on; its wallets and records stay in the database.',
        params: ProjectIdParams,
        response: { 204: ok(Type.Null(), 'Deleted.'), ...adminErrors('PROJECT_NOT_FOUND') },
      },
    },
    async (req, reply) => {
      await admin.deleteProject(req.params.projectId);
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/projects/:projectId/api-keys',
    {
      schema: {
        ...common,
        operationId: 'createApiKey',
        summary: 'Create an API key; the secret is shown once',
        description:
          'Creates a development or production key of the project. The secret is in this answer only; the service keeps its SHA-256.',
        params: ProjectIdParams,
        body: CreateApiKeyBody,
        response: { 201: ok(ApiKey, 'The key and its secret (shown once).'), ...adminErrors('PROJECT_NOT_FOUND') },
      },
    },
    async (req, reply) => reply.code(201).send(await admin.createApiKey(req.params.projectId, req.body.environment)),
  );

  app.post(
    '/api-keys/:keyId/rotate',
    {
      schema: {
        ...common,
        operationId: 'rotateApiKey',
        summary: 'Rotate an API key secret: the old secret is refused at once, wallets are kept',
        description:
          'Gives the key a new secret: the old one is refused at once; wallets, webhook endpoint and records stay with the key.',
        params: KeyIdParams,
        response: { 200: ok(RotatedKey, 'The new secret (shown once).'), ...adminErrors('API_KEY_NOT_FOUND') },
      },
    },
    async (req) => admin.rotateApiKey(req.params.keyId),
  );

  app.put(
    '/projects/:projectId/ip-allowlist',
    {
      schema: {
        ...common,
        operationId: 'setIpAllowlist',
        summary: "Replace a project's IP allowlist",
        description:
          "Replaces the CIDRs the project's keys may call from (a bare address is one host); an empty list lifts the restriction. Entries are stored as the networks they mean.",
        params: ProjectIdParams,
        body: IpAllowlistBody,
        response: { 200: ok(IpAllowlist, 'The allowlist as stored.'), ...adminErrors('PROJECT_NOT_FOUND') },
      },
    },
    async (req) => admin.setIpAllowlist(req.params.projectId, req.body.cidrs),
  );

  app.post(
    '/wallets/:walletId/claim',
    {
      schema: {
        ...common,
        operationId: 'claimWallet',
        summary: 'Mark a wallet claimed by its user',
        description:
          'From then on every REST signing route and share migration refuse the wallet (403 WALLET_CLAIMED); wallet.pregen_claimed is queued. A second claim answers 409 WALLET_ALREADY_CLAIMED.',
        params: WalletIdParams,
        body: ClaimWalletBody,
        response: {
          200: ok(ClaimedWallet, 'The claimed wallet.'),
          ...adminErrors('WALLET_NOT_FOUND', 'WALLET_NOT_READY', 'WALLET_ALREADY_CLAIMED'),
        },
      },
    },
    async (req) => wallets.claim(req.params.walletId, req.body?.userId),
  );

  app.post(
    '/projects/:projectId/pregenerated-wallets',
    {
      schema: {
        ...common,
        operationId: 'pregenerateWallet',
        summary: 'Pre-generate a wallet; its user share is returned once',
        description:
          'The enclave keeps only the service share. REST signing refuses the wallet (403 WALLET_SHARE_NOT_MIGRATED) until POST /v1/wallets/{walletId}/migrate-share brings the user share in.',
        params: ProjectIdParams,
        body: CreateWalletBody,
        response: {
          201: ok(PregeneratedWallet, 'The wallet and its user share (shown once).'),
          ...adminErrors('PROJECT_NOT_FOUND', ...WALLET_CREATION),
        },
      },
    },
    async (req, reply) => {
      admin.assertProject(req.params.projectId);
      const created = await wallets.createPregenerated(req.params.projectId, req.body);
      return reply.code(201).header('cache-control', 'no-store').send(created);
    },
  );

  app.get(
    '/enclave/master-key',
    {
      schema: {
        ...common,
        operationId: 'getMasterKeyStatus',
        summary: "The enclave's master key: rotation state, key ids, sealed records per key id",
        description:
          "The master key's state: current and next key ids, a rotation under way and the sealed records under each key id.",
        response: {
          200: ok(MasterKeyStatus, "The master key's state."),
          ...adminErrors('ENCLAVE_UNAVAILABLE', 'ENCLAVE_TIMEOUT'),
        },
      },
    },
    async () => admin.masterKey.status(),
  );

  app.post(
    '/enclave/master-key/rotate',
    {
      schema: {
        ...common,
        operationId: 'rotateMasterKey',
        summary: 'Rotate the master key: prepare (no body), then confirm with the next key id',
        description:
          'Without confirmKeyId (200): the enclave prepares the next key (a file master key gets master.key.next, created by the enclave; a key given from outside needs ENCLAVE_MASTER_KEY_NEXT) and answers its id: back it up, then confirm. With confirmKeyId (202): every record is re-wrapped under that key in the background while the enclave keeps serving; poll GET /admin/v1/enclave/master-key. 409 NEXT_KEY_MISSING or NEXT_KEY_MISMATCH.',
        body: RotateMasterKeyBody,
        response: {
          200: ok(MasterKeyStatus, 'The next key is prepared: its id, to back up and confirm.'),
          202: ok(MasterKeyStatus, 'Re-wrapping under the confirmed key has started; poll the status.'),
          ...adminErrors('NEXT_KEY_MISSING', 'NEXT_KEY_MISMATCH', 'ENCLAVE_UNAVAILABLE', 'ENCLAVE_TIMEOUT'),
        },
      },
    },
    async (req, reply) => {
      const confirmKeyId = req.body?.confirmKeyId;
      const status = await admin.masterKey.rotate(confirmKeyId);
      return reply.code(confirmKeyId === undefined ? 200 : 202).send(status);
    },
  );
};
