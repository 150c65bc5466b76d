import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest, LogController } from 'fastify';
import type { Config, TrustProxy } from './config.ts';
import { lazySerializerFactory, rememberSerializers } from './lazy-serializers.ts';
import { adminAuthPlugin } from './plugins/admin-auth.ts';
import { adminRateLimitPlugin } from './plugins/admin-rate-limit.ts';
import { type Authenticator, authPlugin } from './plugins/auth.ts';
import { errorsPlugin } from './plugins/errors.ts';
import { connectionCap, httpLimitsPlugin, httpServerOptions, openFileLimit } from './plugins/http-limits.ts';
import { idempotencyPlugin } from './plugins/idempotency.ts';
import { jsonBodyPlugin } from './plugins/json-body.ts';
import { type Metrics, metricsPlugin } from './plugins/metrics.ts';
import { openapiPlugin } from './plugins/openapi.ts';
import { rateLimitPlugin } from './plugins/rate-limit.ts';
import { genRequestId, requestIdPlugin } from './plugins/request-id.ts';
import { adminRoutes } from './routes/admin/index.ts';
import { healthRoutes } from './routes/health.ts';
import { paymentRoutes } from './routes/v1/payments.ts';
import { permissionRoutes } from './routes/v1/permissions.ts';
import { approvalRoutes } from './routes/v1/permissions-approvals.ts';
import { permissionsInsightsRoutes } from './routes/v1/permissions-insights.ts';
import { shareMigrationRoutes } from './routes/v1/share-migration.ts';
import { signingRoutes } from './routes/v1/signing.ts';
import { walletRoutes } from './routes/v1/wallets.ts';
import { yieldRoutes } from './routes/v1/yield.ts';
import { COMPONENTS } from './schemas/components.ts';
import type { ActorsAdmin } from './services/actors-admin.ts';
import type { AdminService } from './services/admin.ts';
import type { ApprovalsService } from './services/approvals.ts';
import type { HoldsAdmin } from './services/holds-admin.ts';
import type { Idempotency } from './services/idempotency.ts';
import type { PaymentService } from './services/payments.ts';
import type { PolicyService } from './services/policies.ts';
import type { PolicyInsights } from './services/policy-insights.ts';
import type { ShareMigrationService } from './services/share-migration.ts';
import type { SigningService } from './services/signing.ts';
import type { WalletService } from './services/wallets.ts';
import type { WebhookService } from './services/webhooks.ts';
import type { YieldService } from './services/yield.ts';

export interface AppDeps {
  config: Pick<Config, 'logLevel' | 'trustProxy' | 'http' | 'adminRateLimitPerMinute'>;
  adminToken: string;
  authenticator: Authenticator;
  wallets: WalletService;
  signing: SigningService;
  payments: PaymentService;
  /** Yield on the lending protocol: positions. */
  yield: YieldService;
  /** Signing policies: usage meters and shadow mode. */
  policyInsights: PolicyInsights;
  migration: ShareMigrationService;
  admin: AdminService;
  actors: ActorsAdmin;
  holds: HoldsAdmin;
  webhooks: WebhookService;
  approvals: ApprovalsService;
  policies: PolicyService;
  idempotency: Idempotency;
  metrics: Metrics;
  ready: () => Promise<Record<string, boolean>>;
}

/** Longest path parameter the router accepts; the schemas refuse ids above 128 with a 400 naming the field. */
const MAX_PARAM_LENGTH = 256;

/** Largest JSON body any route accepts. */
export const BODY_LIMIT = 1024 * 1024;

/**
 * TRUST_PROXY as Fastify takes it. A hop count becomes a function: Fastify reads a bare number as "trust
 * nothing", since a count cannot tell the proxy from a direct caller (docs/operations.md: running behind a proxy).
 */
function trustProxyOption(tp: TrustProxy): false | string[] | ((addr: string, hop: number) => boolean) {
  return typeof tp === 'number' ? (_addr, hop) => hop < tp : tp;
}

/** Open connections of the admin listener (operators, their scripts and a metrics scraper). */
const ADMIN_MAX_CONNECTIONS = 128;

/**
 * What both listeners share: logging, request ids, the error envelope (also for what Node's HTTP layer
 * refuses on its own), timeouts, the connection cap and request metrics.
 */
