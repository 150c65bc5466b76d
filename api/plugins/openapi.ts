import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { DEFAULT_ADMIN_HOST, DEFAULT_ADMIN_PORT, DEFAULT_HOST, DEFAULT_PORT } from '../config.ts';
import { EVENTS_TAG, webhooksSection } from '../openapi-webhooks.ts';

const DOCUMENTS = {
  public: {
    title: 'Wallet custody, signing and transaction tracking service',
    description:
      'Partner backends authenticate with `X-API-Key`. Errors are `{code, message, requestId, …context}`. The operator API is served on its own listener (ADMIN_HOST:ADMIN_PORT) and described there.',
    securitySchemes: { apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' } },
    servers: [
      {
        url: `http://${DEFAULT_HOST}:${DEFAULT_PORT}`,
        description:
          'The public listener at its default address (HOST, PORT). A deployment answers at its own address, usually an HTTPS reverse proxy in front of this listener: use that as the base URL.',
      },
    ],
    tags: [
      {
        name: 'wallets',
        description: "Custodial wallets of the project's users on EVM, Cosmos, Solana, Stellar and Sui.",
      },
      { name: 'signing', description: 'Messages, raw bytes, transactions, EIP-712 data and EIP-7702 authorizations.' },
      { name: 'transfers', description: 'Transfers the service builds, signs, broadcasts and follows (EVM, Solana).' },
      { name: 'transactions', description: 'Transaction records: every broadcast, followed to a final status.' },
      {
        name: 'yield',
        description:
          "USDC on the lending protocol (Aave v3) of Ethereum mainnet, Base and Sepolia for EVM wallets: the wallet's position. Deposits and withdrawals are not available yet.",
      },
      { name: 'share migration', description: "Bringing a pre-generated wallet's user share into the service." },
      {
        name: 'permissions',
        description:
          'Signing policies (`/v1/permissions-v2`): guardrails with versions and revisions, validation, activation, the production review, the approval cases and reviews of requests a policy held, spend meters and shadow mode (simulate).',
      },
      EVENTS_TAG,
    ],
    webhooks: true,
  },
  admin: {
    title: 'Wallet custody service: operator API',
    description:
      'The admin listener (ADMIN_HOST:ADMIN_PORT, loopback by default). `/admin/v1` takes `Authorization: Bearer <ADMIN_TOKEN>`; `/metrics`, `/healthz` and `/readyz` are open on this listener. Errors are `{code, message, requestId, …context}`.',
    securitySchemes: { adminToken: { type: 'http', scheme: 'bearer' } },
    servers: [
      {
        url: `http://${DEFAULT_ADMIN_HOST}:${DEFAULT_ADMIN_PORT}`,
        description:
          'The admin listener at its default address (ADMIN_HOST, ADMIN_PORT), loopback only. With ADMIN_HOST on a private interface, or a proxy in front, the operator uses that address instead.',
      },
    ],
    tags: [
      { name: 'admin', description: 'Projects, API keys, allowlists, wallets, the master key and actors.' },
      { name: 'webhooks', description: 'One HTTPS endpoint per API key, its secret and its delivery log.' },
      {
        name: 'approvals',
        description:
          'The people who approve signing requests, their authorization scopes and roles, wallet bindings, and case decisions.',
      },
      { name: 'permissions', description: "API keys' signing-policy switches and production reviews." },
    ],
    webhooks: false,
  },
} as const;

/**
 * OpenAPI 3 document generated from the routes' TypeBox schemas of the listener it is registered on,
 * served at `/openapi.json`, and a browsable docs page at `/docs`. Each listener describes only what it
 * serves. Must be registered before the routes it describes.
 */
export const openapiPlugin = fp(async (app: FastifyInstance, opts: { document?: keyof typeof DOCUMENTS } = {}) => {
  const doc = DOCUMENTS[opts.document ?? 'public'];
  // The events partners receive are described where partners read: the public document's `webhooks`.
  const events = doc.webhooks ? webhooksSection() : undefined;
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: doc.title, version: '1.0.0', description: doc.description },
      servers: [...doc.servers],
      components: { securitySchemes: doc.securitySchemes, ...(events ? { schemas: events.schemas } : {}) },
      ...(events ? { webhooks: events.webhooks } : {}),
      tags: [...doc.tags],
    },
    refResolver: { buildLocalReference: (json, _base, _frag, i) => (json.$id as string) ?? `def-${i}` },
  });
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    uiConfig: { docExpansion: 'list' },
    // The docs page tries requests against its first server: the listener it was loaded from (through whatever
    // proxy), not the default address, which is another machine for a browser elsewhere.
    transformSpecification: (spec) => ({
      ...spec,
      servers: [{ url: '/', description: 'This listener, as this page reached it.' }, ...doc.servers],
    }),
  });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
});
