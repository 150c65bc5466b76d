/**
 * A typed client of the wallet custody service's partner API (`/v1`): every path, body, answer and error envelope
 * as the service's OpenAPI document declares them (`./schema.ts`, generated), over openapi-fetch.
 *
 *   const custody = createCustodyClient({ baseUrl: 'http://127.0.0.1:8080', apiKey: process.env.API_KEY! });
 *   const { data, error } = await custody.POST('/v1/wallets', {
 *     body: { type: 'EVM', userIdentifier: 'user-1', userIdentifierType: 'CUSTOM_ID' },
 *   });
 */
import createClient, { type Client, type Middleware } from 'openapi-fetch';
import type { components, paths } from './schema.ts';

export type { components, paths };

/** The error envelope of every 4xx and 5xx answer: `code` (the service's error catalogue), `message`, `requestId`. */
export type CustodyError = components['schemas']['Error'];

export interface CustodyClientOptions {
  /** Where the service's public listener is, e.g. `https://custody.example.com`. */
  baseUrl: string;
  /** The project's API key (`sk_dev_…` or `sk_live_…`), sent as `X-API-Key`. */
  apiKey: string;
  /** A fetch to use instead of the global one. */
  fetch?: typeof globalThis.fetch;
}

export type CustodyClient = Client<paths>;

/** A client whose every call carries the API key. */
export function createCustodyClient(opts: CustodyClientOptions): CustodyClient {
  const client = createClient<paths>({ baseUrl: opts.baseUrl, ...(opts.fetch ? { fetch: opts.fetch } : {}) });
  const auth: Middleware = {
    onRequest({ request }) {
      request.headers.set('x-api-key', opts.apiKey);
      return request;
    },
  };
  client.use(auth);
  return client;
}
