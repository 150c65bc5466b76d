import type { FastifyPluginAsync } from 'fastify';

/** `/healthz`: the process is up. `/readyz`: the database and the enclave answer. */
export const healthRoutes: FastifyPluginAsync<{ ready: () => Promise<Record<string, boolean>> }> = async (
  app,
  { ready },
) => {
  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }));
  app.get('/readyz', { schema: { hide: true } }, async (_req, reply) => {
    const checks = await ready();
    const ok = Object.values(checks).every(Boolean);
    return reply.code(ok ? 200 : 503).send({ status: ok ? 'ready' : 'not_ready', checks });
  });
};
