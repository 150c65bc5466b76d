/**
 * The webhook event types this service sends: the one declaration, imported by the schemas, the services and the
 * delivery engine. The spec's `user.created` and `user.external_wallet_verified` belong to a user-facing system
 * this service does not have; they are never sent, so an endpoint may not select them.
 */
export const EVENT_TYPES = [
  'wallet.created',
  'wallet.pregen_claimed',
  'transaction.signed',
  'send.broadcasted',
  'send.confirmed',
  'send.failed',
  'rest.transaction.confirmed',
  'rest.transaction.failed',
  'test.ping',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

/** Spec event types that this service never sends (no user system): refused by name when selected. */
export const UNSENT_EVENT_TYPES = ['user.created', 'user.external_wallet_verified'] as const;

/** How a delivery is signed: the spec's `<timestamp>.<body>`, or Standard Webhooks' `<id>.<timestamp>.<body>`. */
export const SIGNATURE_FORMATS = ['timestamp-body', 'standard-webhooks'] as const;

export type SignatureFormat = (typeof SIGNATURE_FORMATS)[number];
