import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { ServiceError } from '../errors.ts';

const digest = (s: string) => createHash('sha256').update(s).digest();

/** `Authorization: Bearer <ADMIN_TOKEN>` on the enclosing scope, compared in constant time. */
export const adminAuthPlugin = fp(async (app: FastifyInstance, opts: { adminToken: string }) => {
  const expected = digest(opts.adminToken);
  app.addHook('onRequest', (req, _reply, done) => {
    const h = req.headers.authorization;
    if (!h)
      return done(new ServiceError('ADMIN_TOKEN_REQUIRED', 401, 'Authorization: Bearer <admin token> is required'));
    const m = /^bearer +(.+)$/i.exec(h);
    if (!m || !timingSafeEqual(digest(m[1]!), expected)) {
      return done(new ServiceError('INVALID_ADMIN_TOKEN', 403, 'admin token is not valid'));
    }
    done();
  });
});
