import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { ServiceError } from '../../chains/domain/errors.ts';

/**
 * The per-key, per-minute budget shared by every `/v1` request of an API key (the spec's Limits).
 * Registered after authentication, on the same scope, so `req.principal` is known.
 */
export const rateLimitPlugin = fp(async (app: FastifyInstance) => {
  await app.register(rateLimit, {
    timeWindow: 60_000,
    keyGenerator: (req) => req.principal.keyId,
    max: async (req) => req.principal.rateLimitPerMinute,
    cache: 100_000,
    addHeadersOnExceeding: { 'x-ratelimit-limit': true, 'x-ratelimit-remaining': true, 'x-ratelimit-reset': true },
    errorResponseBuilder: (_req, ctx) =>
      new ServiceError(
        'RATE_LIMITED',
        429,
        `rate limit of ${ctx.max} requests per minute exceeded; retry in ${ctx.after}`,
      ),
  });
});
