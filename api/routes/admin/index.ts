import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import {
  ApiKey,
  CreateApiKeyBody,
  CreateProjectBody,
  IpAllowlist,
  IpAllowlistBody,
  KeyIdParams,
  Project,
  ProjectIdParams,
  RotatedKey,
} from '../../schemas/admin.ts';
import { errorResponses } from '../../schemas/common.ts';
import type { AdminService } from '../../services/admin.ts';

const ADMIN_ERRORS = [400, 401, 403] as const;
const common = { tags: ['admin'], security: [{ adminToken: [] }] };

/** `/admin/v1`: the operator's projects, API keys, rotation and IP allowlists. */
export const adminRoutes: FastifyPluginAsyncTypebox<{ admin: AdminService }> = async (app, { admin }) => {
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
};
