import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { ServiceError } from '../../chains/domain/errors.ts';

/**
 * The admin listener's budget: requests per minute per client address (the socket's peer: this listener
 * never believes X-Forwarded-For). It is a root `onRequest` hook registered before authentication, so
 * every request counts, refused tokens and unknown routes included: guessing the token costs the same
 * budget as using it.
 */
export const adminRateLimitPlugin = fp(async (app: FastifyInstance, opts: { perMinute: number }) => {
  await app.register(rateLimit, {
    global: false,
    timeWindow: 60_000,
    max: opts.perMinute,
    cache: 10_000,
    errorResponseBuilder: (_req, ctx) =>
      new ServiceError(
        'RATE_LIMITED',
        429,
        `admin rate limit of ${ctx.max} requests per minute per address exceeded; retry in ${ctx.after}`,
      ),
  });
  app.addHook('onRequest', app.rateLimit());
});
