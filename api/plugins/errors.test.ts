import assert from 'node:assert/strict';
import { test } from 'node:test';
import Fastify from 'fastify';
import { ActorHostError } from '../../actors/host/errors.ts';
import { CodedError, ServiceError } from '../../chains/domain/errors.ts';
import { EnclaveClientError } from '../../enclave/client.ts';
import { StoreError } from '../../store/errors.ts';
import { errorsPlugin } from './errors.ts';

/** An app whose one route throws `error`, answered by the errors plugin. */
async function answerTo(error: Error) {
  const app = Fastify({ logger: false });
  await app.register(errorsPlugin);
  app.get('/boom', async () => {
    throw error;
  });
  const res = await app.inject({ method: 'GET', url: '/boom' });
  await app.close();
  return {
    status: res.statusCode,
    body: res.json() as Record<string, unknown>,
    retryAfter: res.headers['retry-after'],
  };
}

test("every layer's error is a CodedError, answered in the envelope with its code, status and details", async () => {
  const errors = [
    new ServiceError('WALLET_NOT_FOUND', 404, 'wallet not found', { details: { walletId: 'w1' } }),
    new StoreError('STORE_BUSY', 'database is busy', { httpStatus: 503, transient: true }),
    new ActorHostError('SERVICE_BUSY', 503, 'busy', { transient: true }),
    new EnclaveClientError('ENCLAVE_UNAVAILABLE', 'the enclave is not connected', { httpStatus: 503, transient: true }),
  ];
  for (const error of errors) assert.ok(error instanceof CodedError, error.name);
  const notFound = await answerTo(errors[0]!);
  assert.equal(notFound.status, 404);
  assert.equal(notFound.body['code'], 'WALLET_NOT_FOUND');
  assert.equal(notFound.body['walletId'], 'w1');
  for (const error of errors.slice(1)) {
    const answer = await answerTo(error);
    assert.equal(answer.status, 503, error.name);
    assert.equal(answer.body['code'], (error as CodedError).code);
    assert.equal(answer.retryAfter, '1');
  }
});

test('a code outside the catalogue never reaches the partner: 500 INTERNAL_ERROR, or 503 when transient', async () => {
  const final = await answerTo(
    new EnclaveClientError('NO_KEY', 'no key for w1', { httpStatus: 404, transient: false }),
  );
  assert.equal(final.status, 500);
  assert.equal(final.body['code'], 'INTERNAL_ERROR');
  assert.doesNotMatch(JSON.stringify(final.body), /NO_KEY|w1/);
  const transient = await answerTo(new StoreError('SOMETHING_NEW', 'x', { httpStatus: 503, transient: true }));
  assert.equal(transient.status, 503);
  assert.equal(transient.body['code'], 'SERVICE_UNAVAILABLE');
  assert.equal(transient.retryAfter, '1');
  // A catalogued code with a status the catalogue does not list for it is outside the catalogue too.
  const wrongStatus = await answerTo(new StoreError('STORE_BUSY', 'x', { httpStatus: 409 }));
  assert.equal(wrongStatus.status, 500);
});
