import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { isCatalogued } from '../../chains/domain/error-catalogue.ts';
import { CodedError } from '../../chains/domain/errors.ts';
import { PATTERN_WORDING } from '../schemas/common.ts';

/** Fastify's own error codes mapped to the service's codes. */
const FASTIFY_CODES: Record<string, { status: number; code: string; message?: string }> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: {
    status: 415,
    code: 'UNSUPPORTED_MEDIA_TYPE',
    message: 'send the body as JSON with Content-Type: application/json',
  },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { status: 400, code: 'INVALID_REQUEST' },
  FST_ERR_CTP_BODY_TOO_LARGE: { status: 413, code: 'PAYLOAD_TOO_LARGE', message: 'request body is too large' },
  FST_ERR_CTP_EMPTY_JSON_BODY: {
    status: 400,
    code: 'INVALID_JSON',
    message: "body is empty but Content-Type is 'application/json'",
  },
  FST_ERR_CTP_INVALID_JSON_BODY: { status: 400, code: 'INVALID_JSON' },
  FST_ERR_BAD_URL: { status: 400, code: 'INVALID_REQUEST' },
  FST_ERR_ASYNC_CONSTRAINT: { status: 400, code: 'INVALID_REQUEST' },
};

function describeValidation(err: FastifyError): { message: string; field?: string } {
  const first = err.validation?.[0];
  if (!first) return { message: err.message };
  const ctx = err.validationContext ?? 'body';
  const base = first.instancePath ? first.instancePath.slice(1).replace(/\//g, '.') : '';
  const params = first.params as Record<string, unknown>;
  let field = base;
  let message: string;
  switch (first.keyword) {
    case 'required':
      field = [base, params['missingProperty']].filter(Boolean).join('.');
      message = `${ctx}.${field} is required`;
      break;
    case 'additionalProperties':
      field = [base, params['additionalProperty']].filter(Boolean).join('.');
      message = `${ctx}.${field} is not an accepted field`;
      break;
    case 'pattern':
      message = `${ctx}.${field} ${PATTERN_WORDING[String(params['pattern'])] ?? `must match ${String(params['pattern'])}`}`;
      break;
    case 'enum':
      message = `${ctx}.${field} must be one of: ${(params['allowedValues'] as unknown[]).join(', ')}`;
      break;
    default:
      message = `${ctx}${field ? `.${field}` : ''} ${first.message ?? 'is invalid'}`;
  }
  return field ? { message, field: `${ctx}.${field}` } : { message };
}

/**
 * One error handler for every route: the spec's envelope `{code, message, …context}` plus `requestId`.
 * Validation failures name the field; a 5xx answers a generic message and logs the cause.
 */
export const errorsPlugin = fp(
  async (
    app: FastifyInstance,
    opts: {
      /** Told of every error answer (its code, '' when the body has none): the metrics count them by route. */
      onErrorAnswer?: (req: FastifyRequest, status: number, code: string) => void;
    } = {},
  ) => {
    app.setErrorHandler((err: FastifyError, req: FastifyRequest, reply: FastifyReply) => {
      if (err.validation) {
        const { message, field } = describeValidation(err);
        return reply
          .code(400)
          .send({ code: 'INVALID_REQUEST', message, ...(field ? { field } : {}), requestId: req.id });
      }
      if (err instanceof CodedError && !isCatalogued(err.code, err.httpStatus)) {
        // A layer's own code that no service code was chosen for (an enclave code such as NO_KEY reaching a route
        // no service maps it on): a defect of ours, answered as the catalogue's generic failure and logged.
        req.log.error({ err }, 'an error with a code outside the catalogue reached the answer');
        if (err.transient) {
          reply.header('retry-after', '1');
          return reply.code(503).send({
            code: 'SERVICE_UNAVAILABLE',
            message: 'the service cannot take the request now; retry',
            requestId: req.id,
          });
        }
        return reply
          .code(500)
          .send({ code: 'INTERNAL_ERROR', message: 'internal error; retry with backoff', requestId: req.id });
      }
      if (err instanceof CodedError) {
        if (err.httpStatus >= 500) {
          if (err.transient) {
            req.log.warn({ code: err.code }, err.message);
            // A transient outage (the enclave restarting, say): tell the partner when to try again.
            if (err.httpStatus === 503) reply.header('retry-after', '1');
          } else {
            req.log.error({ err }, 'request failed');
          }
        }
        const body: Record<string, unknown> = { code: err.code, message: err.message };
        if (err.details) Object.assign(body, err.details);
        body['requestId'] = req.id;
        return reply.code(err.httpStatus).send(body);
      }
      const mapped = err.code ? FASTIFY_CODES[err.code] : undefined;
      if (mapped) {
        return reply
          .code(mapped.status)
          .send({ code: mapped.code, message: mapped.message ?? err.message, requestId: req.id });
      }
      const status = err.statusCode ?? 500;
      if (status === 429) {
        return reply.code(429).send({ code: 'RATE_LIMITED', message: err.message, requestId: req.id });
      }
      if (status >= 400 && status < 500) {
        return reply.code(status).send({ code: 'INVALID_REQUEST', message: err.message, requestId: req.id });
      }
      req.log.error({ err }, 'unhandled error');
      return reply
        .code(500)
        .send({ code: 'INTERNAL_ERROR', message: 'internal error; retry with backoff', requestId: req.id });
    });

    // Every error answer's code must be in the catalogue with that status: one that is not is a defect of ours (the
    // OpenAPI document and the API guide would not tell partners about it), logged where an operator sees it.
    app.addHook('onSend', (req, reply, payload, done) => {
      if (reply.statusCode >= 400 && typeof payload === 'string') {
        const code = /^\{"code":"([A-Za-z0-9_]+)"/.exec(payload)?.[1] ?? '';
        if (!isCatalogued(code, reply.statusCode)) {
          req.log.error({ code, status: reply.statusCode }, 'answered an error code outside the catalogue');
        }
        opts.onErrorAnswer?.(req, reply.statusCode, code);
      }
      done(null, payload);
    });

    app.setNotFoundHandler((req, reply) => {
      reply.code(404).send({
        code: 'ROUTE_NOT_FOUND',
        message: `no route ${req.method} ${req.url.split('?')[0]}`,
        requestId: req.id,
      });
    });
  },
);
