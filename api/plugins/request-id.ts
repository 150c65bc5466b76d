import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

const ACCEPTED = /^[A-Za-z0-9._:-]{1,128}$/;

/** Fastify `genReqId`: the caller's `X-Request-Id` when it is a sane token, else a new UUID. */
export function genRequestId(req: IncomingMessage): string {
  const h = req.headers['x-request-id'];
  return typeof h === 'string' && ACCEPTED.test(h) ? h : randomUUID();
}

/** Echoes the request id on every answer. */
export const requestIdPlugin = fp(async (app: FastifyInstance) => {
  app.addHook('onRequest', (req, reply, done) => {
    reply.header('x-request-id', req.id);
    done();
  });
});