async function createListenerApp(deps: AppDeps, listener: 'public' | 'admin') {
  const onRefused = (status: number) => deps.metrics.httpRefused.inc({ listener, status: String(status) });
  const serializers = lazySerializerFactory();
  const app = Fastify({
    ...httpServerOptions(deps.config.http, onRefused),
    logger: {
      level: deps.config.logLevel,
      redact: ['req.headers["x-api-key"]', 'req.headers.authorization'],
    },
    logController: new LogController({ disableRequestLogging: true }),
    genReqId: genRequestId,
    requestIdHeader: false,
    // The admin listener is reached directly (loopback by default): it never believes X-Forwarded-For.
    trustProxy: listener === 'public' ? trustProxyOption(deps.config.trustProxy) : false,
    bodyLimit: BODY_LIMIT,
    // A request that arrives while the app closes is refused by httpLimitsPlugin, in the envelope.
    return503OnClosing: false,
    ajv: { customOptions: { removeAdditional: false, coerceTypes: false, allErrors: false } },
    // Response serializers built on first use rather than at start-up (lazy-serializers.ts).
    schemaController: { compilersFactory: { buildSerializer: serializers.factory } },
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
  rememberSerializers(app, serializers.compileAll);

  // Only JSON bodies: anything else is a 415, not a string handed to a JSON schema.
  app.removeContentTypeParser('text/plain');
  // JSON bodies are checked as bytes (not UTF-8 is a 400, never signed as replacement characters) and for their
  // depth and size before they are parsed (json-body.ts, json-limits.ts).
  await app.register(jsonBodyPlugin);
  for (const schema of COMPONENTS[listener]) app.addSchema(schema);

  await app.register(errorsPlugin, {
    onErrorAnswer: (req: FastifyRequest, status: number, code: string) =>
      deps.metrics.httpErrors.inc({
        method: req.method,
        route: req.routeOptions.url ?? 'unmatched',
        status: String(status),
        code,
      }),
  });
  await app.register(requestIdPlugin);
  const configured = deps.config.http.maxConnections;
  const cap = listener === 'public' ? connectionCap(configured) : ADMIN_MAX_CONNECTIONS;
  if (listener === 'public' && cap < configured) {
    app.log.warn(
      `HTTP_MAX_CONNECTIONS=${configured} does not fit the open-file limit (${openFileLimit()}): the public listener ` +
        `takes at most ${cap} connections; raise the limit (LimitNOFILE=, ulimit -n) or lower HTTP_MAX_CONNECTIONS`,
    );
  }
  await app.register(httpLimitsPlugin, {
    maxConnections: cap,
    onRefused,
    onEvicted: () => deps.metrics.httpEvicted.inc({ listener }),
    onDropped: () => deps.metrics.httpDropped.inc({ listener }),
  });
  await app.register(metricsPlugin, { metrics: deps.metrics, serve: listener === 'admin' });
  return app;
}

/**
 * Builds the public listener's application: `/v1`, `/healthz`, `/readyz`, `/openapi.json`, `/docs`
 * (never listens: tests use `app.inject` or listen themselves).
 */
export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const app = await createListenerApp(deps, 'public');
  await app.register(openapiPlugin, { document: 'public' });
  await app.register(healthRoutes, { ready: deps.ready });

  await app.register(
    async (v1) => {
      await v1.register(authPlugin, { authenticator: deps.authenticator });
      await v1.register(rateLimitPlugin);
      // Before the routes: it gives every POST its `Idempotency-Key` header.
      await v1.register(idempotencyPlugin, {
        idempotency: deps.idempotency,
        resumePayment: (principal, walletId, transactionId) => deps.payments.resume(principal, walletId, transactionId),
      });
      await v1.register(walletRoutes, { wallets: deps.wallets });
      await v1.register(signingRoutes, { signing: deps.signing, payments: deps.payments });
      await v1.register(paymentRoutes, { payments: deps.payments });
      await v1.register(yieldRoutes, { yieldService: deps.yield });
      await v1.register(shareMigrationRoutes, { migration: deps.migration });
      await v1.register(approvalRoutes, { approvals: deps.approvals, prefix: '/permissions-v2' });
      await v1.register(permissionRoutes, { policies: deps.policies });
      await v1.register(permissionsInsightsRoutes, { insights: deps.policyInsights });
    },
    { prefix: '/v1' },
  );

  return app;
}

/**
 * Builds the admin listener's application: `/admin/v1` (bearer token), `/metrics`, `/healthz`, `/readyz`
 * and its own `/openapi.json`, behind a per-address rate limit. Every admin route is registered here.
 */
export async function buildAdminApp(deps: AppDeps): Promise<FastifyInstance> {
  const app = await createListenerApp(deps, 'admin');
  await app.register(adminRateLimitPlugin, { perMinute: deps.config.adminRateLimitPerMinute });
  await app.register(openapiPlugin, { document: 'admin' });
  await app.register(healthRoutes, { ready: deps.ready });

  await app.register(
    async (admin) => {
      await admin.register(adminAuthPlugin, {
        adminToken: deps.adminToken,
        onFailure: () => deps.metrics.adminAuthFailures.inc(),
      });
      await admin.register(adminRoutes, {
        admin: deps.admin,
        wallets: deps.wallets,
        actors: deps.actors,
        holds: deps.holds,
        webhooks: deps.webhooks,
        approvals: deps.approvals,
        policies: deps.policies,
        yieldService: deps.yield,
      });
    },
    { prefix: '/admin/v1' },
  );

  return app;
}
