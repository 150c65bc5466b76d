import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyInstance, type FastifyReply, LogController } from 'fastify';
import type { Config } from './config.ts';
import { jsonLimitsError } from './json-limits.ts';
import { adminAuthPlugin } from './plugins/admin-auth.ts';
import { type Authenticator, authPlugin } from './plugins/auth.ts';
import { errorsPlugin } from './plugins/errors.ts';
import { type Metrics, metricsPlugin } from './plugins/metrics.ts';
import { openapiPlugin } from './plugins/openapi.ts';
import { rateLimitPlugin } from './plugins/rate-limit.ts';
import { genRequestId, requestIdPlugin } from './plugins/request-id.ts';
import { adminRoutes } from './routes/admin/index.ts';
import { healthRoutes } from './routes/health.ts';
import { shareMigrationRoutes } from './routes/v1/share-migration.ts';
import { signingRoutes } from './routes/v1/signing.ts';
import { walletRoutes } from './routes/v1/wallets.ts';
import { ErrorSchema } from './schemas/common.ts';
import type { AdminService } from './services/admin.ts';
import type { ShareMigrationService } from './services/share-migration.ts';
import type { SigningService } from './services/signing.ts';
import type { WalletService } from './services/wallets.ts';

export interface AppDeps {
  config: Pick<Config, 'logLevel' | 'trustProxy'>;
  adminToken: string;
  authenticator: Authenticator;
  wallets: WalletService;
  signing: SigningService;
  migration: ShareMigrationService;
  admin: AdminService;
  metrics: Metrics;
  ready: () => Promise<Record<string, boolean>>;
}

/** Longest path parameter the router accepts; the schemas refuse ids above 128 with a 400 naming the field. */
const MAX_PARAM_LENGTH = 256;

/** Largest JSON body any route accepts. */
export const BODY_LIMIT = 1024 * 1024;

/** Builds the HTTP application (never listens: tests use `app.inject` or listen themselves). */
export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const app = Fastify({
    logger: {
      level: deps.config.logLevel,
      redact: ['req.headers["x-api-key"]', 'req.headers.authorization'],
    },
    logController: new LogController({ disableRequestLogging: true }),
    genReqId: genRequestId,
    requestIdHeader: false,
    trustProxy: deps.config.trustProxy,
    bodyLimit: BODY_LIMIT,
    return503OnClosing: true,
    ajv: { customOptions: { removeAdditional: false, coerceTypes: false, allErrors: false } },
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    // URLs the router cannot take apart (bad percent-encoding, overlong ids) get the envelope too.
    frameworkErrors: (err, req, reply) => {
      const tooLong = err.code === 'FST_ERR_MAX_PARAM_LENGTH';
      (reply as FastifyReply)
        .code(tooLong ? 414 : 400)
        .header('x-request-id', req.id)
        .send({
          code: tooLong ? 'URI_TOO_LONG' : 'INVALID_REQUEST',
          message: tooLong
            ? `a path segment is longer than ${MAX_PARAM_LENGTH} characters`
            : 'the URL is not valid (bad percent-encoding)',
          requestId: req.id,
        });
    },
  }).withTypeProvider<TypeBoxTypeProvider>();

  // Only JSON bodies: anything else is a 415, not a string handed to a JSON schema.
  app.removeContentTypeParser('text/plain');
  // JSON nested deeper, or holding more objects and arrays, than any route takes is refused before it is parsed
  // (json-limits.ts); then Fastify's own parser.
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
    const refused = jsonLimitsError(body as string);
    if (refused) done(refused, undefined);
    else parseJson(req, body as string, done);
  });
  app.addSchema(ErrorSchema);

  await app.register(errorsPlugin);
  await app.register(requestIdPlugin);
  await app.register(metricsPlugin, { metrics: deps.metrics });
  await app.register(openapiPlugin);
  await app.register(healthRoutes, { ready: deps.ready });

  await app.register(
    async (v1) => {
      await v1.register(authPlugin, { authenticator: deps.authenticator });
      await v1.register(rateLimitPlugin);
      await v1.register(walletRoutes, { wallets: deps.wallets });
      await v1.register(signingRoutes, { signing: deps.signing });
      await v1.register(shareMigrationRoutes, { migration: deps.migration });
    },
    { prefix: '/v1' },
  );

  await app.register(
    async (admin) => {
      await admin.register(adminAuthPlugin, { adminToken: deps.adminToken });
      await admin.register(adminRoutes, { admin: deps.admin, wallets: deps.wallets });
    },
    { prefix: '/admin/v1' },
  );

  return app;
}
