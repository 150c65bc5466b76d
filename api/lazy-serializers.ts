import {
  type SerializerCompiler,
  type SerializerFactory,
  SerializerSelector,
} from '@fastify/fast-json-stringify-compiler';
import type { FastifyInstance } from 'fastify';

/**
 * Fastify's own serializer factory (fast-json-stringify, as Fastify uses it by default), made lazy: a route's response
 * serializer is built the first time that route answers with that status, not when the app starts. Fastify builds
 * every (route, status) serializer at start-up, and each build resolves all the listener's named schemas again: about
 * 1.2 s of CPU at each start of the API, for serializers most processes never use (a CPU profile of the e2e-yield
 * test group: 11.7 s of its 38 s busy in `build`, over its ten service starts). The first answer of a route pays its
 * build once (a few milliseconds). `compileAllSerializers` builds every one at once, for the test that proves they all
 * build.
 */
export function lazySerializerFactory(): { factory: SerializerFactory; compileAll(): number } {
  const builds: Array<() => void> = [];
  const factory: SerializerFactory = (externalSchemas, options) => {
    const compile: SerializerCompiler = SerializerSelector()(externalSchemas, options);
    return (route) => {
      let serialize: ((doc: unknown) => string) | undefined;
      const build = () => {
        serialize ??= compile(route);
        return serialize;
      };
      builds.push(build);
      return (doc: unknown) => (serialize ?? build())(doc);
    };
  };
  return {
    factory,
    compileAll() {
      for (const build of builds) build();
      return builds.length;
    },
  };
}

const compilers = new WeakMap<FastifyInstance, () => number>();

/** Remembers the app's `compileAll`, for compileAllSerializers. */
export function rememberSerializers(app: FastifyInstance, compileAll: () => number): void {
  compilers.set(app, compileAll);
}

/** Builds every response serializer of a ready app now; answers how many there are. */
export function compileAllSerializers(app: FastifyInstance): number {
  const compileAll = compilers.get(app);
  if (!compileAll) throw new Error('the app was not built with lazy serializers');
  return compileAll();
}
