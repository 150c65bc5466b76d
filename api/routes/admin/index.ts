import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import {
  ApiKey,
  ClaimedWallet,
  ClaimWalletBody,
  CreateApiKeyBody,
  CreateProjectBody,
  IpAllowlist,
  IpAllowlistBody,
  KeyIdParams,
  MasterKeyStatus,
  PregeneratedWallet,
  Project,
  ProjectIdParams,
  RotatedKey,
  RotateMasterKeyBody,
} from '../../schemas/admin.ts';
import { errorResponses } from '../../schemas/common.ts';
import { CreateWalletBody, WalletIdParams } from '../../schemas/wallets.ts';
import type { ActorsAdmin } from '../../services/actors-admin.ts';
import type { AdminService } from '../../services/admin.ts';
import type { WalletService } from '../../services/wallets.ts';
import type { WebhookService } from '../../services/webhooks.ts';
import { actorAdminRoutes } from './actors.ts';
import { webhookAdminRoutes } from './webhooks.ts';

const ADMIN_ERRORS = [400, 401, 403] as const;
const common = { tags: ['admin'], security: [{ adminToken: [] }] };

/** `/admin/v1`: the operator's projects, API keys, rotation, IP allowlists, webhooks and actors. */
export const adminRoutes: FastifyPluginAsyncTypebox<{
  admin: AdminService;
  wallets: WalletService;
  actors: ActorsAdmin;
  webhooks: WebhookService;
}> = async (app, { admin, wallets, actors, webhooks }) => {
  await app.register(actorAdminRoutes, { actors });
  await app.register(webhookAdminRoutes, { webhooks });

  app.post(
    '/projects',
    {
      schema: {
        ...common,
        summary: 'Create a project (partner)',
        body: CreateProjectBody,
        response: { 201: Project, ...errorResponses(...ADMIN_ERRORS) },
      },
    },
    async (req, reply) => reply.code(201).send(await admin.createProject(req.body)),
  );

  app.delete(
    '/projects/:projectId',
    {
      schema: {
        ...common,
        summary: 'Delete a project: its keys stop working, its wallets stay',
        params: ProjectIdParams,
        response: { 204: Type.Null(), ...errorResponses(...ADMIN_ERRORS, 404) },
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
        summary: 'Create an API key; the secret is shown once',
        params: ProjectIdParams,
        body: CreateApiKeyBody,
        response: { 201: ApiKey, ...errorResponses(...ADMIN_ERRORS, 404) },
      },
    },
    async (req, reply) => reply.code(201).send(await admin.createApiKey(req.params.projectId, req.body.environment)),
  );

  app.post(
    '/api-keys/:keyId/rotate',
    {
      schema: {
        ...common,
        summary: 'Rotate an API key secret: the old secret is refused at once, wallets are kept',
        params: KeyIdParams,
        response: { 200: RotatedKey, ...errorResponses(...ADMIN_ERRORS, 404) },
      },
    },
    async (req) => admin.rotateApiKey(req.params.keyId),
  );

  app.put(
    '/projects/:projectId/ip-allowlist',
    {
      schema: {
        ...common,
        summary: "Replace a project's IP allowlist",
        params: ProjectIdParams,
        body: IpAllowlistBody,
        response: { 200: IpAllowlist, ...errorResponses(...ADMIN_ERRORS, 404) },
      },
    },
    async (req) => admin.setIpAllowlist(req.params.projectId, req.body.cidrs),
  );

  app.post(
    '/wallets/:walletId/claim',
    {
      schema: {
        ...common,
        summary: 'Mark a wallet claimed by its user',
        description:
          'From then on every REST signing route and share migration refuse the wallet (403 WALLET_CLAIMED); wallet.pregen_claimed is queued. A second claim answers 409 WALLET_ALREADY_CLAIMED.',
        params: WalletIdParams,
        body: ClaimWalletBody,
        response: { 200: ClaimedWallet, ...errorResponses(...ADMIN_ERRORS, 404, 409) },
      },
    },
    async (req) => wallets.claim(req.params.walletId, req.body?.userId),
  );

  app.post(
    '/projects/:projectId/pregenerated-wallets',
    {
      schema: {
        ...common,
        summary: 'Pre-generate a wallet; its user share is returned once',
        description:
          'The enclave keeps only the service share. REST signing refuses the wallet (403 WALLET_SHARE_NOT_MIGRATED) until POST /v1/wallets/{walletId}/migrate-share brings the user share in.',
        params: ProjectIdParams,
        body: CreateWalletBody,
        response: { 201: PregeneratedWallet, ...errorResponses(...ADMIN_ERRORS, 404, 409, 503) },
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
        summary: "The enclave's master key: rotation state, key ids, sealed records per key id",
        response: { 200: MasterKeyStatus, ...errorResponses(...ADMIN_ERRORS, 503) },
      },
    },
    async () => admin.masterKey.status(),
  );

  app.post(
    '/enclave/master-key/rotate',
    {
      schema: {
        ...common,
        summary: 'Rotate the master key: prepare (no body), then confirm with the next key id',
        description:
          'Without confirmKeyId (200): the enclave prepares the next key (a file master key gets master.key.next, created by the enclave; a key given from outside needs ENCLAVE_MASTER_KEY_NEXT) and answers its id: back it up, then confirm. With confirmKeyId (202): every record is re-wrapped under that key in the background while the enclave keeps serving; poll GET /admin/v1/enclave/master-key. 409 NEXT_KEY_MISSING or NEXT_KEY_MISMATCH.',
        body: RotateMasterKeyBody,
        response: { 200: MasterKeyStatus, 202: MasterKeyStatus, ...errorResponses(...ADMIN_ERRORS, 409, 503) },
      },
    },
    async (req, reply) => {
      const confirmKeyId = req.body?.confirmKeyId;
      const status = await admin.masterKey.rotate(confirmKeyId);
      return reply.code(confirmKeyId === undefined ? 200 : 202).send(status);
    },
  );
};
