import os from 'node:os';
import type { FastifyInstance } from 'fastify';
import { type AppDeps, buildAdminApp, buildApp } from './app.ts';
import { loadConfig } from './config.ts';
import { createMetrics } from './plugins/metrics.ts';

/**
 * The dependencies of both listeners' apps without a database, an enclave or a listening socket: enough to register
 * every route. The services are never called while routes are registered; any call throws.
 */
export function unservedAppDeps(): AppDeps {
  const unused = new Proxy(
    {},
    {
      get(_t, prop) {
        throw new Error(`building the apps without services called a service (${String(prop)})`);
      },
    },
  ) as never;
  const config = loadConfig({ DATA_DIR: os.tmpdir(), ADMIN_TOKEN: 'x'.repeat(32), LOG_LEVEL: 'silent' });
  return {
    config,
    adminToken: 'x'.repeat(32),
    metrics: createMetrics(),
    authenticator: unused,
    wallets: unused,
    signing: unused,
    payments: unused,
    yield: unused,
    policyInsights: unused,
    migration: unused,
    admin: unused,
    actors: unused,
    holds: unused,
    webhooks: unused,
    approvals: unused,
    policies: unused,
    idempotency: unused,
    ready: async () => ({}),
  };
}

/**
 * The OpenAPI documents of both listeners, built from the routes' schemas (for `npm run client:generate` and its
 * drift test), on unservedAppDeps.
 */
export async function openApiDocuments(): Promise<{ public: unknown; admin: unknown }> {
  const deps = unservedAppDeps();
  const read = async (app: FastifyInstance) => {
    await app.ready();
    const doc = app.swagger();
    await app.close();
    return doc;
  };
  return { public: await read(await buildApp(deps)), admin: await read(await buildAdminApp(deps)) };
}
