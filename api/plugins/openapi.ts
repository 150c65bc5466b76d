import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

/**
 * OpenAPI 3 document generated from the routes' TypeBox schemas, served at `/openapi.json`, and a
 * browsable docs page at `/docs`. Must be registered before the routes it describes.
 */
export const openapiPlugin = fp(async (app: FastifyInstance) => {
  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'Wallet custody, signing and transaction tracking service',
        version: '1.0.0',
        description:
          'Partner backends authenticate with `X-API-Key`. Errors are `{code, message, requestId, …context}`. The operator API under /admin/v1 takes `Authorization: Bearer <ADMIN_TOKEN>`.',
      },
      components: {
        securitySchemes: {
          apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' },
          adminToken: { type: 'http', scheme: 'bearer' },
        },
      },
    },
    refResolver: { buildLocalReference: (json, _base, _frag, i) => (json.$id as string) ?? `def-${i}` },
  });
  await app.register(swaggerUi, { routePrefix: '/docs', uiConfig: { docExpansion: 'list' } });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
});
