import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Fastify from 'fastify';
import { buildAdminApp, buildApp } from './app.ts';
import { compileAllSerializers, lazySerializerFactory, rememberSerializers } from './lazy-serializers.ts';
import { unservedAppDeps } from './openapi-document.ts';

/** A bare app on the lazy factory with one route answering `answer` under `schema` (its 200 response). */
async function appWith(schema: unknown, answer: unknown) {
  const lazy = lazySerializerFactory();
  const app = Fastify({ schemaController: { compilersFactory: { buildSerializer: lazy.factory } } });
  app.get('/thing', { schema: { response: { 200: schema } } }, async () => answer);
  rememberSerializers(app, lazy.compileAll);
  await app.ready();
  return app;
}

describe('lazySerializerFactory', () => {
  it("answers through the route's response schema, built at the first answer", async () => {
    const app = await appWith(
      { type: 'object', properties: { a: { type: 'string' }, n: { type: 'integer' } } },
      { a: 'x', n: 2, notInSchema: 'dropped' },
    );
    for (let i = 0; i < 2; i++) {
      const r = await app.inject({ method: 'GET', url: '/thing' });
      assert.equal(r.statusCode, 200);
      assert.equal(r.body, '{"a":"x","n":2}');
    }
    // The GET route and the HEAD route Fastify adds for it.
    assert.equal(compileAllSerializers(app), 2);
    await app.close();
  });

  it('a schema fast-json-stringify cannot build starts, and fails at its build: what the next test guards', async () => {
    const app = await appWith({ type: 'object', properties: { a: { $ref: '#/definitions/missing' } } }, { a: 1 });
    assert.throws(() => compileAllSerializers(app));
    await app.close();
  });

  it("every response serializer of both listeners' apps builds", async () => {
    const deps = unservedAppDeps();
    for (const app of [await buildApp(deps), await buildAdminApp(deps)]) {
      await app.ready();
      const built = compileAllSerializers(app);
      assert.ok(built > 20, `${built} serializers`);
      await app.close();
    }
  });
});
