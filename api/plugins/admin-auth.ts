import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { ServiceError } from '../../chains/domain/errors.ts';

const digest = (s: string) => createHash('sha256').update(s).digest();

/**
 * `Authorization: Bearer <ADMIN_TOKEN>` on the enclosing scope, compared in constant time. `onFailure`
 * hears every refusal (the admin listener counts them; its rate limit, which runs first, counts them too).
 */
export const adminAuthPlugin = fp(
  async (app: FastifyInstance, opts: { adminToken: string; onFailure?: () => void }) => {
    const expected = digest(opts.adminToken);
    const failed = opts.onFailure ?? (() => undefined);
    app.addHook('onRequest', (req, _reply, done) => {
      const h = req.headers.authorization;
      if (!h) {
        failed();
        return done(new ServiceError('ADMIN_TOKEN_REQUIRED', 401, 'Authorization: Bearer <admin token> is required'));
      }
      const m = /^bearer +(.+)$/i.exec(h);
      if (!m || !timingSafeEqual(digest(m[1]!), expected)) {
        failed();
        return done(new ServiceError('INVALID_ADMIN_TOKEN', 403, 'admin token is not valid'));
      }
      done();
    });
  },
);
