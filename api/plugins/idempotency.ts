/**
 * The `Idempotency-Key` header of every `/v1` POST (the rules are in api/services/idempotency.ts). Registered in the
 * `/v1` scope before its routes: it gives each POST route the header's schema (at most 256 printable ASCII
 * characters; checked with the body, so a bad key is a 400 naming `headers.idempotency-key`), replays or holds the
 * key before the handler, and stores the answer as it is sent.
 */
import { type Static, Type } from '@sinclair/typebox';
import type { FastifyReply } from 'fastify';
import fp from 'fastify-plugin';
import type { StoredAnswer } from '../../store/idempotency-repo.ts';
import { fingerprintOf, type Idempotency, type IdempotencyClaim } from '../services/idempotency.ts';
import type { Principal } from './auth.ts';

export const IDEMPOTENCY_HEADER = 'idempotency-key';
export const MAX_IDEMPOTENCY_KEY_LENGTH = 256;
/** Printable ASCII: what an HTTP header carries without encoding questions. */
export const IDEMPOTENCY_KEY_PATTERN = '^[\\x20-\\x7E]+$';

/** The header's schema (the same form everywhere), with what it means on the routes it is given to. */
const keyHeaders = (description: string) =>
  Type.Object({
    [IDEMPOTENCY_HEADER]: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: MAX_IDEMPOTENCY_KEY_LENGTH,
        pattern: IDEMPOTENCY_KEY_PATTERN,
        description,
      }),
    ),
  });

export const IdempotencyHeaders = keyHeaders(
  'Names this operation (printable ASCII, at most 256 characters, per project). The same key with the same route, wallet and body within 24 hours answers what the first request answered (header `Idempotent-Replayed: true`) and does nothing again; with another route, wallet or body: 409 IDEMPOTENCY_CONFLICT; while the first is still running, the retry waits for its answer. Refusals that did nothing (validation, 409 WALLET_TRANSACTION_UNRESOLVED, 5xx) are not kept: send the identical request again with the same key.',
);

/** The same header on the routes whose operation keeps its key (yield): required by the route, kept for good. */
export const OperationKeyHeaders = keyHeaders(
  'Required (400 without it). Names the operation for good (printable ASCII, at most 256 characters, per project; not the 24-hour answer cache of other routes): the same key with the same wallet, chain, action and amount answers that operation, and resumes it from `requires_action`; with another one, 409 IDEMPOTENCY_CONFLICT.',
);

/** The headers of an answer a replay sends again. */
const REPLAYED_HEADERS = ['x-transaction-id', 'location'] as const;

declare module 'fastify' {
  interface FastifyRequest {
    /** The key this request holds, until its answer is sent. */
    idempotency: IdempotencyClaim | null;
  }
  interface FastifyContextConfig {
    /**
     * The route keeps its `Idempotency-Key` itself (yield operations: the key names the operation for good, in its own
     * row); the header is checked here as on every POST, but not held nor its answer cached.
     */
    ownIdempotency?: boolean;
  }
}

/**
 * Answers from the payment a key names, when no answer is stored: after a crash between the record and its answer,
 * and always for an auto-retry transfer (its replay answers its current state).
 */
export type ResumePayment = (
  principal: Principal,
  walletId: string,
  transactionId: string,
) => Promise<{ statusCode: number; body: object; headers: Record<string, string> }>;

function isPost(method: string | string[]): boolean {
  return Array.isArray(method) ? method.includes('POST') : method === 'POST';
}

function answerOf(reply: FastifyReply, claim: IdempotencyClaim, payload: unknown) {
  const status = reply.statusCode;
  // Kept: what did something (a 2xx; below 500 once a payment's record exists). Not kept: refusals that did nothing,
  // and the answers of a key that names its operation for good (auto-retry): its replay tells the current state.
  const keep =
    claim.expiresAt !== null && ((status >= 200 && status < 300) || (claim.transactionId !== null && status < 500));
  if (!keep || typeof payload !== 'string') return null;
  const headers: Record<string, string> = {};
  for (const h of REPLAYED_HEADERS) {
    const v = reply.getHeader(h);
    if (typeof v === 'string') headers[h] = v;
  }
  return { statusCode: status, body: payload, headers } satisfies StoredAnswer;
}

export const idempotencyPlugin = fp<{ idempotency: Idempotency; resumePayment: ResumePayment }>(
  async (app, { idempotency, resumePayment }) => {
    app.decorateRequest('idempotency', null);

    app.addHook('onRoute', (route) => {
      if (!isPost(route.method)) return;
      route.schema = {
        ...route.schema,
        headers: route.config?.ownIdempotency ? OperationKeyHeaders : IdempotencyHeaders,
      };
    });

    app.addHook('preHandler', async (req, reply) => {
      if (req.method !== 'POST' || req.routeOptions.config.ownIdempotency) return;
      const key = (req.headers as Static<typeof IdempotencyHeaders>)[IDEMPOTENCY_HEADER];
      if (key === undefined) return;
      const walletId = (req.params as { walletId?: string }).walletId ?? null;
      const begun = await idempotency.begin({
        projectId: req.principal.projectId,
        key,
        operation: req.routeOptions.schema?.operationId ?? req.routeOptions.url ?? req.url,
        walletId,
        fingerprint: fingerprintOf(req.body),
      });
      if (begun.kind === 'replay') {
        const { answer } = begun;
        reply
          .code(answer.statusCode)
          .headers({ ...answer.headers, 'idempotent-replayed': 'true' })
          .type('application/json; charset=utf-8');
        return reply.send(answer.body);
      }
      req.idempotency = begun.claim;
      if (begun.kind === 'resume') {
        const transactionId = begun.claim.transactionId!;
        // Nothing is done again: the answer comes from the payment the key's first request made.
        reply.header('x-transaction-id', transactionId).header('idempotent-replayed', 'true');
        const resumed = await resumePayment(req.principal, walletId!, transactionId);
        return reply.code(resumed.statusCode).headers(resumed.headers).send(resumed.body);
      }
    });

    app.addHook('onSend', async (req, reply, payload) => {
      const claim = req.idempotency;
      if (!claim) return payload;
      req.idempotency = null;
      idempotency.settle(claim, answerOf(reply, claim, payload));
      return payload;
    });
  },
  { name: 'idempotency' },
);
