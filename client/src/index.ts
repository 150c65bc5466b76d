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
import type { components, paths, webhooks } from './schema.ts';

export type { components, paths, webhooks };

/** The JSON bodies of an operation's 4xx and 5xx responses. */
type ErrorBodies<Op> = Op extends { responses: infer R }
  ? {
      [S in keyof R]: `${S & number}` extends `${4 | 5}${string}`
        ? R[S] extends { content: { 'application/json': infer B } }
          ? B
          : never
        : never;
    }[keyof R]
  : never;

/** Every operation of the partner API. */
type Operation = { [P in keyof paths]: paths[P][Exclude<keyof paths[P], 'parameters'>] }[keyof paths];

/**
 * An error answer of any partner route: the envelope `{code, message, requestId, …context}`, with `code` one of the
 * codes some route declares. A call's own `error` is narrower: its `code` is one of that route's codes only, so a
 * `switch (error.code)` with a code the route cannot answer does not compile.
 */
export type CustodyError = ErrorBodies<Operation>;

/** Every error code a partner route can answer (the service README's error table lists their meanings). */
export type CustodyErrorCode = CustodyError['code'];

/**
 * The JSON body of a webhook delivery, any event the service sends: `switch (event.type)` narrows `data` to that
 * event's fields. Verify the `webhook-signature` over the raw body before parsing it (the document's `webhooks` say
 * how).
 */
export type CustodyWebhookEvent = {
  [T in keyof webhooks]: webhooks[T]['post']['requestBody']['content']['application/json'];
}[keyof webhooks];

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
