import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import ipaddr from 'ipaddr.js';
import { ServiceError } from '../../chains/domain/errors.ts';
import { PLAN_LIMITS } from '../../chains/domain/projects.ts';
import type { KeyPrincipal } from '../../store/api-keys-repo.ts';
import type { Store } from '../../store/index.ts';

/** The authenticated caller of a `/v1` request. */
export interface Principal {
  keyId: string;
  projectId: string;
  environment: KeyPrincipal['environment'];
  plan: KeyPrincipal['plan'];
  rateLimitPerMinute: number;
}

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal;
  }
}

/** SHA-256 of an API key secret, hex: what the store keeps. */
export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

type Ranges = Array<[ipaddr.IPv4 | ipaddr.IPv6, number]>;
interface Cached {
  principal: Principal;
  ranges: Ranges;
}

const MAX_CACHED = 10_000;

function parseRanges(cidrs: string[]): Ranges {
  return cidrs.map((c) => ipaddr.parseCIDR(c));
}

function allowed(ranges: Ranges, ip: string): boolean {
  if (ranges.length === 0) return true;
  let addr: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    addr = ipaddr.process(ip);
  } catch {
    return false;
  }
  for (const [net, bits] of ranges) {
    if (addr.kind() === net.kind() && addr.match(net, bits)) return true;
  }
  return false;
}

/**
 * Partner authentication by `X-API-Key`: 401 without a key, 403 for a key that is not valid (unknown,
 * rotated away, or its project deleted), 401 from an address outside the project's IP allowlist.
 * Keys are looked up by the SHA-256 of the secret and the stored hash compared in constant time.
 * Verified keys are cached in memory; `invalidate()` drops the cache after any admin change.
 */
export function createAuthenticator(store: Pick<Store, 'apiKeys'>) {
  /**
   * Verified keys by their secret as sent, so that a hit hashes nothing (the SHA-256 was a measured share of a
   * signing request). The lookup does not tell how much of a wrong secret is right: V8 hashes the whole string
   * (seeded at start) and compares characters only with a cached key whose full hash equals the guess's, which a
   * guess cannot aim at without knowing that key. A miss costs the SHA-256 and the store's lookup, whether the
   * key exists or not. The secrets held here are the ones callers keep sending anyway; `invalidate()` (every
   * admin change) drops them all.
   */
  const cache = new Map<string, Cached>();

  function lookup(secret: string): Cached | undefined {
    const hit = cache.get(secret);
    if (hit) return hit;
    const hash = hashSecret(secret);
    const row = store.apiKeys.findPrincipalByHash(hash);
    if (!row) return undefined;
    const stored = Buffer.from(row.secretHash, 'hex');
    const given = Buffer.from(hash, 'hex');
    if (stored.length !== given.length || !timingSafeEqual(stored, given)) return undefined;
    const limit = PLAN_LIMITS[row.plan] ?? row.rateLimitPerMinute ?? 1000;
    const entry: Cached = {
      principal: {
        keyId: row.keyId,
        projectId: row.projectId,
        environment: row.environment,
        plan: row.plan,
        rateLimitPerMinute: limit,
      },
      ranges: parseRanges(row.ipAllowlist),
    };
    if (cache.size >= MAX_CACHED) cache.clear();
    cache.set(secret, entry);
    return entry;
  }

  return {
    authenticate(req: FastifyRequest): Principal {
      const secret = req.headers['x-api-key'];
      if (secret === undefined || secret === '') {
        throw new ServiceError('API_KEY_REQUIRED', 401, 'X-API-Key header is required');
      }
      if (typeof secret !== 'string' || secret.length > 256) {
        throw new ServiceError('INVALID_API_KEY', 403, 'API key is not valid');
      }
      const entry = lookup(secret);
      if (!entry) throw new ServiceError('INVALID_API_KEY', 403, 'API key is not valid');
      if (!allowed(entry.ranges, req.ip)) {
        throw new ServiceError('IP_NOT_ALLOWED', 401, 'caller address is outside the IP allowlist of this project');
      }
      return entry.principal;
    },
    invalidate(): void {
      cache.clear();
    },
  };
}

export type Authenticator = ReturnType<typeof createAuthenticator>;

/** Registers authentication on the enclosing (encapsulated) scope: the `/v1` routes. */
export const authPlugin = fp(async (app: FastifyInstance, opts: { authenticator: Authenticator }) => {
  app.decorateRequest('principal', null as unknown as Principal);
  app.addHook('onRequest', (req, _reply, done) => {
    try {
      req.principal = opts.authenticator.authenticate(req);
      done();
    } catch (err) {
      done(err as Error);
    }
  });
});
